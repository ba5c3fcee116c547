// A channel order for the console: its page (the view the channel asks for, src/channels/orders.ts, as a timeline
// from hold to import, packing, shipments, invoice, payment, returns and void, each with the POST that told the
// channel), whether it can be cancelled now, and the lists that lead to it (a channel's recent orders, the Orders
// search by channel order id).
import { channelById, channelsOf } from '../db/channels.ts';
import { destinationOf } from '../db/channel-destinations.ts';
import { channelOrdersMatching, recentChannelOrders, type ChannelOrderSummary } from '../db/channel-order-reads.ts';
import { getConnection } from '../db/connections.ts';
import type { Db } from '../db/index.ts';
import { channelOrderView, type ChannelOrderView, type ChannelRef } from '../channels/orders.ts';
import { orderTimeline, type TimelineEntry } from '../channels/order-timeline.ts';

export type { ChannelOrderSummary } from '../db/channel-order-reads.ts';

/** Whether the console offers Cancel, and why not when it does not. */
export type CancelChoice = { offer: 'void' } | { offer: 'hold' } | { offer: 'none'; why: string; operationId?: number };

/**
 * What a cancel would do now: void the imported order while none of it has shipped (and it is not void already,
 * nor a void under way), or end the hold of an order not imported while it is active. cancelChannelOrder decides
 * again when asked (a shipment may have come in between).
 */
export function cancelChoice(view: ChannelOrderView): CancelChoice {
  if (view.order_id !== null) {
    const voiding = view.operations.find((op) => op.kind === 'void' && (op.state === 'queued' || op.state === 'sent'));
    if (view.order?.status === 'void') return { offer: 'none', why: 'The order is void at the service.' };
    if (voiding) return { offer: 'none', why: `A void of this order is under way (operation ${voiding.id}).`, operationId: voiding.id };
    const shipped = view.order?.status === 'fulfilled' || view.fulfillments.some((f) => f.status === 'fulfilled');
    if (shipped) return { offer: 'none', why: 'Some of it has shipped: it can no longer be voided (take a return instead).' };
    return { offer: 'void' };
  }
  if (view.hold && !view.hold.ended_at) return { offer: 'hold' };
  return {
    offer: 'none',
    why: view.hold
      ? `Not imported, and its hold has ended (${view.hold.end_cause ?? 'ended'}).`
      : 'Not imported, and nothing is held for it.',
  };
}

export interface ChannelOrderPage {
  connection: { id: number; name: string };
  channel: { id: number; name: string };
  view: ChannelOrderView;
  timeline: TimelineEntry[];
  /** The channel's destination: none, taking stock only, or taking order events. */
  destination: 'none' | 'stock-only' | 'orders';
  cancel: CancelChoice;
}

/** The channel a console path names (by id), with its connection; undefined when there is none. */
export async function channelAt(
  db: Db,
  channelId: number,
): Promise<(Omit<ChannelRef, 'channelOrderId'> & { connection: string }) | undefined> {
  const ch = await channelById(db, channelId);
  const conn = ch && (await getConnection(db, ch.connection_id));
  if (!ch || !conn) return undefined;
  return { connectionId: conn.id, connection: conn.name, channelId: ch.id, channel: ch.name };
}

/** The page of a channel order; null when the channel or the order is not there. */
export async function channelOrderPage(db: Db, channelId: number, channelOrderId: string): Promise<ChannelOrderPage | null> {
  const at = await channelAt(db, channelId);
  if (!at) return null;
  const ref: ChannelRef = { ...at, channelOrderId };
  const [view, dest] = await Promise.all([channelOrderView(db, ref), destinationOf(db, channelId)]);
  if (!view) return null;
  const destination = !dest ? 'none' : dest.kinds.includes('orders') ? 'orders' : 'stock-only';
  return {
    connection: { id: at.connectionId, name: at.connection },
    channel: { id: at.channelId, name: at.channel },
    view,
    timeline: orderTimeline(view, destination === 'orders'),
    destination,
    cancel: cancelChoice(view),
  };
}

/** Channel name -> id of a connection's channels (the links from orders to their channel order's page). */
export async function channelIds(db: Db, connectionId: number): Promise<Map<string, number>> {
  return new Map((await channelsOf(db, connectionId)).map((c) => [c.name, c.id]));
}

/** The recent channel orders of each of these channels, newest first, `limit` in all. */
export async function recentOrdersOf(
  db: Db,
  channels: { id: number; connection_id: number; name: string }[],
  limit: number,
): Promise<ChannelOrderSummary[]> {
  const each = await Promise.all(channels.map((c) => recentChannelOrders(db, c, limit)));
  const t = (s: ChannelOrderSummary) => (s.touched_at ? new Date(s.touched_at).getTime() : 0);
  return each
    .flat()
    .sort((a, b) => t(b) - t(a))
    .slice(0, limit);
}

/** The channel orders of a connection with this id (an Orders search): trimmed, at most 200 characters. */
export async function searchChannelOrders(db: Db, connectionId: number, q: string | undefined): Promise<ChannelOrderSummary[]> {
  const id = q?.trim();
  if (!id || id.length > 200) return [];
  return channelOrdersMatching(db, connectionId, id);
}

/** A channel order's page. */
export const channelOrderPath = (channelId: number, channelOrderId: string) =>
  `/channels/${channelId}/orders/${encodeURIComponent(channelOrderId)}`;
