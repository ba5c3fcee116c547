// The holds store: every statement on channel_holds and channel_hold_lines (stock held for channel orders). When a
// hold is made and when each line ends is src/channels/holds.ts and src/stock/held-lines.ts; this module only reads
// and writes rows.
import { sql, type Selectable } from 'kysely';
import type { Executor } from './index.ts';
import { among, type Ids } from './together.ts';
import type { ChannelHoldLinesTable, ChannelHoldsTable, HoldEnd } from './schema.ts';

export type Hold = Selectable<ChannelHoldsTable>;
export type HoldLine = Selectable<ChannelHoldLinesTable>;

export type NewHold = Pick<Hold, 'connection_id' | 'channel' | 'channel_order_id' | 'source' | 'clock_margin_ms'> & {
  lines: { sku: string; quantity: string }[];
  expires_minutes: number;
};
export type NewHoldLine = Pick<HoldLine, 'variant_id' | 'sku' | 'ordered_sku' | 'quantity'>;

const HOLD_COLUMNS = sql`h.id, h.connection_id, h.channel, h.channel_order_id, h.source, h.lines, h.order_id, h.order_at,
  h.clock_margin_ms, h.created_at, h.expires_at, h.ended_at, h.end_cause`;

/** Stores a hold and its lines unless the channel order has one already (then undefined). */
export async function insertHold(db: Executor, hold: NewHold, lines: NewHoldLine[]): Promise<Hold | undefined> {
  const row = (
    await sql<Hold>`
    INSERT INTO channel_holds AS h (connection_id, channel, channel_order_id, source, lines, clock_margin_ms, expires_at)
    VALUES (${hold.connection_id}, ${hold.channel}, ${hold.channel_order_id}, ${hold.source}, ${JSON.stringify(hold.lines)}::jsonb,
      ${hold.clock_margin_ms}, now() + make_interval(mins => ${hold.expires_minutes}))
    ON CONFLICT (connection_id, channel, channel_order_id) DO NOTHING
    RETURNING ${HOLD_COLUMNS}`.execute(db)
  ).rows[0];
  if (!row) return undefined;
  if (lines.length)
    await db
      .insertInto('channel_hold_lines')
      .values(lines.map((l) => ({ ...l, hold_id: row.id, connection_id: hold.connection_id })))
      .execute();
  return row;
}

export async function holdByKey(db: Executor, connectionId: number, channel: string, channelOrderId: string): Promise<Hold | undefined> {
  return (
    await sql<Hold>`SELECT ${HOLD_COLUMNS} FROM channel_holds h
    WHERE h.connection_id = ${connectionId} AND h.channel = ${channel} AND h.channel_order_id = ${channelOrderId}`.execute(db)
  ).rows[0];
}

export type HoldState = 'active' | 'ended' | 'all';

/** Holds with their lines, newest first. */
export async function listHolds(
  db: Executor,
  opts: { connectionId?: number; channel?: string; state?: HoldState; limit?: number; ids?: number[] } = {},
): Promise<(Hold & { connection: string; held: (HoldLine & { quantity: string })[] })[]> {
  const state = opts.state ?? 'active';
  const holds = (
    await sql<Hold & { connection: string }>`
    SELECT ${HOLD_COLUMNS}, n.name AS connection FROM channel_holds h JOIN connections n ON n.id = h.connection_id
    WHERE true ${opts.connectionId !== undefined ? sql`AND h.connection_id = ${opts.connectionId}` : sql``}
      ${opts.channel !== undefined ? sql`AND h.channel = ${opts.channel}` : sql``}
      ${opts.ids ? sql`AND h.id = ANY(${opts.ids}::bigint[])` : sql``}
      ${state === 'active' ? sql`AND h.ended_at IS NULL` : state === 'ended' ? sql`AND h.ended_at IS NOT NULL` : sql``}
    ORDER BY h.id DESC LIMIT ${opts.limit ?? 100}`.execute(db)
  ).rows;
  if (!holds.length) return [];
  const lines = (
    await sql<HoldLine & { quantity: string }>`
    SELECT id, hold_id, connection_id, variant_id, sku, ordered_sku, quantity::text AS quantity, ended_at, end_cause
    FROM channel_hold_lines WHERE hold_id = ANY(${holds.map((h) => h.id)}::bigint[]) ORDER BY id`.execute(db)
  ).rows;
  return holds.map((h) => ({ ...h, held: lines.filter((l) => l.hold_id === h.id) }));
}

