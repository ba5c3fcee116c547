// Variants: the index (search, filters, sort, pages) and the record page ("why does this SKU show 183").
import { html, type Html } from '../html.ts';
import type { ChannelQuantityView, VariantRecord, WhyView } from '../record.ts';
import { variantFilters, variantSorts, type VariantListRow } from '../variants.ts';
import { LOG_COLUMNS, changeTable, logHead, logRowsHtml } from './history.ts';
import { bufferText, enc, json, layout, pager, when, withQuery, type PageContext } from './layout.ts';

export interface VariantIndexInput {
  connections: string[];
  connection: string | null;
  /** The connection's channels, and the one whose quantities the index shows (null: none yet). */
  channels: string[];
  channel: string | null;
  query: Record<string, string>;
  rows: VariantListRow[];
  total: number;
  page: number;
  pageSize: number;
}

const quantityText = (r: VariantListRow) => (r.tracked === null ? 'not computed' : r.tracked ? (r.quantity ?? '') : 'not tracked');

export function variantIndexPage(pc: PageContext, input: VariantIndexInput): Html {
  const q = input.query;
  const sortLink = (key: string, label: string) => {
    const active = (q.sort || 'sku') === key;
    const desc = active && q.dir !== 'desc';
    return html`<a href="${withQuery('/variants', q, { sort: key, dir: desc ? 'desc' : undefined, page: undefined })}">${label}${active ? (q.dir === 'desc' ? ' ↓' : ' ↑') : ''}</a>`;
  };
  const ariaSort = (key: string) => ((q.sort || 'sku') === key ? (q.dir === 'desc' ? 'descending' : 'ascending') : 'none');
  const pages = Math.max(1, Math.ceil(input.total / input.pageSize));
  return layout(
    pc,
    'Variants',
    '/variants',
    html`
<form class="filters" method="get" action="/variants" id="variant-filters">
<label>Connection <select name="connection">${input.connections.map((c) => html`<option ${input.connection === c ? 'selected' : ''}>${c}</option>`)}</select></label>
${input.channels.length > 1 ? html`<label>Channel <select name="channel">${input.channels.map((c) => html`<option ${input.channel === c ? 'selected' : ''}>${c}</option>`)}</select></label>` : ''}
<label>SKU or name <input name="q" value="${q.q ?? ''}" size="18" type="search"></label>
<label>Show <select name="filter"><option value="">all variants</option>${Object.entries(variantFilters).map(([k, label]) => html`<option value="${k}" ${q.filter === k ? 'selected' : ''}>${label}</option>`)}</select></label>
<label>Low stock at or below <input name="threshold" value="${q.threshold ?? '5'}" size="5" inputmode="decimal"></label>
<label>Sort by <select name="sort">${Object.entries(variantSorts).map(([k, label]) => html`<option value="${k}" ${(q.sort || 'sku') === k ? 'selected' : ''}>${label}</option>`)}</select></label>
<label>Order <select name="dir"><option value="">ascending</option><option value="desc" ${q.dir === 'desc' ? 'selected' : ''}>descending</option></select></label>
<button>Show</button> <a href="/variants">clear</a>
</form>
${
  input.connection === null
    ? html`<p>No connection yet: <a href="/connections">connect an account</a>.</p>`
    : html`
<p id="variant-count" role="status">${input.total} variant${input.total === 1 ? '' : 's'}${q.filter ? ` ${variantFilters[q.filter as keyof typeof variantFilters] ?? ''}` : ''}${q.q ? ` matching "${q.q}"` : ''} on ${input.connection}${input.channel ? html`, quantities of channel <strong id="index-channel">${input.channel}</strong>${input.channels.length > 1 ? ` (${input.channels.length} channels: pick another above)` : ''}` : ''}.</p>
<table id="variants"><thead><tr><th scope="col" aria-sort="${ariaSort('sku')}">${sortLink('sku', 'SKU')}</th><th scope="col">Name</th>
<th scope="col" class="num" aria-sort="${ariaSort('quantity')}">${sortLink('quantity', input.channel && input.channels.length > 1 ? `Quantity in ${input.channel}` : 'Channel quantity')}</th><th scope="col">Available per location</th>
<th scope="col" aria-sort="${ariaSort('changed')}">${sortLink('changed', 'Last change (UTC)')}</th><th scope="col">Cause</th></tr></thead><tbody>
${
  input.rows.length
    ? input.rows.map(
        (r) => html`<tr data-sku="${r.sku ?? ''}">
<td><a href="/variants/${enc(input.connection!)}/${r.id}">${r.sku ?? `variant ${r.id}`}</a>${r.composite ? html` <span class="tag">bundle</span>` : ''}${r.backorderable ? html` <span class="tag">backorderable</span>` : ''}</td>
<td>${r.name ?? ''}</td><td class="num quantity">${quantityText(r)}</td>
<td class="compact">${r.available.map((a, i) => html`${i ? ' · ' : ''}<span>${a.location} <b>${a.quantity}</b></span>`)}</td>
<td class="mono at">${when(r.lastChangeAt)}</td><td>${r.lastChangeCause ? `${r.lastChangeCause.replace(/-/g, ' ')}${r.lastChangeBefore !== null ? `, was ${r.lastChangeBefore}` : ', first computed'}` : ''}</td></tr>`,
      )
    : html`<tr><td colspan="6" class="muted">No variant matches.</td></tr>`
}
</tbody></table>
${pager('/variants', q, input.page, pages)}`
}`,
  );
}

