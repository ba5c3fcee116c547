// The console's pages, rendered on the server from the same functions the JSON API uses. Every value from
// the database passes through the html tag's escaping.
import { lineChart } from './charts.ts';
import type { DeliveryRow } from './deliveries.ts';
import { html, type Html } from './html.ts';
import type { ConnectionOverview, ConnectionSeries } from './overview.ts';
import type { DeadLetter, QueueDepth } from './queues.ts';
import type { VariantRecord } from './record.ts';
import { outcomes, type LogRow } from './synclog.ts';
import { deliveryStates } from './deliveries.ts';

export interface PageContext {
  /** How access works now: shown in the banner and the header. */
  access: 'token' | 'open-demo' | 'closed';
  /** Set when the page follows an action (replay done, login failed...). */
  notice?: string;
  problem?: string;
}

const nav: [string, string][] = [['/', 'Overview'], ['/logs', 'Sync log'], ['/deliveries', 'Deliveries'], ['/dead-letters', 'Dead letters'], ['/variants', 'Variants']];

const when = (d: Date | string | null | undefined) => d ? new Date(d).toISOString().replace('T', ' ').slice(0, 19) : '';
const json = (v: unknown) => v === null || v === undefined ? '' : JSON.stringify(v);
const ago = (d: Date | null) => d ? `${Math.max(0, Math.round((Date.now() - new Date(d).getTime()) / 1000))} s ago` : 'never';

export function layout(pc: PageContext, title: string, here: string, body: Html, opts: { refreshSeconds?: number } = {}): Html {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
${opts.refreshSeconds ? html`<meta http-equiv="refresh" content="${opts.refreshSeconds}">` : ''}
<title>${title} · commerce-sync</title><link rel="stylesheet" href="/assets/console.css"></head>
<body>
<header><span class="brand">commerce-sync</span>
${nav.map(([href, label]) => html`<a href="${href}" class="${href === here ? 'here' : ''}">${label}</a>`)}
${pc.access === 'token' ? html`<form method="post" action="/logout" class="inline"><button>Log out</button></form>` : ''}
</header>
${pc.access === 'open-demo' ? html`<div class="banner" id="demo-banner"><strong>Demo mode:</strong> this console is open without a password to anyone on this machine (localhost), because the built-in sandbox is the account and no OPERATOR_TOKEN is set. Set OPERATOR_TOKEN to protect it.</div>` : ''}
<main>
${pc.notice ? html`<div class="notice" role="status">${pc.notice}</div>` : ''}
${pc.problem ? html`<div class="problem" role="alert">${pc.problem}</div>` : ''}
<h1>${title}</h1>
${body}
</main>
<script src="/assets/console.js"></script>
</body></html>`;
}

export function loginPage(problem?: string, next = '/'): Html {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Log in · commerce-sync</title><link rel="stylesheet" href="/assets/console.css"></head>
<body><header><span class="brand">commerce-sync</span></header><main>
${problem ? html`<div class="problem" role="alert">${problem}</div>` : ''}
<h1>Operator login</h1>
<p>Enter the operator token (OPERATOR_TOKEN). API clients send it as <code>Authorization: Bearer TOKEN</code> instead.</p>
<form method="post" action="/login"><input type="hidden" name="next" value="${next}">
<label>Token <input type="password" name="token" autocomplete="current-password" autofocus></label> <button>Log in</button></form>
</main></body></html>`;
}

