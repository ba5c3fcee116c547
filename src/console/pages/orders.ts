// Orders: the list (imported ones with their channel order id) and an order's page with its lines,
// fulfilments, returns, the operations that touched it, its history, and a form to ship it.
import { html, type Html } from '../html.ts';
import { channelOrderPath, type ChannelOrderSummary } from '../channel-orders.ts';
import { importedWithin, orderAllowsRetry, shipChoice, type OrderRecord, type OrderRow } from '../orders.ts';
import { channelOrderRows } from './channel-orders.ts';
import { LOG_COLUMNS, logHead, logRowsHtml } from './history.ts';
import { enc, layout, offers, pager, select, serviceWhen, when, type PageContext } from './layout.ts';
import { operationRows, OPERATION_HEAD } from './operations.ts';

const subs = (o: OrderRow) =>
  Object.entries(o.subStatuses)
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ');

export interface OrderIndexInput {
  connections: string[];
  connection: string | null;
  statuses: string[];
  query: Record<string, string>;
  rows: OrderRow[];
  total: number;
  page: number;
  pageSize: number;
  /** The connection's channels by name (links to a channel order's page). */
  channelIds: Map<string, number>;
  /** Channel orders whose id is the search (held, imported or told of). */
  channelOrders: ChannelOrderSummary[];
}

/** "webshop W-1", linked to the channel order's page when the channel is there. */
const channelOrderCell = (channel: string, channelOrderId: string | null, id: number | undefined) =>
  channelOrderId === null
    ? channel
    : id === undefined
      ? `${channel} ${channelOrderId}`
      : html`${channel} <a href="${channelOrderPath(id, channelOrderId)}" class="channel-order">${channelOrderId}</a>`;

export function orderIndexPage(pc: PageContext, input: OrderIndexInput): Html {
  const q = input.query;
  const pages = Math.max(1, Math.ceil(input.total / input.pageSize));
  return layout(
    pc,
    'Orders',
    '/orders',
    html`
<form class="filters" method="get" action="/orders">
<label>Connection <select name="connection">${input.connections.map((c) => html`<option ${input.connection === c ? 'selected' : ''}>${c}</option>`)}</select></label>
<label>Imported <select name="imported"><option value="">any order</option>${Object.entries(importedWithin).map(([k, label]) => html`<option value="${k}" ${q.imported === k ? 'selected' : ''}>${label}</option>`)}</select></label>
${select('Status', 'status', input.statuses, q.status, 'any')}
<label>Order number or channel order id <input name="q" value="${q.q ?? ''}" size="16" type="search"></label>
<button>Show</button> <a href="/orders">clear</a></form>
${
  input.connection === null
    ? html`<p>No connection yet: <a href="/connections">connect an account</a>.</p>`
    : html`
${
  input.channelOrders.length
    ? html`<section aria-labelledby="channel-orders-found"><h2 id="channel-orders-found">Channel orders with the id ${q.q}</h2>
${channelOrderRows('channel-orders', `Channel orders with the id ${q.q ?? ''}`, input.connection, input.channelOrders)}</section>
<h2>Orders at the service</h2>`
    : ''
}
<p role="status">${input.total} order${input.total === 1 ? '' : 's'}${q.imported ? ` ${importedWithin[q.imported as keyof typeof importedWithin] ?? ''}` : ''} on ${input.connection}.</p>
<table id="orders"><thead><tr><th scope="col">Order</th><th scope="col">Status</th><th scope="col">Packed, shipped, invoiced, paid</th><th scope="col">Company</th><th scope="col" class="num">Lines</th><th scope="col" class="num">Total</th><th scope="col">Channel order</th><th scope="col">Created (UTC)</th><th scope="col">Imported (UTC)</th></tr></thead><tbody>
${
  input.rows.length
    ? input.rows.map(
        (
          o,
        ) => html`<tr data-id="${o.id}"><td><a href="/orders/${enc(input.connection!)}/${o.id}">${o.orderNumber ?? `order ${o.id}`}</a></td><td>${o.status ?? ''}</td><td>${subs(o)}</td>
<td>${o.company ?? ''}</td><td class="num">${o.lines}</td><td class="num">${o.total ?? ''} ${o.currency ?? ''}</td><td>${o.channel ? channelOrderCell(o.channel, o.channelOrderId, input.channelIds.get(o.channel)) : ''}</td><td class="mono at">${when(o.createdAt)}</td><td class="mono at">${when(o.importedAt)}</td></tr>`,
      )
    : html`<tr><td colspan="9" class="muted">No order matches.</td></tr>`
}
</tbody></table>
${pager('/orders', q, input.page, pages)}`
}`,
  );
}