export function variantPage(pc: PageContext, r: VariantRecord): Html {
  const v = r.variant;
  const locationName = (id: number) => r.stock.find((s) => s.locationId === id)?.location ?? `location ${id}`;
  return layout(
    pc,
    `${v.sku ?? `variant ${v.id}`}`,
    '/variants',
    html`
<dl class="facts" id="variant-facts">
<dt>Name</dt><dd>${v.name ?? ''}</dd><dt>Connection</dt><dd>${r.connection.name}</dd><dt>Variant id</dt><dd>${v.id}</dd>
<dt>Status</dt><dd>${v.status ?? ''}</dd>
<dt>Stock rules</dt><dd>${v.manageStock ? 'stock managed' : 'stock not managed'}${v.keepSelling ? ', keeps selling when out' : ''}${v.composite ? ', bundle' : ''}${v.maxOnline !== null ? `, max online ${v.maxOnline}` : ''}</dd>
<dt>Updated</dt><dd>${when(v.updatedAt)} UTC <span class="muted">(mirrored ${when(v.syncedAt)})</span></dd>
<dt>Channel quantity</dt><dd id="channel-quantity">${r.channel ? html`<strong>${r.channel.tracked ? (r.channel.quantity ?? '') : 'not tracked'}</strong>${r.channel.backorderable ? ' (backorderable)' : ''}${r.channels.length > 1 ? html` in ${mainChannel(r)} <span class="muted">(${r.channels.length} channels: <a href="#per-channel">each with why</a>)</span>` : ''} <span class="muted">computed ${when(r.channel.computedAt)}</span>` : 'not computed yet'}</dd>
</dl>
<h2>Stock per location</h2>
<table id="stock"><thead><tr><th scope="col">Location</th><th scope="col" class="num">On hand</th><th scope="col" class="num">Committed</th><th scope="col" class="num">Available</th><th scope="col" class="num">Incoming</th><th scope="col">Updated</th></tr></thead><tbody>
${
  r.stock.length
    ? r.stock.map(
        (s) =>
          html`<tr><td>${s.location ?? `location ${s.locationId}`}</td><td class="num">${s.onHand}</td><td class="num">${s.committed}</td><td class="num">${s.available}</td><td class="num">${s.incoming}</td><td class="mono at">${when(s.updatedAt ?? s.syncedAt)}</td></tr>`,
      )
    : html`<tr><td colspan="6" class="muted">No stock levels mirrored.</td></tr>`
}
</tbody></table>
${perChannel(r)}
<h2 id="channel-history-title">Channel quantity history</h2>
${historyPicker(r)}
<p class="muted">Why ${r.historyChannel ?? (r.channels.length > 1 ? 'each channel' : 'the channel')} shows ${r.historyChannel ? (r.channels.find((c) => c.channel === r.historyChannel)?.quantity ?? 'its quantity') : r.channels.length > 1 ? 'its quantity' : (r.channel?.quantity ?? 'its quantity')}: each change, newest first, with what caused it.</p>
<table id="channel-history" aria-labelledby="channel-history-title"><thead><tr><th scope="col">At (UTC)</th><th scope="col">Channel</th><th scope="col" class="num">Before</th><th scope="col" class="num">After</th><th scope="col">Cause</th><th scope="col">Delivery</th><th scope="col">Detail</th></tr></thead><tbody>
${
  r.channelHistory.length
    ? r.channelHistory.map(
        (
          c,
        ) => html`<tr data-channel="${c.channel}"><td class="mono at">${when(c.at)}</td><td class="channel">${c.channel}</td><td class="num">${c.beforeQuantity ?? ''}</td><td class="num">${c.tracked ? (c.quantity ?? '') : 'not tracked'}</td><td>${c.cause.replace(/-/g, ' ')}</td><td class="mono">${c.deliveryId ?? ''}</td>
<td>${changeSentence(c.beforeQuantity, c.tracked ? c.quantity : null, c.cause, c.detail, locationName)}${c.detail ? html`<details class="raw"><summary>raw JSON</summary><pre>${json(c.detail)}</pre></details>` : ''}</td></tr>`,
      )
    : html`<tr><td colspan="7" class="muted">No changes recorded.</td></tr>`
}
</tbody></table>
<h2>Stock history</h2>
<table id="stock-history"><thead><tr><th scope="col">At (UTC)</th><th scope="col">Changes</th><th scope="col">Cause</th><th scope="col">Delivery</th></tr></thead><tbody>
${
  r.stockHistory.length
    ? r.stockHistory.map(
        (h) => html`<tr><td class="mono at">${when(h.at)}</td>
<td>${[...new Set(h.changes.map((c) => c.locationId))].map(
          (id) =>
            html`<div>${locationName(id)}: ${h.changes
              .filter((c) => c.locationId === id)
              .map((c) =>
                c.before === null
                  ? `${c.field.replace('_', ' ')} ${c.after ?? '-'}`
                  : `${c.field.replace('_', ' ')} ${c.before} → ${c.after ?? '-'}`,
              )
              .join(', ')}</div>`,
        )}</td>
<td>${(h.cause ?? h.action).replace(/-/g, ' ')}</td><td class="mono">${h.deliveryId ?? ''}</td></tr>`,
      )
    : html`<tr><td colspan="4" class="muted">No stock changes logged.</td></tr>`
}
</tbody></table>
<h2>Sync log for this variant</h2>
<p><a href="/logs?connection=${enc(r.connection.name)}${v.sku ? `&sku=${enc(v.sku)}` : ''}">follow live</a></p>
<table id="history" class="log">${logHead}<tbody>
${r.log.length ? logRowsHtml(r.log, pc.traceUrl) : html`<tr><td colspan="${LOG_COLUMNS}" class="muted">No entries.</td></tr>`}
</tbody></table>`,
  );
}

