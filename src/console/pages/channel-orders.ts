// A channel order's page: what it is (channel, order at the service, hold, destination), Cancel when its state
// allows it, the timeline from hold to import, packing, each shipment with its tracking, invoice, payment,
// returns and void, each with the POST that told the channel; its shipments, returns, hold and the operations that
// touched it. Also the lists that lead to it: a channel's recent orders (Channels page), the matches of a search
// by channel order id (Orders page).
import type { TimelineEntry, Told, Tracking } from '../../channels/order-timeline.ts';
import { channelOrderPath, type ChannelOrderPage, type ChannelOrderSummary } from '../channel-orders.ts';
import { orderAllowsRetry } from '../orders.ts';
import { html, type Html } from '../html.ts';
import { enc, layout, offers, serviceWhen, when, type PageContext } from './layout.ts';
import { OPERATION_HEAD, operationRows } from './operations.ts';

/** A link only to a web page: a tracking URL comes from the service and could be any scheme. */
const webUrl = (url: string | null) => (url && /^https?:\/\/[^\s]+$/i.test(url) ? url : null);

export function trackingHtml(t: Tracking | null): Html {
  if (!t || (!t.company && !t.number && !t.url)) return html`<span class="muted">no tracking</span>`;
  const url = webUrl(t.url);
  const number = t.number ?? (url ? 'tracking page' : null);
  return html`<span class="tracking">${t.company ? html`<span class="carrier">${t.company}</span> ` : ''}${
    number
      ? url
        ? html`<a class="tracking-number" href="${url}" rel="noopener noreferrer">${number}</a>`
        : html`<span class="tracking-number mono">${number}</span>`
      : ''
  }${t.url && !url ? html` <span class="muted mono">${t.url}</span>` : ''}</span>`;
}

function toldHtml(t: Told): Html {
  switch (t.state) {
    case 'posted':
      return html`<span class="told posted">POST <span class="mono">${t.webhook_id}</span><br><span class="mono">${when(t.at)}</span> UTC · ${t.status === null ? 'no answer' : `HTTP ${t.status}`}</span>`;
    case 'acknowledged':
      return html`<span class="told posted">acknowledged <span class="muted">(the record of its POST is gone)</span></span>`;
    case 'waiting':
      return html`<span class="told waiting">not sent yet</span>`;
    case 'feed':
      return html`<span class="told feed">not sent: no destination takes order events <span class="muted">(in the feed)</span></span>`;
    case 'channel':
      return html`<span class="told muted">the channel's own</span>`;
  }
}

function timelineHtml(entries: TimelineEntry[]): Html {
  if (!entries.length) return html`<p class="muted" id="timeline">Nothing has happened to it yet.</p>`;
  return html`<ol class="timeline" id="timeline">
${entries.map(
  (e) => html`<li data-kind="${e.kind}"${e.event_id !== null ? html` data-event="${e.event_id}"` : ''}>
<span class="at mono">${when(e.at)}</span>
<div class="what"><strong>${e.what}</strong>${e.detail ? html`<div class="detail">${e.detail}</div>` : ''}${e.tracking ? html`<div>${trackingHtml(e.tracking)}</div>` : ''}</div>
<div class="told-cell">${toldHtml(e.told)}</div></li>`,
)}
</ol>`;
}

const linesText = (lines: { sku: string | null; quantity: string }[]) => lines.map((l) => `${l.sku ?? '?'} × ${l.quantity}`).join(', ');

function cancelSection(pc: PageContext, p: ChannelOrderPage, action: string): Html {
  const c = p.cancel;
  if (c.offer !== 'none' && !offers(pc, '/channels/:id/orders/:order/cancel'))
    return html`<p id="cancel-state">Cancelling a channel's order needs the operator role.</p>`;
  if (c.offer === 'none')
    return html`<p id="cancel-state">${c.why}${c.operationId ? html` <a href="/operations/${c.operationId}">Follow it</a>.` : ''}</p>`;
  const says =
    c.offer === 'void'
      ? `Voids order ${p.view.order?.order_number ?? p.view.order_id} at the service (one void operation, however often asked); the channel hears order.voided once the service has it.`
      : 'The order was not imported: this ends its hold, and its units count again in every channel.';
  return html`<form method="post" action="${action}" id="cancel-form"><button>Cancel order</button></form>
<p class="muted">${says}</p>`;
}

