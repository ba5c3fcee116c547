// Variants: the index (search, filters, sort, pages) and the record page ("why does this SKU show 183").
import { html, type Html } from '../html.ts';
import type { VariantRecord } from '../record.ts';
import { variantFilters, variantSorts, type VariantListRow } from '../variants.ts';
import { LOG_COLUMNS, changeTable, logHead, logRowsHtml } from './history.ts';
import { enc, json, layout, pager, when, withQuery, type PageContext } from './layout.ts';

export interface VariantIndexInput {
  connections: string[];
  connection: string | null;
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
<p id="variant-count" role="status">${input.total} variant${input.total === 1 ? '' : 's'}${q.filter ? ` ${variantFilters[q.filter as keyof typeof variantFilters] ?? ''}` : ''}${q.q ? ` matching "${q.q}"` : ''} on ${input.connection}.</p>
<table id="variants"><thead><tr><th scope="col" aria-sort="${ariaSort('sku')}">${sortLink('sku', 'SKU')}</th><th scope="col">Name</th>
<th scope="col" class="num" aria-sort="${ariaSort('quantity')}">${sortLink('quantity', 'Channel quantity')}</th><th scope="col">Available per location</th>
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
<dt>Channel quantity</dt><dd id="channel-quantity">${r.channel ? html`<strong>${r.channel.tracked ? (r.channel.quantity ?? '') : 'not tracked'}</strong>${r.channel.backorderable ? ' (backorderable)' : ''} <span class="muted">computed ${when(r.channel.computedAt)}</span>` : 'not computed yet'}</dd>
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
<h2>Channel quantity history</h2>
<p class="muted">Why the channel shows ${r.channel?.quantity ?? 'its quantity'}: each change, newest first, with what caused it.</p>
<table id="channel-history"><thead><tr><th scope="col">At (UTC)</th><th scope="col" class="num">Before</th><th scope="col" class="num">After</th><th scope="col">Cause</th><th scope="col">Delivery</th><th scope="col">Detail</th></tr></thead><tbody>
${
  r.channelHistory.length
    ? r.channelHistory.map(
        (
          c,
        ) => html`<tr><td class="mono at">${when(c.at)}</td><td class="num">${c.beforeQuantity ?? ''}</td><td class="num">${c.tracked ? (c.quantity ?? '') : 'not tracked'}</td><td>${c.cause.replace(/-/g, ' ')}</td><td class="mono">${c.deliveryId ?? ''}</td>
<td>${changeSentence(c.beforeQuantity, c.tracked ? c.quantity : null, c.cause, c.detail, locationName)}${c.detail ? html`<details class="raw"><summary>raw JSON</summary><pre>${json(c.detail)}</pre></details>` : ''}</td></tr>`,
      )
    : html`<tr><td colspan="6" class="muted">No changes recorded.</td></tr>`
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
${r.log.length ? logRowsHtml(r.log) : html`<tr><td colspan="${LOG_COLUMNS}" class="muted">No entries.</td></tr>`}
</tbody></table>`,
  );
}

/** "Went from 9.5 to 8.5 (delivery).", plus what changed underneath (stock per location). */
function changeSentence(
  before: string | null,
  after: string | null,
  cause: string,
  detail: unknown,
  locationName: (id: number) => string,
): Html {
  const d = (detail && typeof detail === 'object' ? detail : {}) as Record<string, unknown>;
  return html`<span>${before === null ? `Set to ${after ?? 'not tracked'}` : `Went from ${before} to ${after ?? 'not tracked'}`} (${cause.replace(/-/g, ' ')}).</span>
${changeTable(d.before, d.after, locationName)}`;
}