/** "Went from 9.5 to 8.5 (delivery).", plus what changed underneath (stock per location, the why). */
function changeSentence(
  before: string | null,
  after: string | null,
  cause: string,
  detail: unknown,
  locationName: (id: number) => string,
): Html {
  const d = (detail && typeof detail === 'object' ? detail : {}) as Record<string, unknown>;
  const hold = d.hold as { channel?: string; channel_order_id?: string; event?: string } | undefined;
  const why = hold?.channel_order_id
    ? `hold: ${hold.channel} order ${hold.channel_order_id} ${hold.event ?? ''}`.trim()
    : cause.replace(/-/g, ' ');
  return html`<span>${before === null ? `Set to ${after ?? 'not tracked'}` : `Went from ${before} to ${after ?? 'not tracked'}`} (${why}).</span>
${changeTable(snapshotFields(d.before), snapshotFields(d.after), locationName)}`;
}

/** A stored snapshot (channel_quantities.stock) as flat fields a before/after table can compare. */
function snapshotFields(v: unknown): Record<string, unknown> | null {
  if (!v || typeof v !== 'object') return null;
  const { why, ...rest } = v as Record<string, unknown> & { why?: WhyView };
  if (!why || typeof why !== 'object') return rest;
  return {
    ...rest,
    counted: why.counted,
    held: why.held,
    buffer: why.buffer,
    capped: why.capped,
    override: why.override,
    holds: (why.holds ?? []).map((h) => `${h.channel} ${h.channel_order_id}: ${decimal(h.quantity)}`),
  };
}

/** "2.000" -> "2": quantities as the rest of the console writes them. */
const decimal = (v: string | null | undefined) => (v === null || v === undefined ? '' : v.includes('.') ? v.replace(/\.?0+$/, '') : v);

/** The channel the facts' quantity is of. */
const mainChannel = (r: VariantRecord) => (r.channels.find((c) => c.channel === 'default') ?? r.channels[0])?.channel ?? '';

function historyPicker(r: VariantRecord): Html {
  if (r.channels.length < 2) return html``;
  const base = `/variants/${enc(r.connection.name)}/${r.variant.id}`;
  const link = (name: string | null, label: string) =>
    r.historyChannel === name
      ? html`<a href="${name ? `${base}?history=${enc(name)}` : base}#channel-history-title" class="here" aria-current="true">${label}</a>`
      : html`<a href="${name ? `${base}?history=${enc(name)}` : base}#channel-history-title">${label}</a>`;
  return html`<nav class="ranges" aria-label="History of channel">Show ${link(null, 'every channel')} ${r.channels.map((c) => link(c.channel, c.channel))}</nav>`;
}

