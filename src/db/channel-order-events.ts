// The channel order events store: every statement on channel_order_events (and channel_order_events_pruned), the
// order-watch columns of channel_orders, and the one read of the mirror that tells what a channel order has become.
// What the events mean and when one is due: src/channels/order-events.ts.
import { type Insertable, type Selectable, sql } from 'kysely';
import { ORDER_EVENTS, prunedThroughOf, prunePrefix } from './feed-retention.ts';
import type { Executor } from './index.ts';
import type { ChannelOrderEventsTable } from './schema.ts';
import { traceparentOf } from '../telemetry/spans.ts';

export type OrderEventRow = Selectable<ChannelOrderEventsTable>;
export type NewOrderEvent = Insertable<ChannelOrderEventsTable>;

/** A channel order imported to the service, locked for this transaction, with its channel's id (null: no such channel). */
export interface MappedOrder {
  connection_id: number;
  channel: string;
  channel_id: number | null;
  channel_order_id: string;
  order_id: number;
  announced: string[];
  created_at: Date;
  /** The order number the import was answered with (the order may not be mirrored yet). */
  order_number: string | null;
}

/** The channel orders among `orderIds`, locked in a fixed order (two writers never wait on each other crosswise). */
export async function lockMappedOrders(tx: Executor, connectionId: number, orderIds: number[]): Promise<MappedOrder[]> {
  if (!orderIds.length) return [];
  const { rows } = await sql<MappedOrder>`
    SELECT co.connection_id, co.channel, ch.id AS channel_id, co.channel_order_id, co.order_id, co.announced, co.created_at,
           (SELECT p.result->>'order_number' FROM push_operations p WHERE p.id = co.operation_id) AS order_number
      FROM channel_orders co
      LEFT JOIN channels ch ON ch.connection_id = co.connection_id AND ch.name = co.channel
     WHERE co.connection_id = ${connectionId} AND co.order_id = ANY(${orderIds}::bigint[])
     ORDER BY co.channel, co.channel_order_id
       FOR UPDATE OF co`.execute(tx);
  return rows;
}

/** What the mirror knows of an order, as order events need it. Times are the service's. */
export interface OrderFacts {
  order_id: number;
  order_number: string | null;
  status: string | null;
  payment_status: string | null;
  invoice_status: string | null;
  /** invoice id -> number, as the order carries them. */
  invoice_numbers: Record<string, unknown> | null;
  /** The fulfilments the order names (its `fulfillment_ids`), null when it names none or is not mirrored. */
  fulfillment_ids: number[] | null;
  created_at: Date | null;
  updated_at: Date | null;
  fulfillments: {
    id: number;
    status: string | null;
    /** As the service gives them (raw): a day alone stays a day, not its midnight in the database's time zone. */
    packed_at: string | null;
    shipped_at: string | null;
    created_at: string | null;
    updated_at: string | null;
    stock_location_id: number | null;
    tracking_company: string | null;
    tracking_number: string | null;
    tracking_url: string | null;
    lines: { sku: string | null; quantity: string; order_line_item_id: number | null }[];
  }[];
  returns: {
    id: number;
    status: string | null;
    credit_note_number: string | null;
    location_id: number | null;
    created_at: string | null;
    received_at: string | null;
    lines: { sku: string | null; quantity: string; order_line_item_id: number | null }[];
  }[];
}

/**
 * One statement: the orders with their fulfilments and returns, lines by SKU (numeric quantities as text). An order
 * not mirrored yet still has its fulfilments and returns (its own fields null): a shipment is not held up by the
 * order's read.
 */
