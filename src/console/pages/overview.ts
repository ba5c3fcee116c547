// The overview: per connection its health figures and the charts over a chosen range, then the queues.
import { timeChart } from '../charts.ts';
import { html, type Html } from '../html.ts';
import type { AlertView } from '../../db/alerts.ts';
import { documentsLag, STOCK_LAG, type ConnectionOverview } from '../overview.ts';
import type { QueueDepth } from '../../queue/depths.ts';
import { ranges, type ConnectionSeries, type RangeName } from '../series.ts';
import { ago, enc, layout, queueTable, when, type PageContext } from './layout.ts';

function rangePicker(current: RangeName): Html {
  return html`<nav class="ranges" aria-label="Chart range">Charts over the ${(Object.keys(ranges) as RangeName[]).map((r) =>
    r === current
      ? html`<a href="/?range=${r}" class="here" aria-current="true">${ranges[r].label}</a>`
      : html`<a href="/?range=${r}">${ranges[r].label}</a>`,
  )}</nav>`;
}

function charts(c: ConnectionOverview, s: ConnectionSeries): Html {
  const w = s.window;
  const id = (x: string) => `chart-${c.name}-${x}`;
  return html`<div class="charts">
${timeChart('Deliveries per minute', s.throughput, w, { kind: 'bars', id: id('deliveries') })}
${timeChart(`${STOCK_LAG} (oldest change of stock not yet mirrored)`, s.lag, w, { unit: ' s', id: id('lag') })}
${timeChart(`API budget used per rate window (limit ${c.budget?.limit ?? '?'})`, s.budgetUsed, w, { id: id('budget') })}
${timeChart('Queue depth (jobs waiting)', s.queuedJobs, w, { id: id('queues') })}
${timeChart('Drift per sweep (changes an event should have announced, none did)', s.drift, w, { kind: 'dots', id: id('drift') })}
${timeChart('Sync log entries per minute', s.syncEvents, w, { kind: 'bars', id: id('log') })}
</div>`;
}

function notified(a: AlertView): string {
  if (a.notify_error) return `not sent yet: ${a.notify_error}`;
  if (a.resolved_at) return a.notified_resolved_at ? `resolution sent ${when(a.notified_resolved_at)}` : 'resolution not sent yet';
  return a.notified_open_at ? `sent ${when(a.notified_open_at)}` : 'not sent yet';
}

/** Open alerts first, at the top of the overview; those resolved in the last day behind a disclosure. */
export function alertsSection(open: AlertView[], recent: AlertView[]): Html {
  const resolved = recent.filter((a) => a.resolved_at);
  const row = (a: AlertView) =>
    html`<tr class="alert-${a.severity}" data-alert="${a.key}"><td><span class="severity-${a.severity}">${a.severity}</span></td><td>${a.message}</td><td class="mono">${when(a.opened_at)}</td>${a.resolved_at ? html`<td class="mono">${when(a.resolved_at)}</td>` : ''}<td class="muted">${notified(a)}</td></tr>`;
  return html`<section class="alerts" aria-labelledby="alerts-title">
<h2 id="alerts-title">Alerts</h2>
${
  open.length
    ? html`<table><caption>Open alerts: conditions a person must act on (they resolve by themselves once the cause is gone)</caption><thead><tr><th scope="col">Severity</th><th scope="col">What is wrong, and what fixes it</th><th scope="col">Since (UTC)</th><th scope="col">Notice</th></tr></thead><tbody>${open.map(row)}</tbody></table>`
    : html`<p class="notice">No open alerts.</p>`
}
${
  resolved.length
    ? html`<details><summary>Resolved in the last 24 hours (${resolved.length})</summary><table><caption>Resolved alerts</caption><thead><tr><th scope="col">Severity</th><th scope="col">What was wrong</th><th scope="col">Opened (UTC)</th><th scope="col">Resolved (UTC)</th><th scope="col">Notice</th></tr></thead><tbody>${resolved.map(row)}</tbody></table></details>`
    : ''
}
</section>`;
}