const overrideText: Record<string, string> = {
  exclude: 'left out: not listed',
  zero: 'held at zero',
  fixed: 'fixed quantity',
  buffer: 'own buffer',
};

/** Whether the stock, holds and buffer entered the quantity (an exclude, zero or fixed override decides alone). */
const counted = (c: ChannelQuantityView) => c.why !== null && c.why.counted !== null;

/**
 * Each channel's quantity side by side, as the computation goes: what its locations make available, less what
 * holds hold (naming them), less its buffer, capped by max online, or what an override says instead.
 */
function perChannel(r: VariantRecord): Html {
  if (!r.channels.length) return html``;
  const cols = r.channels;
  const cell = (cls: string, c: ChannelQuantityView, body: Html | string) =>
    html`<td class="${cls}" data-channel="${c.channel}">${body}</td>`;
  const none = html`<span class="muted">—</span>`;
  const row = (cls: string, label: string, body: (c: ChannelQuantityView) => Html | string) =>
    html`<tr class="${cls}"><th scope="row">${label}</th>${cols.map((c) => cell(cls, c, c.why || cls === 'quantity' || cls === 'locations' ? body(c) : none))}</tr>`;
  const holdsOf = (w: WhyView) =>
    (w.holds ?? []).map(
      (h) =>
        html`<div class="hold-ref"><a href="/channels?connection=${enc(r.connection.name)}#hold-${h.hold_id}">${h.channel} order ${h.channel_order_id}</a>: ${decimal(h.quantity)}${h.variant_id !== r.variant.id ? ` of variant ${h.variant_id}` : ''} <span class="muted">until ${when(h.expires_at)}</span></div>`,
    );
  return html`<h2 id="per-channel">Quantity per channel</h2>
<p class="muted">What each channel is offered, and why: the available stock of the locations it counts, less what is held for channel orders (every channel's), less its safety buffer, capped at max online; an override of the SKU comes first.</p>
<div class="wide" tabindex="0" role="region" aria-labelledby="per-channel"><table id="channel-quantities"><caption class="sr">Quantity of ${r.variant.sku ?? `variant ${r.variant.id}`} per channel</caption>
<thead><tr><th scope="col"><span class="sr">Step</span></th>${cols.map((c) => html`<th scope="col" data-channel="${c.channel}">${c.channel}</th>`)}</tr></thead><tbody>
${row('locations', 'Locations counted', (c) => (c.rules.locations ? c.rules.locations.map((l) => l.name).join(', ') : 'all'))}
${row('counted', 'Available there', (c) =>
  counted(c)
    ? html`${c.why!.counted}${c.why!.components?.length ? html`<div class="muted compact">bundle: ${c.why!.components.map((p) => html`<div>variant ${p.variant_id}: (${p.counted}${p.held !== '0' ? ` − ${p.held} held` : ''}) ÷ ${p.per} = ${p.makes}</div>`)}</div>` : ''}`
    : none,
)}
${row('held', 'Held for channel orders', (c) => (counted(c) ? html`${c.why!.held === '0' ? '0' : `− ${c.why!.held}`} ${holdsOf(c.why!)}` : none))}
${row('buffer', 'Safety buffer', (c) =>
  counted(c)
    ? html`${c.why!.buffer === '0' ? '0' : `− ${c.why!.buffer}`} <div class="muted compact">${c.override?.mode === 'buffer' ? `own: ${bufferText(c.override.bufferUnits ?? '0', c.override.bufferPercent)}` : bufferText(c.rules.bufferUnits, c.rules.bufferPercent)}</div>`
    : none,
)}
${row('cap', 'Max online', (c) => (c.why!.capped !== null ? `capped at ${c.why!.capped}` : c.rules.capMaxOnline ? (r.variant.maxOnline !== null ? `caps at ${r.variant.maxOnline}` : 'none set') : 'does not cap'))}
${row('override', 'Override of the SKU', (c) =>
  c.override
    ? `${overrideText[c.override.mode] ?? c.override.mode}${c.override.mode === 'fixed' ? ` ${c.override.quantity ?? ''}` : ''}`
    : 'none',
)}
${row('quantity', 'Quantity', (c) =>
  c.tracked === null
    ? html`<span class="muted">not computed yet</span>`
    : html`<strong>${c.tracked ? (c.quantity ?? '') : 'not tracked'}</strong>${c.listed === false ? ' (not listed)' : ''}${c.backorderable ? ' (backorderable)' : ''}`,
)}
${row('computed', 'Computed (UTC)', (c) => html`<span class="mono">${when(c.computedAt)}</span>`)}
</tbody></table></div>`;
}