export async function orderFacts(db: Executor, connectionId: number, orderIds: number[]): Promise<Map<number, OrderFacts>> {
  if (!orderIds.length) return new Map();
  const { rows } = await sql<OrderFacts>`
    SELECT i.id AS order_id, o.order_number, o.status, o.raw->>'payment_status' AS payment_status,
           o.raw->>'invoice_status' AS invoice_status, o.raw->'invoice_numbers' AS invoice_numbers,
           CASE WHEN jsonb_typeof(o.raw->'fulfillment_ids') = 'array'
                THEN ARRAY(SELECT cs_bigint(x) FROM jsonb_array_elements_text(o.raw->'fulfillment_ids') x) END AS fulfillment_ids,
           o.created_at, o.updated_at,
           coalesce((SELECT jsonb_agg(jsonb_build_object(
                'id', f.id, 'status', f.status, 'packed_at', f.raw->>'packed_at', 'shipped_at', f.raw->>'shipped_at',
                'created_at', f.created_at, 'updated_at', f.updated_at, 'stock_location_id', f.stock_location_id,
                'tracking_company', f.tracking_company, 'tracking_number', f.tracking_number, 'tracking_url', f.tracking_url,
                'lines', coalesce((SELECT jsonb_agg(jsonb_build_object('sku', fl.variant_sku, 'quantity', trim_scale(fl.quantity)::text,
                                                          'order_line_item_id', fl.order_line_item_id) ORDER BY fl.id)
                                     FROM fulfillment_line_items fl
                                    WHERE fl.connection_id = f.connection_id AND fl.fulfillment_id = f.id), '[]'))
                ORDER BY f.id)
              FROM fulfillments f WHERE f.connection_id = ${connectionId} AND f.order_id = i.id), '[]') AS fulfillments,
           coalesce((SELECT jsonb_agg(jsonb_build_object(
                'id', r.id, 'status', r.status, 'credit_note_number', r.credit_note_number, 'location_id', r.location_id,
                'created_at', r.created_at, 'received_at', r.raw->>'received_at',
                'lines', coalesce((SELECT jsonb_agg(jsonb_build_object('sku', v.sku, 'quantity', trim_scale(rl.quantity)::text,
                                                          'order_line_item_id', rl.order_line_item_id) ORDER BY rl.id)
                                     FROM fulfillment_return_line_items rl
                                     LEFT JOIN order_line_items li ON li.connection_id = rl.connection_id AND li.id = rl.order_line_item_id
                                     LEFT JOIN variants v ON v.connection_id = li.connection_id AND v.id = li.variant_id
                                    WHERE rl.connection_id = r.connection_id AND rl.fulfillment_return_id = r.id), '[]'))
                ORDER BY r.id)
              FROM fulfillment_returns r WHERE r.connection_id = ${connectionId} AND r.order_id = i.id), '[]') AS returns
      FROM unnest(${orderIds}::bigint[]) AS i(id)
      LEFT JOIN orders o ON o.connection_id = ${connectionId} AND o.id = i.id`.execute(db);
  return new Map(
    rows.map((r) => [r.order_id, { ...r, fulfillment_ids: r.fulfillment_ids?.filter((x) => x !== null).map(Number) ?? null }]),
  );
}

/**
 * Records events, each channel's under its lock until the transaction commits (ids visible in order per channel),
 * once per (channel, channel order, key). Answers the ids of the channels that got one.
 */
export async function insertOrderEvents(tx: Executor, events: NewOrderEvent[]): Promise<number[]> {
  if (!events.length) return [];
  const channels = [...new Set(events.map((e) => e.channel_id))].sort((a, b) => a - b);
  await sql`SELECT pg_advisory_xact_lock(727031, (c % 2147483647)::int) FROM unnest(${channels}::bigint[]) AS c ORDER BY c`.execute(tx);
  // Each keeps the trace context of the write (or push outcome) recording it: its POST continues that trace.
  const traceparent = traceparentOf();
  const rows = await tx
    .insertInto('channel_order_events')
    .values(events.map((e) => ({ traceparent, ...e })))
    .onConflict((oc) => oc.columns(['channel_id', 'channel_order_id', 'key']).doNothing())
    .returning('channel_id')
    .execute();
  return [...new Set(rows.map((r) => r.channel_id))];
}

/**
 * The trace contexts of the writes that recorded a range of a channel's order events, oldest first (at most 33: a
 * span's parent and its links). Read only when tracing: the POST carrying them continues the first.
 */
export async function orderEventTraceparents(db: Executor, channelId: number, first: number, through: number): Promise<string[]> {
  const r = await sql<{ traceparent: string }>`
    SELECT traceparent FROM channel_order_events
     WHERE channel_id = ${channelId} AND id BETWEEN ${first} AND ${through} AND traceparent IS NOT NULL
     GROUP BY traceparent ORDER BY min(id) LIMIT 33`.execute(db);
  return r.rows.map((x) => x.traceparent);
}

