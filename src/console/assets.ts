// The console's one stylesheet and one script, served from memory. Content-Security-Policy allows only
// these ('self'), so no inline script or style can run even if markup slipped through unescaped.
export const css = `
:root { font-family: system-ui, sans-serif; font-size: 14px; color: #1d2330; background: #f6f7f9; }
body { margin: 0; }
header { background: #1d2330; color: #fff; padding: .5rem 1rem; display: flex; gap: 1.5rem; align-items: center; flex-wrap: wrap; }
header a { color: #dfe6f3; text-decoration: none; }
header nav { display: flex; gap: 1.1rem; flex-wrap: wrap; }
header a.here { color: #fff; font-weight: 600; }
header .brand { font-weight: 700; color: #fff; }
header form.inline { margin-left: auto; }
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
.cards { display: grid; grid-template-columns: 1fr; gap: 1rem; }
.card .summary { display: grid; grid-template-columns: repeat(auto-fit, minmax(380px, 1fr)); gap: 0 2rem; align-items: start; }
.card { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: .8rem; }
.card h2 { margin: 0 0 .5rem; font-size: 1.1rem; }
.health-ok { color: #1b7f32; } .health-degraded { color: #b26b00; } .health-down { color: #c0262d; }
.alerts { margin-bottom: 1rem; } .severity-critical { color: #c0262d; font-weight: 600; } .severity-warning { color: #b26b00; font-weight: 600; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem .8rem; margin: 0 0 .6rem; }
dl.facts dt { color: #5b6475; }
dl.facts dd { margin: 0; }
form.filters { display: flex; gap: .5rem; flex-wrap: wrap; align-items: end; margin-bottom: .8rem; }
form.filters label { display: flex; flex-direction: column; font-size: .85rem; color: #5b6475; }
form.inline { display: inline; margin: 0; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(380px, 1fr)); gap: .6rem 1rem; margin-top: .6rem; }
.chart { margin: 0; }
.chart svg { width: 100%; height: auto; background: #fff; border: 1px solid #e3e6eb; }
.chart figcaption { font-weight: 600; font-size: .9rem; margin-bottom: .2rem; }
.chart .chart-summary { font-size: .8rem; color: #4d5566; margin: .1rem 0 0; }
.chart line.grid { stroke: #eceef2; }
.chart line.axis, .chart line.tick { stroke: #8a93a3; }
.chart text.axis { fill: #4d5566; font-size: 11px; }
.chart polyline { fill: none; stroke: #2f6fde; stroke-width: 1.5; }
.chart circle { fill: #2f6fde; }
.chart rect { fill: #2f6fde; }
.chart rect:hover, .chart circle:hover { fill: #c0262d; }
.chart text.empty { fill: #5b6475; font-size: 13px; }
nav.ranges { margin: 0 0 .8rem; display: flex; gap: .8rem; align-items: baseline; }
nav.ranges a.here { font-weight: 700; color: #1d2330; text-decoration: none; border-bottom: 2px solid #2f6fde; }
nav.pager { display: flex; gap: 1rem; margin: .6rem 0; }
.tag { font-size: .75rem; background: #eef0f4; border-radius: 3px; padding: 0 .3rem; color: #3b4252; }
td.compact, .compact { font-size: .85rem; }
.wide { overflow-x: auto; }
#channel-quantities { width: auto; }
#channel-quantities th[scope="row"] { width: 11rem; }
#channel-quantities td { min-width: 10rem; max-width: 22rem; }
#channel-quantities tr.quantity td { font-size: 1.15rem; background: #f3f7ff; }
#channel-quantities tr.quantity th { background: #e6edfb; }
.hold-ref { font-size: .85rem; }
.channel-grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(26rem, 1fr)); gap: .8rem; margin-bottom: .8rem; }
.card.channel h3 { margin: 0 0 .4rem; }
.card.channel h4 { margin: .8rem 0 .3rem; font-size: .95rem; }
.destination-state { margin: 0 0 .4rem; padding: .3rem .5rem; border-radius: 4px; }
.destination-state.state-caught-up { background: #e3f4e6; }
.destination-state.state-behind { background: #eef3fd; }
.destination-state.state-paused { background: #fff4ce; }
.destination-state.state-failing { background: #fde7e7; }
table.posts { font-size: .85rem; }
table.posts td.mono { overflow-wrap: anywhere; min-width: 8rem; }
form.pause { display: flex; gap: .4rem; align-items: center; flex-wrap: wrap; }
table.diff { width: auto; margin: .1rem 0; font-size: .8rem; }
table.diff td, table.diff th { padding: .05rem .4rem; }
table.diff th[scope="row"] { background: none; font-weight: normal; color: #4d5566; }
details.raw summary { cursor: pointer; font-size: .8rem; color: #3b5bab; }
details.raw pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: .75rem; max-width: 40rem; }
pre.audit-value { margin: 0; max-width: 26rem; max-height: 12rem; overflow: auto; font-size: .75rem; white-space: pre-wrap; word-break: break-word; }
ol.timeline { list-style: none; margin: 0 0 1rem; padding: 0; background: #fff; border: 1px solid #dde1e7; border-radius: 6px; }
ol.timeline li { display: grid; grid-template-columns: 11rem minmax(16rem, 1fr) minmax(14rem, 22rem); gap: .3rem 1rem; padding: .45rem .8rem .45rem 1.6rem; border-bottom: 1px solid #e3e6eb; position: relative; }
ol.timeline li:last-child { border-bottom: 0; }
ol.timeline li::before { content: ''; position: absolute; left: .6rem; top: .8rem; width: .5rem; height: .5rem; border-radius: 50%; background: #2f6fde; }
ol.timeline li[data-kind^="hold."]::before { background: #b26b00; }
ol.timeline li[data-kind="order.voided"]::before, ol.timeline li[data-kind="order.import_failed"]::before { background: #c0262d; }
ol.timeline .at { white-space: nowrap; color: #4d5566; }
ol.timeline .detail { color: #3b4252; margin-top: .1rem; }
.told { font-size: .85rem; overflow-wrap: anywhere; }
.told.waiting { color: #8a5300; font-weight: 600; }
.tracking .carrier { font-weight: 600; }
td.sentence { min-width: 16rem; }
td.detail { min-width: 15rem; }
.connect form { background: #fff; border: 1px solid #dde1e7; padding: .6rem; border-radius: 6px; margin-bottom: .6rem; }
.connect h3 { flex-basis: 100%; margin: 0 0 .2rem; font-size: .95rem; }
.skip { position: absolute; left: -999px; top: 0; background: #fff; padding: .4rem; z-index: 2; }
.skip:focus { left: .5rem; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, summary:focus-visible, main:focus-visible { outline: 3px solid #f0a500; outline-offset: 2px; }
a { color: #1f4fb0; }
.muted { color: #5b6475; }
#tail-state { font-size: .85rem; color: #5b6475; }
code, .mono { font-family: ui-monospace, monospace; font-size: .85rem; }
td.at { white-space: nowrap; }
td.json { max-width: 30rem; overflow-wrap: anywhere; font-size: .75rem; }
`;

