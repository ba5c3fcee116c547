// A channel's order events as the channel reads them: the pull feed (GET /api/channels/:name/order-events) and
// the body of a POST to its destination (type channel.orders.changed). Both carry the same objects, in id order;
// ids become visible in order per channel (db/channel-order-events.ts), so a reader following the cursor never
// skips one. A cursor older than what retention keeps (CHANNEL_CHANGE_RETENTION_DAYS) gets `expired`.
import { orderEventsAfter, orderEventsPrunedThrough, type OrderEventRow } from '../db/channel-order-events.ts';
import type { Db } from '../db/index.ts';
import type { FeedExpired } from './feed.ts';

export interface OrderEvent {
  id: number;
  type: string;
  channel_order_id: string;
  order_id: number | null;
  order_number: string | null;
  /** When it happened on the service (ISO 8601). */
  at: string;
  data: unknown;
}

export const presentOrderEvent = (e: OrderEventRow): OrderEvent => ({
  id: e.id,
  type: e.type,
  channel_order_id: e.channel_order_id,
  order_id: e.order_id,
  order_number: e.order_number,
  at: new Date(e.at).toISOString(),
  data: e.data,
});

export interface OrderFeedPage {
  events: OrderEvent[];
  /** The id of the last event of the page (the `since` given when none): ask again with since=cursor. */
  cursor: number;
  has_more: boolean;
}

export async function orderEventsFeed(
  db: Db,
  o: { channelId: number; since: number; limit: number },
): Promise<OrderFeedPage | FeedExpired> {
  const rows = await orderEventsAfter(db, o);
  // Read after the events: had retention deleted any after `since` before that read, this says so.
  const through = await orderEventsPrunedThrough(db);
  if (o.since < through) return { expired: true, since: o.since, kept_after: through };
  const events = rows.slice(0, o.limit).map(presentOrderEvent);
  return { events, cursor: events.length ? events[events.length - 1]!.id : o.since, has_more: rows.length > o.limit };
}

/** The body of one POST of order events: Standard Webhooks' {type, timestamp, data}. */
export function orderEventsBody(channel: { connection: string; channel: string }, events: OrderEvent[], through: number): string {
  return JSON.stringify({
    type: 'channel.orders.changed',
    timestamp: new Date().toISOString(),
    // cursor: what the receiver acknowledges by answering 2xx, every order event of the channel up to this id.
    data: { connection: channel.connection, channel: channel.channel, cursor: through, events },
  });
}