export function orderPage(pc: PageContext, r: OrderRecord): Html {
  const o = r.order;
  const base = `/orders/${enc(r.connection.name)}/${o.id}`;
  const ship = shipChoice(r);
  return layout(
    pc,
    `Order ${o.orderNumber ?? o.id}`,
    '/orders',
    html`
<dl class="facts" id="order-facts">
<dt>Connection</dt><dd>${r.connection.name}</dd><dt>Order id</dt><dd>${o.id}</dd>
<dt>Status</dt><dd>${o.status ?? ''}${subs(o) ? ` (${subs(o)})` : ''}</dd>
<dt>Company</dt><dd>${o.company ?? ''}</dd><dt>Issued</dt><dd>${serviceWhen(o.issuedAt)}</dd><dt>Total</dt><dd>${o.total ?? ''} ${o.currency ?? ''}</dd>
<dt>Channel order</dt><dd>${
      o.channel
        ? html`${o.channel} ${
            r.channelId !== null && o.channelOrderId !== null
              ? html`<a href="${channelOrderPath(r.channelId, o.channelOrderId)}" id="channel-order-link"><strong>${o.channelOrderId}</strong></a>`
              : html`<strong>${o.channelOrderId}</strong>`
          }, imported ${when(o.importedAt)} UTC${r.channelId !== null ? html` <span class="muted">(its timeline: what the channel was told)</span>` : ''}`
        : 'not imported through commerce-sync'
    }</dd>
<dt>Mirrored</dt><dd>updated ${when(o.updatedAt)} UTC</dd>
</dl>
<h2>Lines</h2>
<table id="order-lines"><thead><tr><th scope="col">Line</th><th scope="col">SKU</th><th scope="col" class="num">Quantity</th><th scope="col" class="num">Price</th></tr></thead><tbody>
${
  r.lines.length
    ? r.lines.map(
        (l) =>
          html`<tr><td>${l.id}</td><td>${l.variantId !== null ? html`<a href="/variants/${enc(r.connection.name)}/${l.variantId}">${l.sku ?? l.variantId}</a>` : (l.label ?? 'free-form line')}</td><td class="num">${l.quantity ?? ''}</td><td class="num">${l.price ?? ''}</td></tr>`,
      )
    : html`<tr><td colspan="4" class="muted">No lines mirrored yet.</td></tr>`
}
</tbody></table>
<h2>Ship</h2>
${
  !ship.offer
    ? html`<p id="ship-state">${ship.why}</p>`
    : !offers(pc, '/orders/:connection/:id/ship')
      ? html`<p id="ship-state">Shipping needs the operator role.</p>`
      : html`
<form method="post" action="${base}/ship" class="filters" id="ship-form">
${
  ship.packed.length
    ? html`<label>What <select name="fulfillment_id">${ship.unpacked ? html`<option value="">the lines not yet packed</option>` : ''}${ship.packed.map(
        (f) =>
          html`<option value="${f.id}">packed fulfilment ${f.id}: ${f.lines.map((l) => `${l.sku ?? '?'} × ${l.quantity ?? '?'}`).join(', ')}</option>`,
      )}</select></label>`
    : ''
}
<label>Tracking company <input name="tracking_company" size="14"></label>
<label>Tracking number <input name="tracking_number" size="18"></label>
<button>${ship.packed.length ? 'Ship' : 'Ship everything not yet shipped'}</button></form>
<p class="muted">Queues a ship operation (${ship.packed.length ? 'mark the packed fulfilment chosen fulfilled, or pack and fulfil the lines not yet packed' : 'pack and fulfil the lines not yet packed'}) sent through the rate-budgeted client; it shows under Operations below.</p>`
}
<h2>Fulfilments</h2>
<table id="fulfillments"><thead><tr><th scope="col">Fulfilment</th><th scope="col">Status</th><th scope="col">Packed</th><th scope="col">Tracking</th><th scope="col">Lines</th></tr></thead><tbody>
${
  r.fulfillments.length
    ? r.fulfillments.map(
        (f) =>
          html`<tr><td>${f.id}</td><td>${f.status ?? ''}</td><td class="mono at">${serviceWhen(f.packedAt)}</td><td>${f.tracking ?? ''}</td><td>${f.lines.map((l) => `${l.sku ?? '?'} × ${l.quantity ?? '?'}`).join(', ')}</td></tr>`,
      )
    : html`<tr><td colspan="5" class="muted">No fulfilments.</td></tr>`
}
</tbody></table>
<h2>Returns</h2>
<table id="returns"><thead><tr><th scope="col">Return</th><th scope="col">Status</th><th scope="col">Credit note</th><th scope="col">Lines</th></tr></thead><tbody>
${
  r.returns.length
    ? r.returns.map(
        (x) =>
          html`<tr><td>${x.id}</td><td>${x.status ?? ''}</td><td>${x.creditNote ?? ''}</td><td>${x.lines.map((l) => `line ${l.orderLineItemId ?? '?'} × ${l.quantity ?? '?'}`).join(', ')}</td></tr>`,
      )
    : html`<tr><td colspan="4" class="muted">No returns.</td></tr>`
}
</tbody></table>
<h2>Operations on this order</h2>
<table id="order-operations">${OPERATION_HEAD}<tbody>
${
  r.operations.length
    ? operationRows(
        pc,
        r.operations.map((op) => ({ ...op, connection: r.connection.name })),
        (op) => orderAllowsRetry({ status: o.status, ...o.subStatuses }, op.kind),
      )
    : html`<tr><td colspan="8" class="muted">No operation touched this order.</td></tr>`
}
</tbody></table>
<h2>History</h2>
<table id="order-history" class="log">${logHead}<tbody>
${r.log.length ? logRowsHtml(r.log, pc.traceUrl) : html`<tr><td colspan="${LOG_COLUMNS}" class="muted">No entries.</td></tr>`}
</tbody></table>`,
  );
}
