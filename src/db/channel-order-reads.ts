// The console's reads of a channel's orders as a list: the recent ones of a channel (the Channels page) and those
// with a given channel order id (the Orders search). A channel order is known from its import (channel_orders), its
// hold (channel_holds) or its events (channel_order_events); one order's whole view is src/channels/orders.ts.
import { sql } from 'kysely';
import type { Executor } from './index.ts';

export interface ChannelOrderSummary {
  channel_id: number;
  channel: string;
  channel_order_id: string;
  /** The service's order once imported (null: held or failed only). */
  order_id: number | null;
  order_number: string | null;
  order_status: string | null;
  hold_state: 'active' | 'ended' | null;
  hold_end_cause: string | null;
  /** The newest event told of it, and how many there are. */
  last_type: string | null;
  last_at: Date | null;
  events: number;
  /** When it last moved here (an event recorded, a hold made or ended, the import). */
  touched_at: Date | null;
}

interface Key {
  channel_id: number;
  channel: string;
  channel_order_id: string;
  touched_at: Date | null;
}

/** The summaries of these channel orders of one connection, most recently moved first. */
async function summaries(db: Executor, connectionId: number, keys: Key[]): Promise<ChannelOrderSummary[]> {
  if (!keys.length) return [];
  const { rows } = await sql<ChannelOrderSummary>`
    SELECT k.channel_id, k.channel, k.channel_order_id, co.order_id, o.order_number, o.status AS order_status,
           CASE WHEN h.id IS NULL THEN NULL WHEN h.ended_at IS NULL THEN 'active' ELSE 'ended' END AS hold_state,
           h.end_cause AS hold_end_cause, e.type AS last_type, e.at AS last_at,
           (SELECT count(*)::int FROM channel_order_events x
             WHERE x.connection_id = ${connectionId} AND x.channel_order_id = k.channel_order_id AND x.channel_id = k.channel_id) AS events,
           greatest(k.touched_at, co.created_at, h.created_at, h.ended_at) AS touched_at
      FROM unnest(${keys.map((k) => k.channel_id)}::bigint[], ${keys.map((k) => k.channel)}::text[],
                  ${keys.map((k) => k.channel_order_id)}::text[], ${keys.map((k) => k.touched_at)}::timestamptz[])
           AS k(channel_id, channel, channel_order_id, touched_at)
      LEFT JOIN channel_orders co
        ON co.connection_id = ${connectionId} AND co.channel = k.channel AND co.channel_order_id = k.channel_order_id
      LEFT JOIN orders o ON o.connection_id = co.connection_id AND o.id = co.order_id
      LEFT JOIN channel_holds h
        ON h.connection_id = ${connectionId} AND h.channel = k.channel AND h.channel_order_id = k.channel_order_id
      LEFT JOIN LATERAL (
        SELECT type, at FROM channel_order_events x
         WHERE x.connection_id = ${connectionId} AND x.channel_order_id = k.channel_order_id AND x.channel_id = k.channel_id
         ORDER BY x.id DESC LIMIT 1) e ON true
     ORDER BY touched_at DESC NULLS LAST, k.channel, k.channel_order_id`.execute(db);
  return rows;
}

/**
 * The channel orders of a channel that moved last: those of its newest events (the last 500), and its newest holds.
 * An order imported before order events existed shows here once something happens to it.
 */
export async function recentChannelOrders(
  db: Executor,
  channel: { id: number; connection_id: number; name: string },
  limit: number,
): Promise<ChannelOrderSummary[]> {
  const { rows } = await sql<{ channel_order_id: string; touched_at: Date }>`
    SELECT channel_order_id, max(t) AS touched_at FROM (
      (SELECT channel_order_id, recorded_at AS t FROM channel_order_events WHERE channel_id = ${channel.id} ORDER BY id DESC LIMIT 500)
      UNION ALL
      (SELECT channel_order_id, greatest(created_at, ended_at) AS t FROM channel_holds
        WHERE connection_id = ${channel.connection_id} AND channel = ${channel.name} ORDER BY id DESC LIMIT ${limit})
    ) s GROUP BY channel_order_id ORDER BY 2 DESC LIMIT ${limit}`.execute(db);
  return summaries(
    db,
    channel.connection_id,
    rows.map((r) => ({ channel_id: channel.id, channel: channel.name, channel_order_id: r.channel_order_id, touched_at: r.touched_at })),
  );
}

/** Every channel order of a connection with this channel order id (each channel has its own ids), in a channel that exists. */
export async function channelOrdersMatching(db: Executor, connectionId: number, channelOrderId: string): Promise<ChannelOrderSummary[]> {
  const { rows } = await sql<{ channel_id: number; channel: string }>`
    SELECT c.id AS channel_id, c.name AS channel FROM channels c
     WHERE c.connection_id = ${connectionId} AND (
           EXISTS (SELECT 1 FROM channel_orders co
                    WHERE co.connection_id = c.connection_id AND co.channel = c.name AND co.channel_order_id = ${channelOrderId})
        OR EXISTS (SELECT 1 FROM channel_holds h
                    WHERE h.connection_id = c.connection_id AND h.channel = c.name AND h.channel_order_id = ${channelOrderId})
        OR EXISTS (SELECT 1 FROM channel_order_events e
                    WHERE e.connection_id = c.connection_id AND e.channel_order_id = ${channelOrderId} AND e.channel_id = c.id))
     ORDER BY c.id`.execute(db);
  return summaries(
    db,
    connectionId,
    rows.map((r) => ({ channel_id: r.channel_id, channel: r.channel, channel_order_id: channelOrderId, touched_at: null })),
  );
}