// Auto-refresh (pages with the #auto-refresh checkbox): reloads while it stays ticked and no form field
// has the focus, so an operator typing a filter is not interrupted.
const refreshJs = `
(function () {
  var box = document.getElementById('auto-refresh');
  if (!box) return;
  var seconds = Number(box.dataset.seconds || 30);
  setInterval(function () {
    var f = document.activeElement;
    var typing = f && (f.tagName === 'INPUT' && f !== box || f.tagName === 'SELECT' || f.tagName === 'TEXTAREA');
    if (box.checked && !typing && document.visibilityState === 'visible') location.reload();
  }, seconds * 1000);
})();
`;

// Live tail: follows /api/tail (server-sent events) with the page's filters and prepends rows. Values are
// set with textContent only.
const tailJs = `
(function () {
  var table = document.getElementById('log-rows');
  var state = document.getElementById('tail-state');
  if (!table || !table.dataset.stream) return;
  var source = new EventSource(table.dataset.stream);
  var max = Number(table.dataset.max || 500);
  function cell(tr, text, cls) { var td = document.createElement('td'); td.textContent = text == null ? '' : String(text); if (cls) td.className = cls; tr.appendChild(td); return td; }
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
      if ((e.resource === 'variant' || e.resource === 'order' || e.resource === 'operation') && e.connection) { var a = document.createElement('a'); a.href = '/' + e.resource + 's/' + (e.resource === 'operation' ? '' : encodeURIComponent(e.connection) + '/') + e.record_id; a.textContent = String(e.record_id); rec.appendChild(a); }
      else rec.textContent = String(e.record_id);
    }
    cell(tr, e.sku);
    cell(tr, e.action, 'mono');
    cell(tr, e.outcome);
    cell(tr, e.summary, 'sentence');
    cell(tr, e.duration_ms, 'num');
    var detail = cell(tr, '', 'detail');
    var box = document.createElement('details'); box.className = 'raw';
    var sum = document.createElement('summary'); sum.textContent = 'raw JSON'; box.appendChild(sum);
    var pre = document.createElement('pre'); pre.textContent = JSON.stringify({ before: e.before, after: e.after, detail: e.detail, job_id: e.job_id, delivery_id: e.delivery_id, request_id: e.request_id }); box.appendChild(pre);
    detail.appendChild(box);
    table.insertBefore(tr, table.firstChild);
    var empty = document.getElementById('log-empty'); if (empty) empty.remove();
    while (table.children.length > max) table.removeChild(table.lastChild);
  });
  source.onopen = function () { state.textContent = 'live: following new entries'; };
  source.onerror = function () { state.textContent = 'connection lost, reconnecting...'; };
})();

`;

export const js = refreshJs + tailJs;

/** The console's icon (two arrows in a circle: sync), at /favicon.ico, where browsers look for one unasked. */
export const favicon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1d2330"/><g fill="none" stroke="#6fa0ff" stroke-width="3" stroke-linecap="round"><path d="M8 15a8 8 0 0 1 14-5"/><path d="M24 17a8 8 0 0 1-14 5"/></g><path d="M23 5v6h-6zM9 27v-6h6z" fill="#6fa0ff"/></svg>`;