export function channelOrderPageHtml(pc: PageContext, p: ChannelOrderPage): Html {
  const v = p.view;
  const path = channelOrderPath(p.channel.id, v.channel_order_id);
  const o = v.order;
  const destination =
    p.destination === 'orders'
      ? 'its destination takes order events'
      : p.destination === 'stock-only'
        ? 'its destination takes stock only: the channel reads order events from the feed'
        : 'no destination: the channel reads order events from the feed';
  return layout(
    pc,
    `Channel order ${p.channel.name} ${v.channel_order_id}`,
    '/orders',
    html`
<dl class="facts" id="channel-order-facts">
<dt>Connection</dt><dd>${p.connection.name}</dd>
<dt>Channel</dt><dd><a href="/channels?connection=${enc(p.connection.name)}#channel-${p.channel.id}">${p.channel.name}</a> <span class="muted">(${destination})</span></dd>
<dt>Channel order id</dt><dd class="mono">${v.channel_order_id}</dd>
<dt>Order at the service</dt><dd id="service-order">${
      v.order_id === null
        ? html`<span class="muted">not imported</span>`
        : html`<a href="/orders/${enc(p.connection.name)}/${v.order_id}">${o?.order_number ? `order ${o.order_number}` : `order ${v.order_id}`}</a>${
            o
              ? html`: status <span class="state">${o.status ?? 'unknown'}</span>${o.invoice_status ? `, invoice ${o.invoice_status}` : ''}${o.payment_status ? `, payment ${o.payment_status}` : ''}`
              : html` <span class="muted">(not read by the mirror yet)</span>`
          }`
    }</dd>
<dt>Hold</dt><dd>${
      v.hold
        ? v.hold.ended_at
          ? `ended ${when(v.hold.ended_at)} UTC (${v.hold.end_cause ?? 'ended'})`
          : `active until ${when(v.hold.expires_at)} UTC`
        : html`<span class="muted">none</span>`
    }</dd>
</dl>
<h2>Cancel</h2>
${cancelSection(pc, p, `${path}/cancel`)}
<h2>Timeline</h2>
<p class="muted">Times are UTC: an event's is when it happened at the service, a hold's when commerce-sync made or ended it. The right column says how the channel heard of it.</p>
${timelineHtml(p.timeline)}
<h2>Shipments</h2>
<table id="shipments"><thead><tr><th scope="col">Fulfilment</th><th scope="col">Status</th><th scope="col">Packed</th><th scope="col">Shipped</th><th scope="col">Tracking</th><th scope="col">Lines</th></tr></thead><tbody>
${
  v.fulfillments.length
    ? v.fulfillments.map(
        (f) =>
          html`<tr data-id="${f.id}"><td>${f.id}</td><td>${f.status ?? ''}</td><td class="mono at">${serviceWhen(f.packed_at)}</td><td class="mono at">${serviceWhen(f.shipped_at)}</td><td>${trackingHtml({ company: f.tracking_company, number: f.tracking_number, url: f.tracking_url })}</td><td>${linesText(f.lines)}</td></tr>`,
      )
    : html`<tr><td colspan="6" class="muted">Nothing packed yet.</td></tr>`
}
</tbody></table>
<h2>Returns</h2>
<table id="channel-order-returns"><thead><tr><th scope="col">Return</th><th scope="col">Status</th><th scope="col">Credit note</th><th scope="col">Created</th><th scope="col">Received</th><th scope="col">Lines</th></tr></thead><tbody>
${
  v.returns.length
    ? v.returns.map(
        (r) =>
          html`<tr data-id="${r.id}"><td>${r.id}</td><td>${r.status ?? ''}</td><td>${r.credit_note_number ?? ''}</td><td class="mono at">${serviceWhen(r.created_at)}</td><td class="mono at">${serviceWhen(r.received_at)}</td><td>${linesText(r.lines)}</td></tr>`,
      )
    : html`<tr><td colspan="6" class="muted">No returns.</td></tr>`
}
</tbody></table>
${
  v.hold
    ? html`<h2>Held for it</h2>
<table id="channel-order-hold"><thead><tr><th scope="col">SKU</th><th scope="col" class="num">Quantity</th><th scope="col">Ordered as</th><th scope="col">Ended</th></tr></thead><tbody>
${v.hold.held.map(
  (l) =>
    html`<tr><td><a href="/variants/${enc(p.connection.name)}/${l.variant_id}">${l.sku ?? `variant ${l.variant_id}`}</a></td><td class="num">${l.quantity}</td><td>${l.ordered_sku && l.ordered_sku !== l.sku ? l.ordered_sku : ''}</td><td>${l.ended_at ? `${when(l.ended_at)} UTC (${l.end_cause ?? ''})` : html`<span class="muted">held</span>`}</td></tr>`,
)}</tbody></table>`
    : ''
}
<h2>Operations on this order</h2>
<table id="channel-order-operations">${OPERATION_HEAD}<tbody>
${
  v.operations.length
    ? operationRows(
        pc,
        v.operations.map((op) => ({ ...op, connection: p.connection.name })),
        (op) => !o || orderAllowsRetry({ status: o.status, invoice: o.invoice_status, payment: o.payment_status }, op.kind),
      )
    : html`<tr><td colspan="8" class="muted">No operation touched this order.</td></tr>`
}
</tbody></table>
<p class="muted">The channel asks the same with <code>GET /api/channels/${p.channel.name}/orders/${v.channel_order_id}?connection=${p.connection.name}</code>, or <code>commerce-sync channels orders show ${p.channel.name} ${v.channel_order_id}</code>.</p>`,
  );
}