/** A hold that holds a variant, as a quantity's explanation names it. */
export interface HoldRef {
  hold_id: number;
  channel: string;
  channel_order_id: string;
  quantity: string;
  expires_at: Date;
}

/** The active held lines of the variants, each with its variant's sum: heldOf's rows. */
export const heldQuery = (connectionId: number, variantIds: Ids) => sql<HoldRef & { variant_id: number; held: string }>`
    SELECT l.variant_id, l.hold_id, h.channel, h.channel_order_id, l.quantity::text AS quantity, h.expires_at,
      (sum(l.quantity) OVER (PARTITION BY l.variant_id))::text AS held
    FROM channel_hold_lines l JOIN channel_holds h ON h.id = l.hold_id
    WHERE l.connection_id = ${connectionId} AND ${among('l.variant_id', variantIds)} AND l.ended_at IS NULL
    ORDER BY l.variant_id, l.hold_id`;

/**
 * What active holds hold of each variant, from heldQuery's rows (read alone, or together with others: an expiry
 * that came as a string is read as a time): the sum, and the holds behind it.
 */
export function heldOf(
  rows: (Omit<HoldRef, 'expires_at'> & { expires_at: Date | string; variant_id: number; held: string })[],
): Map<number, { held: string; holds: HoldRef[] }> {
  const out = new Map<number, { held: string; holds: HoldRef[] }>();
  for (const r of rows) {
    const v = r.variant_id;
    const entry = out.get(v) ?? { held: r.held, holds: [] };
    entry.holds.push({
      hold_id: r.hold_id,
      channel: r.channel,
      channel_order_id: r.channel_order_id,
      quantity: r.quantity,
      expires_at: new Date(r.expires_at),
    });
    out.set(v, entry);
  }
  return out;
}

/** An active held line with what decides its end: its hold's order (the mirror's) and its variant's read times. */
export interface LineToSettle {
  id: number;
  hold_id: number;
  channel: string;
  channel_order_id: string;
  variant_id: number;
  sku: string | null;
  quantity: string;
  order_id: number | null;
  order_at: Date | null;
  clock_margin_ms: number;
  order_status: string | null;
  order_updated_at: Date | null;
  read_as_of: Date | null;
  variant_updated_at: Date | null;
}

/** Which active held lines: of these variants, of these holds, or of the holds of these service orders. */
export type LinesOf = { variantIds: number[] } | { holdIds: number[] } | { orderIds: number[] };

/**
 * Active held lines, with their hold's service order (recorded on the hold, or the channel order's import
 * mapping) as the mirror shows it, and the variant's last read and updated_at.
 */
export async function linesToSettle(db: Executor, connectionId: number, by: LinesOf): Promise<LineToSettle[]> {
  const filter =
    'variantIds' in by
      ? sql`l.variant_id = ANY(${by.variantIds}::bigint[])`
      : 'holdIds' in by
        ? sql`l.hold_id = ANY(${by.holdIds}::bigint[])`
        : sql`coalesce(h.order_id, m.order_id) = ANY(${by.orderIds}::bigint[])`;
  return (
    await sql<LineToSettle>`
    SELECT l.id, l.hold_id, h.channel, h.channel_order_id, l.variant_id, l.sku, l.quantity::text AS quantity, coalesce(h.order_id, m.order_id) AS order_id,
      h.order_at, h.clock_margin_ms, o.status AS order_status, o.updated_at AS order_updated_at,
      v.read_as_of, v.updated_at AS variant_updated_at
    FROM channel_hold_lines l JOIN channel_holds h ON h.id = l.hold_id
    LEFT JOIN channel_orders m ON h.order_id IS NULL AND m.connection_id = h.connection_id AND m.channel = h.channel
      AND m.channel_order_id = h.channel_order_id
    LEFT JOIN orders o ON o.connection_id = h.connection_id AND o.id = coalesce(h.order_id, m.order_id)
    LEFT JOIN variants v ON v.connection_id = l.connection_id AND v.id = l.variant_id
    WHERE l.connection_id = ${connectionId} AND l.ended_at IS NULL AND ${filter}
    ORDER BY l.id`.execute(db)
  ).rows;
}

