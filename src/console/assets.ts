// The console's one stylesheet and one script, served from memory. Content-Security-Policy allows only
// these ('self'), so no inline script or style can run even if markup slipped through unescaped.
export const css = `
:root { font-family: system-ui, sans-serif; font-size: 14px; color: #1d2330; background: #f6f7f9; }
body { margin: 0; }
header { background: #1d2330; color: #fff; padding: .5rem 1rem; display: flex; gap: 1.5rem; align-items: center; flex-wrap: wrap; }
header a { color: #cfd8ea; text-decoration: none; }
header a.here { color: #fff; font-weight: 600; }
header .brand { font-weight: 700; color: #fff; }
header form { margin-left: auto; }
main { padding: 1rem; }
.banner { background: #fff4ce; border-bottom: 1px solid #e5c861; padding: .4rem 1rem; }
.notice { background: #e3f4e6; border: 1px solid #97cf9f; padding: .4rem .8rem; margin-bottom: 1rem; }
.problem { background: #fde7e7; border: 1px solid #e59a9a; padding: .4rem .8rem; margin-bottom: 1rem; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid #e3e6eb; vertical-align: top; }
th { background: #eef0f4; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.outcome-error td { background: #fdf0f0; }
tr.outcome-warning td { background: #fff8e6; }
tr.fresh td { animation: fresh 2s ease-out; }
@keyframes fresh { from { background: #d8f0ff; } }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); gap: 1rem; }
.card { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: .8rem; }
.card h2 { margin: 0 0 .5rem; font-size: 1.1rem; }
.health-ok { color: #1b7f32; } .health-degraded { color: #b26b00; } .health-down { color: #c0262d; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem .8rem; margin: 0 0 .6rem; }
dl.facts dt { color: #5b6475; }
dl.facts dd { margin: 0; }
form.filters { display: flex; gap: .5rem; flex-wrap: wrap; align-items: end; margin-bottom: .8rem; }
form.filters label { display: flex; flex-direction: column; font-size: .85rem; color: #5b6475; }
form.inline { display: inline; margin: 0; }
.chart { margin: .3rem 0; }
.chart svg { background: #fafbfc; border: 1px solid #e3e6eb; }
.chart polyline { fill: none; stroke: #2f6fde; stroke-width: 1.5; }
.chart polygon.area { fill: #2f6fde22; stroke: none; }
.chart rect { fill: #2f6fde; }
.chart text.empty { fill: #8a93a3; font-size: 12px; }
.chart figcaption { font-size: .8rem; color: #5b6475; }
.muted { color: #8a93a3; }
#tail-state { font-size: .85rem; color: #5b6475; }
code, .mono { font-family: ui-monospace, monospace; font-size: .85rem; }
td.at { white-space: nowrap; }
td.json { max-width: 30rem; overflow-wrap: anywhere; font-size: .75rem; }
`;

// Live tail: follows /api/tail (server-sent events) with the page's filters and prepends rows. Values are
// set with textContent only.
export const js = `
(function () {
  var table = document.getElementById('log-rows');
  var state = document.getElementById('tail-state');
  if (!table || !table.dataset.stream) return;
  var source = new EventSource(table.dataset.stream);
  var max = Number(table.dataset.max || 500);
  function cell(tr, text, cls) { var td = document.createElement('td'); td.textContent = text == null ? '' : String(text); if (cls) td.className = cls; tr.appendChild(td); return td; }
  function json(v) { return v == null ? '' : JSON.stringify(v); }
  source.addEventListener('log', function (ev) {
    var e = JSON.parse(ev.data);
    var tr = document.createElement('tr');
    tr.className = 'fresh outcome-' + e.outcome;
    tr.dataset.id = e.id;
    cell(tr, String(e.at).replace('T', ' ').slice(0, 19), 'mono at');
    cell(tr, e.connection);
    cell(tr, e.resource);
    var rec = cell(tr, '');
    if (e.record_id != null) {
      if (e.resource === 'variant' && e.connection) { var a = document.createElement('a'); a.href = '/variants/' + encodeURIComponent(e.connection) + '/' + e.record_id; a.textContent = String(e.record_id); rec.appendChild(a); }
      else rec.textContent = String(e.record_id);
    }
    cell(tr, e.sku);
    cell(tr, e.action);
    cell(tr, e.outcome);
    cell(tr, json(e.before), 'mono json');
    cell(tr, json(e.after), 'mono json');
    cell(tr, e.duration_ms, 'num');
    cell(tr, e.error || json(e.detail), 'mono json');
    table.insertBefore(tr, table.firstChild);
    var empty = document.getElementById('log-empty'); if (empty) empty.remove();
    while (table.children.length > max) table.removeChild(table.lastChild);
  });
  source.onopen = function () { state.textContent = 'live: following new entries'; };
  source.onerror = function () { state.textContent = 'connection lost, reconnecting...'; };
})();

`;