export function overviewPage(
  pc: PageContext,
  conns: ConnectionOverview[],
  series: Map<number, ConnectionSeries>,
  queues: QueueDepth[],
  range: RangeName,
  alerts: { open: AlertView[]; recent: AlertView[] } = { open: [], recent: [] },
): Html {
  const cards = conns.map((c) => {
    const s = series.get(c.id);
    const name = enc(c.name);
    return html`<section class="card connection" data-connection="${c.name}" aria-labelledby="conn-${c.id}">
<h2 id="conn-${c.id}"><a href="/connections/${name}">${c.name}</a> <span class="health-${c.health}">● ${c.health}</span></h2>
<div class="summary"><dl class="facts">
<dt>Account</dt><dd>${c.accountName ?? ''} <span class="muted">${c.baseUrl}</span></dd>
<dt>Status</dt><dd>${c.status}${c.statusReason ? html` (${c.statusReason})` : ''}</dd>
<dt>Deliveries</dt><dd>${c.deliveriesPerMinute}/min (last 5 min), ${c.deliveriesLastHour} in the last hour</dd>
<dt>Waiting</dt><dd>${c.queuedDeliveries} deliveries queued, <a href="/deliveries?connection=${name}&amp;state=failed">${c.failedDeliveries} failed</a></dd>
<dt>${STOCK_LAG}</dt><dd class="lag stock-lag">${c.stockLagSeconds} s <span class="muted">(the oldest change of stock not yet in the mirror: what channels are told)</span></dd>
<dt>${documentsLag(c.documentsWindowSeconds)}</dt><dd class="documents-lag">${c.documentsLagSeconds} s</dd>
${c.destinations.map((d) => html`<dt>Channel ${d.channel} lag</dt><dd class="channel-lag">${d.lagSeconds} s <span class="muted">(${d.state}${d.behind ? `: ${d.behind} not acknowledged` : ''} by ${d.host})</span></dd>`)}
<dt>API budget</dt><dd class="budget">${c.budget ? `${c.budget.remaining} of ${c.budget.limit} left (window resets ${when(c.budget.resetAt)} UTC)` : 'not used yet'}</dd>
<dt>Last sweep</dt><dd>${ago(c.lastSweepAt)}${c.lastSweepAt ? `, drift found: ${c.lastDrift}` : ''}${c.lastFullSweepAt ? html` <span class="muted">(full sweep ${ago(c.lastFullSweepAt)})</span>` : ''}</dd>
<dt>Errors</dt><dd><a href="/logs?connection=${name}&amp;outcome=error">${c.errorsLastHour} in the last hour</a></dd>
<dt>Look at</dt><dd><a href="/variants?connection=${name}&amp;filter=out">out of stock</a> · <a href="/orders?connection=${name}&amp;imported=1h">orders imported in the last hour</a> · <a href="/operations?connection=${name}&amp;state=failed">failed operations</a></dd>
</dl>
<div>${c.recentErrors.length ? html`<details><summary>Latest errors (${c.recentErrors.length})</summary><ul>${c.recentErrors.map((e) => html`<li><span class="mono">${when(e.at)}</span> ${e.action} ${e.sku ?? ''}: ${e.error ?? ''}</li>`)}</ul></details>` : ''}
${
  c.sweeps.length
    ? html`<details><summary>Sweeps per resource</summary><table><thead><tr><th scope="col">Resource</th><th scope="col">Last sweep</th><th scope="col">Full sweep</th><th scope="col" class="num">Drift</th></tr></thead><tbody>
${c.sweeps.map((w) => html`<tr><td>${w.resource}</td><td>${when(w.lastSweepAt)}</td><td>${when(w.lastFullSweepAt)}</td><td class="num">${w.drift}</td></tr>`)}</tbody></table></details>`
    : ''
}</div></div>
${s ? charts(c, s) : ''}
</section>`;
  });
  return layout(
    pc,
    'Overview',
    '/',
    html`
${alertsSection(alerts.open, alerts.recent)}
${
  conns.length
    ? html`${rangePicker(range)}<div class="cards">${cards}</div>`
    : html`<p>No connection yet. <a href="/connections">Connect an account</a>, or start without one for the demo sandbox.</p>`
}
<h2>Queues</h2>
${queueTable(queues)}
<p class="muted">Times are UTC.</p>`,
    { refreshSeconds: 30 },
  );
}