/** Ends active lines (all of these holds' when `holdIds`), then the holds left without an active line; returns
 * the lines ended with their variant and the holds ended. */
export async function endHeldLines(
  db: Executor,
  by: { lineIds?: number[]; holdIds?: number[] },
  cause: HoldEnd,
): Promise<{ lines: { id: number; hold_id: number; variant_id: number; sku: string | null; quantity: string }[]; holds: Hold[] }> {
  const filter = by.lineIds ? sql`id = ANY(${by.lineIds}::bigint[])` : sql`hold_id = ANY(${by.holdIds ?? []}::bigint[])`;
  const lines = (
    await sql<{ id: number; hold_id: number; variant_id: number; sku: string | null; quantity: string }>`
    UPDATE channel_hold_lines SET ended_at = now(), end_cause = ${cause}
    WHERE ended_at IS NULL AND ${filter}
    RETURNING id, hold_id, variant_id, sku, quantity::text AS quantity`.execute(db)
  ).rows;
  const holdIds = [...new Set([...lines.map((l) => l.hold_id), ...(by.holdIds ?? [])])];
  const holds = holdIds.length
    ? (
        await sql<Hold>`
    UPDATE channel_holds h SET ended_at = now(), end_cause = ${cause}
    WHERE h.id = ANY(${holdIds}::bigint[]) AND h.ended_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM channel_hold_lines l WHERE l.hold_id = h.id AND l.ended_at IS NULL)
    RETURNING ${HOLD_COLUMNS}`.execute(db)
      ).rows
    : [];
  return { lines, holds };
}

/** Records the service's order of a hold: its id, and when known the time its committed stock includes it. */
export async function setHoldOrder(db: Executor, holdId: number, orderId: number, orderAt: Date | null): Promise<void> {
  await sql`UPDATE channel_holds SET order_id = ${orderId}, order_at = coalesce(${orderAt}, order_at) WHERE id = ${holdId}`.execute(db);
}

type HoldKey = Pick<Hold, 'id' | 'connection_id' | 'channel' | 'channel_order_id'>;

/** Active holds that expired (at most `limit`). */
export async function expiredHolds(db: Executor, limit: number): Promise<HoldKey[]> {
  return (
    await sql<HoldKey>`SELECT id, connection_id, channel, channel_order_id FROM channel_holds
    WHERE ended_at IS NULL AND expires_at <= now() ORDER BY expires_at LIMIT ${limit}`.execute(db)
  ).rows;
}

/** Active holds whose channel order is known at the service (recorded, or through the import mapping). */
export async function holdsWithOrders(db: Executor, limit: number): Promise<HoldKey[]> {
  return (
    await sql<HoldKey>`
    SELECT h.id, h.connection_id, h.channel, h.channel_order_id FROM channel_holds h
    WHERE h.ended_at IS NULL AND (h.order_id IS NOT NULL OR EXISTS (SELECT 1 FROM channel_orders m
      WHERE m.connection_id = h.connection_id AND m.channel = h.channel AND m.channel_order_id = h.channel_order_id))
    ORDER BY h.id LIMIT ${limit}`.execute(db)
  ).rows;
}

/** Retention: deletes at most `limit` holds that ended longer ago than `olderThanSeconds`; returns how many went. */
export async function pruneHolds(db: Executor, olderThanSeconds: number, limit: number): Promise<number> {
  const r = await sql`DELETE FROM channel_holds WHERE id = ANY(ARRAY(
    SELECT id FROM channel_holds WHERE ended_at < now() - make_interval(secs => ${olderThanSeconds}) ORDER BY ended_at LIMIT ${limit}))`.execute(
    db,
  );
  return Number(r.numAffectedRows ?? 0);
}