export function closedPage(): Html {
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Console closed · commerce-sync</title><link rel="stylesheet" href="/assets/console.css"></head>
<body><main><h1>Operator console closed</h1><p>Set OPERATOR_TOKEN to use the console and the API.</p></main></body></html>`;
}

function queueTable(queues: QueueDepth[]): Html {
  return html`<table id="queues"><thead><tr><th>Queue</th><th class="num">Waiting</th><th class="num">Active</th><th class="num">Failed (retained)</th></tr></thead><tbody>
${queues.map((q) => html`<tr><td>${q.queue.endsWith('-dead') ? html`<a href="/dead-letters?queue=${encodeURIComponent(q.queue)}">${q.queue}</a>` : q.queue}</td><td class="num">${q.queued}</td><td class="num">${q.active}</td><td class="num">${q.failed}</td></tr>`)}
</tbody></table>`;
}

export function overviewPage(pc: PageContext, conns: ConnectionOverview[], series: ConnectionSeries[], queues: QueueDepth[]): Html {
  const cards = conns.map((c) => {
    const s = series.find((x) => x.connection === c.name);
    return html`<section class="card connection" data-connection="${c.name}">
<h2>${c.name} <span class="health-${c.health}">● ${c.health}</span></h2>
<dl class="facts">
<dt>Account</dt><dd>${c.accountName ?? ''} <span class="muted">${c.baseUrl}</span></dd>
<dt>Status</dt><dd>${c.status}${c.statusReason ? html` (${c.statusReason})` : ''}</dd>
<dt>Deliveries</dt><dd>${c.deliveriesPerMinute}/min (last 5 min), ${c.deliveriesLastHour} in the last hour</dd>
<dt>Waiting</dt><dd>${c.queuedDeliveries} deliveries queued, <a href="/deliveries?connection=${encodeURIComponent(c.name)}&amp;state=failed">${c.failedDeliveries} failed</a></dd>
<dt>Sync lag</dt><dd class="lag">${c.lagSeconds} s</dd>
<dt>API budget</dt><dd class="budget">${c.budget ? `${c.budget.remaining} of ${c.budget.limit} left (window resets ${when(c.budget.resetAt)})` : 'not used yet'}</dd>
<dt>Last sweep</dt><dd>${ago(c.lastSweepAt)}${c.lastSweepAt ? `, drift found: ${c.lastDrift}` : ''}${c.lastFullSweepAt ? html` <span class="muted">(full sweep ${ago(c.lastFullSweepAt)})</span>` : ''}</dd>
<dt>Errors</dt><dd><a href="/logs?connection=${encodeURIComponent(c.name)}&amp;outcome=error">${c.errorsLastHour} in the last hour</a></dd>
</dl>
${s ? html`${lineChart('Deliveries per minute', s.throughput, { kind: 'bars' })}${lineChart('Sync log entries per minute', s.syncEvents, { kind: 'bars' })}${lineChart('Sync lag', s.lag, { unit: ' s' })}${lineChart('API budget left', s.budget)}` : ''}
${c.recentErrors.length ? html`<h3>Recent errors</h3><ul>${c.recentErrors.map((e) => html`<li><span class="mono">${when(e.at)}</span> ${e.action} ${e.sku ?? ''}: ${e.error ?? ''}</li>`)}</ul>` : ''}
${c.sweeps.length ? html`<details><summary>Sweeps per resource</summary><table><thead><tr><th>Resource</th><th>Last sweep</th><th>Full sweep</th><th class="num">Drift</th></tr></thead><tbody>
${c.sweeps.map((w) => html`<tr><td>${w.resource}</td><td>${when(w.lastSweepAt)}</td><td>${when(w.lastFullSweepAt)}</td><td class="num">${w.drift}</td></tr>`)}</tbody></table></details>` : ''}
</section>`;
  });
  return layout(pc, 'Overview', '/', html`
${conns.length ? html`<div class="cards">${cards}</div>` : html`<p>No connection yet. Add one with <code>commerce-sync connect</code>, or start without one for the demo sandbox.</p>`}
<h2>Queues</h2>
${queueTable(queues)}
<p class="muted">This page refreshes every 15 seconds.</p>`, { refreshSeconds: 15 });
}

export interface LogPageInput {
  rows: LogRow[];
  connections: string[];
  query: Record<string, string>;
  /** SSE URL carrying the same filters and the id to follow on from, or null for a closed time range. */
  stream: string | null;
  /** The next page of older entries, when there may be one. */
  older: string | null;
}

export function logRowsHtml(rows: LogRow[]): Html {
  return html`${rows.map((r) => html`<tr class="outcome-${r.outcome}" data-id="${r.id}">
<td class="mono at">${when(r.at)}</td><td>${r.connection ?? ''}</td><td>${r.resource ?? ''}</td>
<td>${r.record_id !== null && r.resource === 'variant' && r.connection ? html`<a href="/variants/${encodeURIComponent(r.connection)}/${r.record_id}">${r.record_id}</a>` : r.record_id ?? ''}</td>
<td>${r.sku ?? ''}</td><td>${r.action}</td><td>${r.outcome}</td><td class="mono json">${json(r.before)}</td><td class="mono json">${json(r.after)}</td>
<td class="num">${r.duration_ms ?? ''}</td><td class="mono json">${r.error ?? json(r.detail)}</td></tr>`)}`;
}

export function logPage(pc: PageContext, input: LogPageInput): Html {
  const q = input.query;
  return layout(pc, 'Sync log', '/logs', html`
<form class="filters" method="get" action="/logs" id="log-filters">
<label>Connection <select name="connection"><option value="">all</option>${input.connections.map((c) => html`<option ${q.connection === c ? 'selected' : ''}>${c}</option>`)}</select></label>
<label>Resource <input name="resource" value="${q.resource ?? ''}" size="12"></label>
<label>SKU <input name="sku" value="${q.sku ?? ''}" size="14"></label>
<label>Outcome <select name="outcome"><option value="">all</option>${outcomes.map((o) => html`<option ${q.outcome === o ? 'selected' : ''}>${o}</option>`)}</select></label>
<label>Record id <input name="record" value="${q.record ?? ''}" size="8"></label>
<label>From <input name="from" value="${q.from ?? ''}" placeholder="2026-01-01T00:00Z" size="18"></label>
<label>To <input name="to" value="${q.to ?? ''}" placeholder="(live)" size="18"></label>
<button>Filter</button> <a href="/logs">clear</a>
</form>
<p id="tail-state">${input.stream ? 'connecting to the live tail...' : 'time range closed: not following'}</p>
<table><thead><tr><th>At (UTC)</th><th>Connection</th><th>Resource</th><th>Record</th><th>SKU</th><th>Action</th><th>Outcome</th><th>Before</th><th>After</th><th class="num">ms</th><th>Error / detail</th></tr></thead>
<tbody id="log-rows" data-stream="${input.stream ?? ''}">
${input.rows.length ? logRowsHtml(input.rows) : html`<tr id="log-empty"><td colspan="11" class="muted">No entries match.</td></tr>`}
</tbody></table>
${input.older ? html`<p><a href="${input.older}" id="older">Older entries</a></p>` : ''}`);
}

export function deliveriesPage(pc: PageContext, rows: DeliveryRow[], connections: string[], query: Record<string, string>, older: string | null = null): Html {
  return layout(pc, 'Deliveries', '/deliveries', html`
<form class="filters" method="get" action="/deliveries">
<label>Connection <select name="connection"><option value="">all</option>${connections.map((c) => html`<option ${query.connection === c ? 'selected' : ''}>${c}</option>`)}</select></label>
<label>State <select name="state"><option value="">all</option>${deliveryStates.map((s) => html`<option ${query.state === s ? 'selected' : ''}>${s}</option>`)}</select></label>
<label>Resource <input name="resource" value="${query.resource ?? ''}" size="12"></label>
<button>Filter</button> <a href="/deliveries">clear</a></form>
<table id="deliveries"><thead><tr><th>#</th><th>Received (UTC)</th><th>Connection</th><th>Event</th><th>Object</th><th>State</th><th>Error</th><th>Delivery id</th><th>Sync log</th><th></th></tr></thead><tbody>
${rows.length ? rows.map((d) => html`<tr data-id="${d.id}"><td class="num">${d.id}</td><td class="mono at">${when(d.received_at)}</td><td>${d.connection}</td><td>${d.event ?? ''}</td>
<td>${d.resource === 'variant' && d.object_id !== null ? html`<a href="/variants/${encodeURIComponent(d.connection)}/${d.object_id}">${d.object_id}</a>` : d.object_id ?? ''}</td>
<td class="state">${d.state}</td><td>${d.error ?? ''}</td><td class="mono">${d.delivery_id}</td>
<td>${d.object_id !== null && d.resource ? html`<a href="/logs?connection=${encodeURIComponent(d.connection)}&resource=${encodeURIComponent(d.resource)}&record=${d.object_id}">log</a>` : ''}</td>
<td><form method="post" action="/deliveries/${d.id}/replay" class="inline"><button>Replay</button></form></td></tr>`)
    : html`<tr><td colspan="10" class="muted">No deliveries match.</td></tr>`}
</tbody></table>
${older ? html`<p><a href="${older}" id="older">Older deliveries</a></p>` : ''}`);
}

export function deadLettersPage(pc: PageContext, letters: DeadLetter[], queues: QueueDepth[]): Html {
  return layout(pc, 'Dead letters', '/dead-letters', html`
<p>Jobs that kept failing. Replay sends a job's data back to its live queue.</p>
<table id="dead-letters"><thead><tr><th>Failed at (UTC)</th><th>Queue</th><th>Data</th><th>Last error</th><th class="num">Retries</th><th></th></tr></thead><tbody>
${letters.length ? letters.map((d) => html`<tr data-id="${d.id}"><td class="mono at">${when(d.failedAt)}</td><td>${d.liveQueue}</td><td class="mono json">${json(d.data)}</td>
<td class="mono json">${json(d.error)}</td><td class="num">${d.retries ?? ''}</td>
<td><form method="post" action="/dead-letters/${encodeURIComponent(d.queue)}/${d.id}/replay" class="inline"><button>Replay</button></form></td></tr>`)
    : html`<tr><td colspan="6" class="muted">No dead letters: nothing is stuck.</td></tr>`}
</tbody></table>
<h2>Queues</h2>${queueTable(queues)}`);
}

export function variantSearchPage(pc: PageContext, query: Record<string, string>, found: { connection: string; id: number; sku: string | null; name: string | null }[] | null): Html {
  return layout(pc, 'Variants', '/variants', html`
<form class="filters" method="get" action="/variants">
<label>SKU <input name="sku" value="${query.sku ?? ''}" size="16"></label>
<label>or variant id <input name="id" value="${query.id ?? ''}" size="10"></label>
<button>Find</button></form>
${found === null ? '' : found.length ? html`<table><thead><tr><th>Connection</th><th>Id</th><th>SKU</th><th>Name</th></tr></thead><tbody>
${found.map((v) => html`<tr><td>${v.connection}</td><td><a href="/variants/${encodeURIComponent(v.connection)}/${v.id}">${v.id}</a></td><td>${v.sku ?? ''}</td><td>${v.name ?? ''}</td></tr>`)}</tbody></table>`
    : html`<p>No variant matches.</p>`}`);
}

export function variantPage(pc: PageContext, r: VariantRecord): Html {
  const v = r.variant;
  return layout(pc, `${v.sku ?? `variant ${v.id}`}`, '/variants', html`
<dl class="facts" id="variant-facts">
<dt>Name</dt><dd>${v.name ?? ''}</dd><dt>Connection</dt><dd>${r.connection.name}</dd><dt>Variant id</dt><dd>${v.id}</dd>
<dt>Status</dt><dd>${v.status ?? ''}</dd>
<dt>Stock rules</dt><dd>${v.manageStock ? 'stock managed' : 'stock not managed'}${v.keepSelling ? ', keeps selling when out' : ''}${v.composite ? ', bundle' : ''}${v.maxOnline !== null ? `, max online ${v.maxOnline}` : ''}</dd>
<dt>Updated</dt><dd>${when(v.updatedAt)} <span class="muted">(mirrored ${when(v.syncedAt)})</span></dd>
<dt>Channel quantity</dt><dd id="channel-quantity">${r.channel ? html`<strong>${r.channel.tracked ? r.channel.quantity ?? '' : 'not tracked'}</strong>${r.channel.backorderable ? ' (backorderable)' : ''} <span class="muted">computed ${when(r.channel.computedAt)}</span>` : 'not computed yet'}</dd>
</dl>
<h2>Stock per location</h2>
<table id="stock"><thead><tr><th>Location</th><th class="num">On hand</th><th class="num">Committed</th><th class="num">Available</th><th class="num">Incoming</th><th>Updated</th></tr></thead><tbody>
${r.stock.length ? r.stock.map((s) => html`<tr><td>${s.location ?? `location ${s.locationId}`}</td><td class="num">${s.onHand}</td><td class="num">${s.committed}</td><td class="num">${s.available}</td><td class="num">${s.incoming}</td><td class="mono at">${when(s.updatedAt ?? s.syncedAt)}</td></tr>`)
    : html`<tr><td colspan="6" class="muted">No stock levels mirrored.</td></tr>`}
</tbody></table>
<h2>Stock history</h2>
<table id="stock-history"><thead><tr><th>At (UTC)</th><th>Changes</th><th>Cause</th><th>Delivery</th></tr></thead><tbody>
${r.stockHistory.length ? r.stockHistory.map((h) => html`<tr><td class="mono at">${when(h.at)}</td>
<td>${[...new Set(h.changes.map((c) => c.locationId))].map((id) => html`<div>${locationName(r, id)}: ${h.changes.filter((c) => c.locationId === id)
  .map((c) => c.before === null ? `${c.field.replace('_', ' ')} ${c.after ?? '-'}` : `${c.field.replace('_', ' ')} ${c.before} → ${c.after ?? '-'}`).join(', ')}</div>`)}</td>
<td>${h.cause ?? h.action}</td><td class="mono">${h.deliveryId ?? ''}</td></tr>`)
    : html`<tr><td colspan="4" class="muted">No stock changes logged.</td></tr>`}
</tbody></table>
<h2>Channel quantity history</h2>
<table id="channel-history"><thead><tr><th>At (UTC)</th><th class="num">Before</th><th class="num">After</th><th>Cause</th><th>Delivery</th><th>Detail</th></tr></thead><tbody>
${r.channelHistory.length ? r.channelHistory.map((c) => html`<tr><td class="mono at">${when(c.at)}</td><td class="num">${c.beforeQuantity ?? ''}</td><td class="num">${c.tracked ? c.quantity ?? '' : 'not tracked'}</td><td>${c.cause}</td><td class="mono">${c.deliveryId ?? ''}</td><td class="mono json">${json(c.detail)}</td></tr>`)
    : html`<tr><td colspan="6" class="muted">No changes recorded.</td></tr>`}
</tbody></table>
<h2>Sync log for this variant</h2>
<p><a href="/logs?connection=${encodeURIComponent(r.connection.name)}${v.sku ? `&sku=${encodeURIComponent(v.sku)}` : ''}">follow live</a></p>
<table id="history"><thead><tr><th>At (UTC)</th><th>Connection</th><th>Resource</th><th>Record</th><th>SKU</th><th>Action</th><th>Outcome</th><th>Before</th><th>After</th><th class="num">ms</th><th>Error / detail</th></tr></thead><tbody>
${r.log.length ? logRowsHtml(r.log) : html`<tr><td colspan="11" class="muted">No entries.</td></tr>`}
</tbody></table>`);
}

function locationName(r: VariantRecord, id: number): string {
  return r.stock.find((s) => s.locationId === id)?.location ?? `location ${id}`;
}

export function notFoundPage(pc: PageContext, what: string): Html {
  return layout(pc, 'Not found', '', html`<p>${what}</p>`);
}