/** Adds the keys told and sets when the order is read back next (null: no longer). */
export async function noteAnnounced(
  tx: Executor,
  o: { connectionId: number; channel: string; channelOrderId: string; keys: string[]; watchAt: Date | null },
): Promise<void> {
  await sql`UPDATE channel_orders SET announced = ARRAY(SELECT DISTINCT unnest(announced || ${o.keys}::text[])), watch_at = ${o.watchAt}
     WHERE connection_id = ${o.connectionId} AND channel = ${o.channel} AND channel_order_id = ${o.channelOrderId}`.execute(tx);
}

/**
 * A channel's order events after a cursor (of one channel order with `channelOrderId`), oldest first; limit + 1
 * rows, so the caller tells whether there are more.
 */
export async function orderEventsAfter(
  db: Executor,
  o: { channelId: number; since: number; limit: number; channelOrderId?: string },
): Promise<OrderEventRow[]> {
  let q = db.selectFrom('channel_order_events').selectAll().where('channel_id', '=', o.channelId).where('id', '>', o.since);
  if (o.channelOrderId !== undefined) q = q.where('channel_order_id', '=', o.channelOrderId);
  return q
    .orderBy('id')
    .limit(o.limit + 1)
    .execute();
}

export const orderEventsPrunedThrough = (db: Executor): Promise<number> => prunedThroughOf(db, ORDER_EVENTS);

/** Retention of the events (feed-retention.ts: only a prefix of ids goes, the newest deleted is recorded). */
export const pruneOrderEvents = (db: Executor, olderThanSeconds: number, limit: number): Promise<number> =>
  prunePrefix(db, ORDER_EVENTS, olderThanSeconds, limit);

/**
 * Up to `limit` watched channel orders due for a read-back, with the fulfilments and returns the mirror knows of
 * them (their tracking and receipt change without a webhook).
 */
/** A channel order due for a read-back: its status in the mirror and its fulfilments and open returns. */
export interface WatchedOrder {
  connection_id: number;
  order_id: number;
  created_at: Date;
  status: string | null;
  fulfillment_ids: number[];
  return_ids: number[];
}

export async function dueWatches(db: Executor, limit: number): Promise<WatchedOrder[]> {
  const { rows } = await sql<WatchedOrder>`
    SELECT co.connection_id, co.order_id, co.created_at,
           (SELECT o.status FROM orders o WHERE o.connection_id = co.connection_id AND o.id = co.order_id) AS status,
           ARRAY(SELECT f.id FROM fulfillments f WHERE f.connection_id = co.connection_id AND f.order_id = co.order_id
                    AND f.status IS DISTINCT FROM 'void' AND f.status IS DISTINCT FROM 'gone') AS fulfillment_ids,
           ARRAY(SELECT r.id FROM fulfillment_returns r WHERE r.connection_id = co.connection_id AND r.order_id = co.order_id
                    AND r.status = 'returning') AS return_ids
      FROM channel_orders co
     WHERE co.watch_at <= now()
     ORDER BY co.watch_at
     LIMIT ${limit}`.execute(db);
  return rows.map((r) => ({
    ...r,
    connection_id: r.connection_id,
    order_id: r.order_id,
    fulfillment_ids: r.fulfillment_ids.map(Number),
    return_ids: r.return_ids.map(Number),
  }));
}

/** Sets the next read-back of these orders. */
export async function setWatches(db: Executor, rows: { connection_id: number; order_id: number; watch_at: Date | null }[]): Promise<void> {
  if (!rows.length) return;
  await sql`UPDATE channel_orders co SET watch_at = w.watch_at
      FROM unnest(${rows.map((r) => r.connection_id)}::bigint[], ${rows.map((r) => r.order_id)}::bigint[],
                  ${rows.map((r) => r.watch_at)}::timestamptz[]) AS w(connection_id, order_id, watch_at)
     WHERE co.connection_id = w.connection_id AND co.order_id = w.order_id AND co.watch_at IS NOT NULL`.execute(db);
}

/**
 * Watched channel orders not shipped or ended with a line on one of these variants: a stock move there may be the
 * void of one (it releases committed stock), so they are read back. An order not mirrored yet is known by the
 * lines its import held (channel_hold_lines), so a void soon after the import is caught the same way.
 */