const EVENT_WORDS: Record<string, string> = {
  'order.imported': 'imported',
  'order.import_failed': 'import failed',
  'order.packed': 'packed',
  'order.shipped': 'shipped',
  'order.tracking_updated': 'tracking changed',
  'order.invoiced': 'invoiced',
  'order.paid': 'paid',
  'order.returned': 'returned',
  'order.return_received': 'return received',
  'order.voided': 'voided',
};

/** Channel orders as a table: the recent ones of a connection's channels, or the matches of a search. */
export function channelOrderRows(id: string, caption: string, connection: string, rows: ChannelOrderSummary[]): Html {
  return html`<table id="${id}" class="channel-orders"><caption class="sr">${caption}</caption><thead><tr><th scope="col">Channel</th><th scope="col">Channel order</th><th scope="col">Order at the service</th><th scope="col">Last told</th><th scope="col" class="num">Events</th><th scope="col">Hold</th></tr></thead><tbody>
${rows.map(
  (
    r,
  ) => html`<tr data-order="${r.channel_order_id}" data-channel="${r.channel}"><td>${r.channel}</td><td><a href="${channelOrderPath(r.channel_id, r.channel_order_id)}">${r.channel_order_id}</a></td>
<td>${r.order_id !== null ? html`<a href="/orders/${enc(connection)}/${r.order_id}">${r.order_number ?? `order ${r.order_id}`}</a> <span class="muted">${r.order_status ?? ''}</span>` : html`<span class="muted">not imported</span>`}</td>
<td>${r.last_type ? html`${EVENT_WORDS[r.last_type] ?? r.last_type} <span class="mono muted">${when(r.last_at)}</span>` : html`<span class="muted">nothing yet</span>`}</td>
<td class="num">${r.events}</td><td>${r.hold_state === 'active' ? 'active' : r.hold_state === 'ended' ? `ended (${r.hold_end_cause ?? ''})` : ''}</td></tr>`,
)}</tbody></table>`;
}