export async function watchedOrdersWithVariants(db: Executor, connectionId: number, variantIds: number[]): Promise<number[]> {
  if (!variantIds.length) return [];
  const { rows } = await sql<{ order_id: number }>`
    SELECT co.order_id FROM channel_orders co
      LEFT JOIN orders o ON o.connection_id = co.connection_id AND o.id = co.order_id
     WHERE co.connection_id = ${connectionId} AND co.watch_at IS NOT NULL
       AND (o.id IS NULL OR o.status IN ('draft', 'active', 'finalized'))
       AND (EXISTS (SELECT 1 FROM order_line_items li
                     WHERE li.connection_id = co.connection_id AND li.order_id = co.order_id AND li.variant_id = ANY(${variantIds}::bigint[]))
         OR EXISTS (SELECT 1 FROM channel_holds h JOIN channel_hold_lines l ON l.hold_id = h.id
                     WHERE h.connection_id = co.connection_id AND h.channel = co.channel AND h.channel_order_id = co.channel_order_id
                       AND l.variant_id = ANY(${variantIds}::bigint[])))`.execute(db);
  return rows.map((r) => r.order_id);
}

/** The newest order event id of a channel (0: none), for a destination set to start from now. */
export async function lastOrderEventId(db: Executor, channelId: number): Promise<number> {
  const row = await db
    .selectFrom('channel_order_events')
    .select((eb) => eb.fn.max('id').as('id'))
    .where('channel_id', '=', channelId)
    .executeTakeFirst();
  return Number(row?.id ?? 0);
}

/**
 * Of the fulfilments and returns that channel orders name (an order's `fulfillment_ids`, `return_ids`), those the
 * mirror does not have yet: with no webhook about them (lost, or no subscription), reading the order is how they
 * are learnt. Orders that are no channel's are left out.
 */
export async function unknownDocumentsOf(
  db: Executor,
  connectionId: number,
  named: { orderId: number; fulfillments: number[]; returns: number[] }[],
): Promise<{ resource: 'fulfillment' | 'fulfillment_return'; id: number }[]> {
  const fulfillments = named.flatMap((n) => n.fulfillments.map((id) => [n.orderId, id]));
  const returns = named.flatMap((n) => n.returns.map((id) => [n.orderId, id]));
  if (!fulfillments.length && !returns.length) return [];
  const { rows } = await sql<{ resource: 'fulfillment' | 'fulfillment_return'; id: number }>`
    WITH n AS (
      SELECT 'fulfillment' AS resource, x.o, x.id FROM jsonb_to_recordset(${JSON.stringify(fulfillments.map(([o, id]) => ({ o, id })))}::jsonb) AS x(o bigint, id bigint)
      UNION ALL
      SELECT 'fulfillment_return', x.o, x.id FROM jsonb_to_recordset(${JSON.stringify(returns.map(([o, id]) => ({ o, id })))}::jsonb) AS x(o bigint, id bigint)
    )
    SELECT DISTINCT n.resource, n.id FROM n
      JOIN channel_orders co ON co.connection_id = ${connectionId} AND co.order_id = n.o
     WHERE (n.resource = 'fulfillment' AND NOT EXISTS (SELECT 1 FROM fulfillments f WHERE f.connection_id = ${connectionId} AND f.id = n.id))
        OR (n.resource = 'fulfillment_return'
            AND NOT EXISTS (SELECT 1 FROM fulfillment_returns r WHERE r.connection_id = ${connectionId} AND r.id = n.id))`.execute(db);
  return rows.map((r) => ({ resource: r.resource, id: r.id }));
}

/** A channel order's key in latestEventTimes' answer. */
export const eventTimeKey = (o: { channel_id: number | null; channel_order_id: string }) => `${o.channel_id}\u0000${o.channel_order_id}`;

/** The latest `at` each of these channel orders was told (none yet: absent), keyed by `eventTimeKey`. */
export async function latestEventTimes(
  db: Executor,
  connectionId: number,
  orders: { channel_id: number | null; channel_order_id: string }[],
): Promise<Map<string, Date>> {
  const keys = orders.filter((o) => o.channel_id !== null).map((o) => ({ c: o.channel_id, o: o.channel_order_id }));
  if (!keys.length) return new Map();
  const { rows } = await sql<{ channel_id: number; channel_order_id: string; at: Date }>`
    SELECT e.channel_id, e.channel_order_id, max(e.at) AS at FROM channel_order_events e
      JOIN jsonb_to_recordset(${JSON.stringify(keys)}::jsonb) AS k(c bigint, o text) ON e.channel_id = k.c AND e.channel_order_id = k.o
     WHERE e.connection_id = ${connectionId}
     GROUP BY e.channel_id, e.channel_order_id`.execute(db);
  return new Map(rows.map((r) => [eventTimeKey(r), new Date(r.at)]));
}
