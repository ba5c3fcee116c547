// The channel store: every statement on channels, channel_overrides, channel_quantities, channel_quantity_changes
// (and channel_changes_pruned, how far retention has deleted them); holds have theirs in holds.ts.
// What a channel quantity is (the rules, the recomputation, when a hold ends) is stock/; this module only reads
// and writes rows.
import { type RawBuilder, sql, type Selectable } from 'kysely';
import { prunedThroughOf, prunePrefix, QUANTITY_CHANGES } from './feed-retention.ts';
import type { Executor } from './index.ts';
import type { ChannelOverridesTable, ChannelQuantityChangesTable, ChannelsTable } from './schema.ts';
import { traceparentOf } from '../telemetry/spans.ts';

/** A recorded change of a channel quantity, as the feeds and the channel deliveries carry it (`at` as ISO text). */
export type ChannelChange = Pick<
  Selectable<ChannelQuantityChangesTable>,
  | 'id'
  | 'connection_id'
  | 'channel_id'
  | 'variant_id'
  | 'sku'
  | 'quantity'
  | 'tracked'
  | 'backorderable'
  | 'listed'
  | 'before_quantity'
  | 'before_tracked'
  | 'cause'
  | 'delivery_id'
> & { at: string; channel: string };

/** A change as the feed gives it: the recorded change with its connection's name. */
export type FeedItem = Omit<ChannelChange, 'before_tracked'> & { connection: string };

export type Channel = Selectable<ChannelsTable>;
export type ChannelOverride = Selectable<ChannelOverridesTable>;

// The feed's lock (advisory key 727030) is taken by the trigger of migration 0190, which gives changes their ids at
// commit (recordChanges below): no other lock may use that key.

const CHANNEL_COLUMNS = sql`c.id, c.connection_id, c.name, c.location_ids, c.buffer_units::text AS buffer_units,
  c.buffer_percent::text AS buffer_percent, c.cap_max_online, c.adopt_settings, c.applied_rules, c.created_at, c.updated_at`;

// ---- channels

/** The channels of a connection, oldest first. */
export async function channelsOf(db: Executor, connectionId: number): Promise<Channel[]> {
  return (await sql<Channel>`SELECT ${CHANNEL_COLUMNS} FROM channels c WHERE c.connection_id = ${connectionId} ORDER BY c.id`.execute(db))
    .rows;
}

/**
 * Every active connection with its channels, in one statement (the worker's rules check runs over all of them):
 * `channels` is empty for a connection that has none yet.
 */
export async function activeConnectionsChannels(db: Executor): Promise<{ id: number; name: string; channels: Channel[] }[]> {
  const { rows } = await sql<Channel & { connection: string; connection_ref: number }>`
    SELECT n.id AS connection_ref, n.name AS connection, ${CHANNEL_COLUMNS}
    FROM connections n LEFT JOIN channels c ON c.connection_id = n.id
    WHERE n.status = 'active' ORDER BY n.id, c.id`.execute(db);
  const out = new Map<number, { id: number; name: string; channels: Channel[] }>();
  for (const { connection, connection_ref, ...channel } of rows) {
    const id = Number(connection_ref);
    const entry = out.get(id) ?? { id, name: connection, channels: [] };
    out.set(id, entry);
    if (channel.id !== null) entry.channels.push(channel);
  }
  return [...out.values()];
}

/** Channels with their connection's name and counts, for listings; filtered by connection and/or name. */
export async function listChannels(db: Executor, opts: { connectionId?: number; name?: string } = {}) {
  return (
    await sql<Channel & { connection: string; overrides: number; active_holds: number }>`
    SELECT ${CHANNEL_COLUMNS}, n.name AS connection,
      (SELECT count(*)::int FROM channel_overrides o WHERE o.channel_id = c.id) AS overrides,
      (SELECT count(*)::int FROM channel_holds h WHERE h.connection_id = c.connection_id AND h.channel = c.name AND h.ended_at IS NULL) AS active_holds
    FROM channels c JOIN connections n ON n.id = c.connection_id
    WHERE true ${opts.connectionId !== undefined ? sql`AND c.connection_id = ${opts.connectionId}` : sql``}
      ${opts.name !== undefined ? sql`AND c.name = ${opts.name}` : sql``}
    ORDER BY n.name, c.id`.execute(db)
  ).rows;
}

/**
 * A connection's first channel, `default`, from the settings' rules: made once, when the connection has no
 * channel yet (a connection always keeps one: the last cannot be removed).
 */
export async function ensureDefaultChannel(
  db: Executor,
  connectionId: number,
  seed: { location_ids: number[] | null; buffer_units: string },
): Promise<void> {
  await sql`INSERT INTO channels (connection_id, name, location_ids, buffer_units)
    SELECT ${connectionId}, 'default', ${seed.location_ids}::bigint[], ${seed.buffer_units}::numeric
    WHERE NOT EXISTS (SELECT 1 FROM channels WHERE connection_id = ${connectionId})
    ON CONFLICT (connection_id, name) DO NOTHING`.execute(db);
}

/** Fills in what migration 0130 could not know from the settings; returns the channels it changed. */
export async function adoptSettings(
  db: Executor,
  connectionId: number,
  seed: { location_ids: number[] | null; buffer_units: string },
): Promise<number> {
  const r = await sql`UPDATE channels SET
      location_ids = CASE WHEN 'locations' = ANY(adopt_settings) THEN ${seed.location_ids}::bigint[] ELSE location_ids END,
      buffer_units = CASE WHEN 'buffer' = ANY(adopt_settings) THEN ${seed.buffer_units}::numeric ELSE buffer_units END,
      adopt_settings = '{}', updated_at = now()
    WHERE connection_id = ${connectionId} AND adopt_settings <> '{}'`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

export type ChannelRulesRow = Pick<Channel, 'location_ids' | 'buffer_units' | 'buffer_percent' | 'cap_max_online'>;

export async function insertChannel(db: Executor, connectionId: number, name: string, rules: ChannelRulesRow): Promise<Channel> {
  const row = await db
    .insertInto('channels')
    .values({
      connection_id: connectionId,
      name,
      location_ids: rules.location_ids,
      buffer_units: rules.buffer_units,
      buffer_percent: rules.buffer_percent,
      cap_max_online: rules.cap_max_online,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return (await channelById(db, row.id))!;
}

export async function channelById(db: Executor, id: number): Promise<Channel | undefined> {
  return (await sql<Channel>`SELECT ${CHANNEL_COLUMNS} FROM channels c WHERE c.id = ${id}`.execute(db)).rows[0];
}

/** Changes a channel's rules; the stored quantities follow them once recomputed (applied_rules). */
export async function updateChannelRules(db: Executor, id: number, rules: ChannelRulesRow): Promise<Channel> {
  await db
    .updateTable('channels')
    .set({
      location_ids: rules.location_ids,
      buffer_units: rules.buffer_units,
      buffer_percent: rules.buffer_percent,
      cap_max_online: rules.cap_max_online,
      adopt_settings: [],
      updated_at: new Date(),
    })
    .where('id', '=', id)
    .execute();
  return (await channelById(db, id))!;
}

/** Removes a channel with its quantities, changes and overrides. */
export async function deleteChannel(db: Executor, id: number): Promise<void> {
  await db.deleteFrom('channels').where('id', '=', id).execute();
}

export async function saveAppliedRules(db: Executor, channelId: number, fingerprint: string): Promise<void> {
  await db.updateTable('channels').set({ applied_rules: fingerprint }).where('id', '=', channelId).execute();
}

// ---- overrides

export async function overridesOf(db: Executor, channelIds: number[], skus: string[]): Promise<ChannelOverride[]> {
  if (!channelIds.length || !skus.length) return [];
  return (await overridesQuery(channelIds, sql`SELECT unnest(${skus}::text[])`).execute(db)).rows;
}

/** The overrides of these SKUs (a query of one column naming them) in the channels. */
export const overridesQuery = (channelIds: number[], skus: RawBuilder<unknown>) => sql<ChannelOverride>`
    SELECT channel_id, sku, mode, quantity::text AS quantity, buffer_units::text AS buffer_units,
      buffer_percent::text AS buffer_percent, updated_at
    FROM channel_overrides WHERE channel_id = ANY(${channelIds}::bigint[]) AND sku IN (${skus})`;

/** A page of a channel's overrides in SKU order: at most `limit`, after the SKU `after` when given. */
export async function listOverrides(
  db: Executor,
  channelId: number,
  page: { after?: string; limit?: number } = {},
): Promise<ChannelOverride[]> {
  return (
    await sql<ChannelOverride>`
    SELECT channel_id, sku, mode, quantity::text AS quantity, buffer_units::text AS buffer_units,
      buffer_percent::text AS buffer_percent, updated_at
    FROM channel_overrides WHERE channel_id = ${channelId} AND sku > ${page.after ?? ''}
    ORDER BY sku LIMIT ${page.limit ?? OVERRIDES_PAGE}`.execute(db)
  ).rows;
}

/** Overrides a page shows at most (3,000 made a page of 1.35 MB). */
export const OVERRIDES_PAGE = 500;

export async function saveOverride(db: Executor, o: Omit<ChannelOverride, 'updated_at'>): Promise<void> {
  const values = { mode: o.mode, quantity: o.quantity, buffer_units: o.buffer_units, buffer_percent: o.buffer_percent };
  await db
    .insertInto('channel_overrides')
    .values({ channel_id: o.channel_id, sku: o.sku, ...values })
    .onConflict((oc) => oc.columns(['channel_id', 'sku']).doUpdateSet({ ...values, updated_at: new Date() }))
    .execute();
}

/** Removes an override; whether there was one. */
export async function deleteOverride(db: Executor, channelId: number, sku: string): Promise<boolean> {
  const r = await db.deleteFrom('channel_overrides').where('channel_id', '=', channelId).where('sku', '=', sku).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

// ---- quantities and changes

/** A stored quantity; `Stock`: what the caller knows of its jsonb `stock` (the quantity engine's snapshot). */
export interface StoredQuantity<Stock = unknown> {
  channel_id: number;
  variant_id: number;
  quantity: string | null;
  tracked: boolean;
  backorderable: boolean;
  listed: boolean;
  stock: Stock;
}

/**
 * The stored quantities of the variants in the channels, locked until the caller's transaction ends: a
 * recomputation that follows reads the stock and holds after any other one of the same rows has committed, so
 * two writers (a mirror write and a new hold) never overwrite each other with a figure missing the other's part.
 * Locked in key order, so two of them never deadlock.
 */
export async function lockQuantities<Stock = unknown>(
  db: Executor,
  channelIds: number[],
  variantIds: number[],
): Promise<StoredQuantity<Stock>[]> {
  return (
    await sql<StoredQuantity<Stock>>`
    SELECT channel_id, variant_id, quantity::text AS quantity, tracked, backorderable, listed, stock FROM channel_quantities
    WHERE channel_id = ANY(${channelIds}::bigint[]) AND variant_id = ANY(${variantIds}::bigint[])
    ORDER BY channel_id, variant_id FOR UPDATE`.execute(db)
  ).rows;
}

export type NewChange = Omit<ChannelChange, 'id' | 'at' | 'traceparent'> & {
  delivery_row_id: number | null;
  job_id: string | null;
  detail: string;
};

/**
 * Records changes in the caller's transaction. They enter the feed (channel_quantity_changes, with their ids) when
 * it commits: staged now, moved by a deferred trigger under the feed's lock (migration 0190), so ids become visible
 * in order while the lock is held only for the move and the commit, not for the rest of the caller's transaction.
 */
export async function recordChanges(db: Executor, changes: NewChange[]): Promise<void> {
  if (changes.length)
    await db
      .insertInto('channel_changes_staged')
      .values(changes.map(({ channel: _, ...c }) => ({ ...c, traceparent: traceparentOf() })))
      .execute();
}

/** A channel quantity as the recomputation writes it (`stock`: what it was computed from, stored as jsonb). */
export interface QuantityRow {
  connection_id: number;
  channel_id: number;
  variant_id: number;
  sku: string | null;
  status: string | null;
  quantity: string | null;
  tracked: boolean;
  backorderable: boolean;
  listed: boolean;
  bundle: boolean;
  stock: unknown;
}

/** Writes quantities; last_change_id is the feed's to set (recordChanges), at commit. */
export async function saveQuantities(db: Executor, rows: QuantityRow[]): Promise<void> {
  // rows go through jsonb_to_recordset as one JSON document
  await sql`
    INSERT INTO channel_quantities AS c (connection_id, channel_id, variant_id, sku, status, quantity, tracked, backorderable, listed, bundle, stock, computed_at)
    SELECT connection_id, channel_id, variant_id, sku, status, quantity, tracked, backorderable, listed, bundle, stock, now()
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS x(connection_id bigint, channel_id bigint, variant_id bigint, sku text, status text,
      quantity numeric, tracked boolean, backorderable boolean, listed boolean, bundle boolean, stock jsonb)
    ON CONFLICT (channel_id, variant_id) DO UPDATE SET sku = excluded.sku, status = excluded.status, quantity = excluded.quantity,
      tracked = excluded.tracked, backorderable = excluded.backorderable, listed = excluded.listed, bundle = excluded.bundle,
      stock = excluded.stock, computed_at = now()`.execute(db);
}

/**
 * Changes after the id `since`, oldest first; one more than `limit` tells the caller there are more. With
 * `channelId`, that channel's alone: an index range scan of channel_quantity_changes_channel (channel_id, id),
 * as cheap at the end of a long history as at its start (the per-channel feed, and a sender's "after id X").
 */
export async function changesAfter(
  db: Executor,
  opts: { since: number; limit: number; connection?: string | null; channelId?: number },
): Promise<FeedItem[]> {
  const rows = await sql<FeedItem>`
    SELECT c.id, c.at, n.name AS connection, c.connection_id, c.channel_id, ch.name AS channel, c.variant_id, c.sku,
      c.quantity::text AS quantity, c.tracked, c.backorderable, c.listed, c.before_quantity::text AS before_quantity, c.cause, c.delivery_id
    FROM channel_quantity_changes c JOIN connections n ON n.id = c.connection_id JOIN channels ch ON ch.id = c.channel_id
    WHERE c.id > ${opts.since} ${opts.connection ? sql`AND n.name = ${opts.connection}` : sql``}
      ${opts.channelId !== undefined ? sql`AND c.channel_id = ${opts.channelId}` : sql``}
    ORDER BY c.id LIMIT ${opts.limit + 1}`.execute(db);
  return rows.rows;
}

/** The newest change id retention has deleted (every change up to it is gone), 0 when none was. */
export const prunedThrough = (db: Executor): Promise<number> => prunedThroughOf(db, QUANTITY_CHANGES);

/** Retention of the changes (feed-retention.ts: only a prefix of ids goes, the newest deleted is recorded). */
export const pruneChannelChanges = (db: Executor, olderThanSeconds: number, limit: number): Promise<number> =>
  prunePrefix(db, QUANTITY_CHANGES, olderThanSeconds, limit);

/** A variant's quantity in each channel of its connection, oldest channel first. */
export async function quantitiesOf(db: Executor, connectionId: number, variantId: number) {
  return (
    await sql<{
      channel_id: number;
      channel: string;
      quantity: string | null;
      tracked: boolean;
      backorderable: boolean;
      listed: boolean;
      bundle: boolean;
      // biome-ignore lint/suspicious/noExplicitAny: the snapshot's shape is the quantity engine's (Snapshot, src/stock/recompute.ts), which this store below it cannot name; its one reader, src/stock/variant-routes.ts, reads its why
      stock: any;
      computed_at: Date;
    }>`
    SELECT q.channel_id, ch.name AS channel, q.quantity::text AS quantity, q.tracked, q.backorderable, q.listed, q.bundle, q.stock, q.computed_at
    FROM channel_quantities q JOIN channels ch ON ch.id = q.channel_id
    WHERE q.connection_id = ${connectionId} AND q.variant_id = ${variantId} ORDER BY ch.id`.execute(db)
  ).rows;
}

/** One variant's quantity in one channel (by name; default: `default`, or the oldest channel), for the console. */
export async function quantityOf(db: Executor, connectionId: number, variantId: number, channel?: string) {
  const all = await quantitiesOf(db, connectionId, variantId);
  return all.find((q) => q.channel === (channel ?? 'default')) ?? (channel ? undefined : all[0]);
}

/** One variant's recorded changes in every channel (or one), newest first, for the console. */
export async function changesOf(db: Executor, connectionId: number, variantId: number, limit: number, channelId?: number) {
  return (
    await sql<{
      id: number;
      at: Date;
      channel: string;
      before_quantity: string | null;
      quantity: string | null;
      tracked: boolean;
      listed: boolean;
      cause: string;
      delivery_id: string | null;
      delivery_row_id: number | null;
      job_id: string | null;
      detail: Record<string, unknown> | null;
    }>`
    SELECT c.id, c.at, ch.name AS channel, c.before_quantity::text, c.quantity::text, c.tracked, c.listed, c.cause, c.delivery_id,
      c.delivery_row_id, c.job_id, c.detail
      FROM channel_quantity_changes c JOIN channels ch ON ch.id = c.channel_id
     WHERE c.connection_id = ${connectionId} AND c.variant_id = ${variantId}
       ${channelId !== undefined ? sql`AND c.channel_id = ${channelId}` : sql``}
     ORDER BY c.id DESC LIMIT ${limit}`.execute(db)
  ).rows;
}

/** Variants with their quantity per channel, by connection name and SKU (the `stock` command). */
export async function channelStockReport(db: Executor, opts: { connection?: string | null; sku?: string | null; limit?: number }) {
  return (
    await sql<{
      connection: string;
      variant_id: number;
      sku: string | null;
      status: string | null;
      keep_selling: boolean;
      channels: { channel: string; quantity: string | null; backorderable: boolean; listed: boolean }[] | null;
    }>`
    SELECT n.name AS connection, v.id AS variant_id, v.sku, v.status, v.keep_selling,
      (SELECT json_agg(json_build_object('channel', ch.name, 'quantity', q.quantity::text, 'backorderable', q.backorderable,
              'listed', q.listed) ORDER BY ch.id)
         FROM channel_quantities q JOIN channels ch ON ch.id = q.channel_id
        WHERE q.connection_id = v.connection_id AND q.variant_id = v.id) AS channels
    FROM variants v JOIN connections n ON n.id = v.connection_id
    WHERE true ${opts.connection ? sql`AND n.name = ${opts.connection}` : sql``} ${opts.sku ? sql`AND v.sku = ${opts.sku}` : sql``}
    ORDER BY n.name, v.sku NULLS LAST, v.id ${opts.limit ? sql`LIMIT ${opts.limit}` : sql``}`.execute(db)
  ).rows;
}

/** The newest change id of a channel (0: none yet). */
export async function lastChangeId(db: Executor, channelId: number): Promise<number> {
  const r = await sql<{ id: number | null }>`SELECT max(id) AS id FROM channel_quantity_changes WHERE channel_id = ${channelId}`.execute(
    db,
  );
  return Number(r.rows[0]?.id ?? 0);
}

/** The connection's and the channel's names. */
export async function channelNames(db: Executor, channelId: number): Promise<{ connection: string; channel: string }> {
  const { rows } = await sql<{ connection: string; channel: string }>`
    SELECT n.name AS connection, c.name AS channel FROM channels c JOIN connections n ON n.id = c.connection_id WHERE c.id = ${channelId}`.execute(
    db,
  );
  return rows[0] ?? { connection: '', channel: '' };
}

/**
 * The trace contexts of the writes that made a range of a channel's changes, oldest first (at most 33: a span's
 * parent and its links). Read only when tracing: the channel's POST continues the trace of the mirror write that
 * made its first change, which holds the delivery, the drain and its read. A change made before migration 0350
 * kept only its delivery's.
 */
export async function changeTraceparents(db: Executor, channelId: number, first: number, through: number): Promise<string[]> {
  const r = await sql<{ traceparent: string }>`
    SELECT tp AS traceparent FROM (
      SELECT coalesce(c.traceparent, d.traceparent) AS tp, c.id FROM channel_quantity_changes c
        LEFT JOIN webhook_deliveries d ON d.id = c.delivery_row_id AND c.traceparent IS NULL
       WHERE c.channel_id = ${channelId} AND c.id BETWEEN ${first} AND ${through}) x
    WHERE tp IS NOT NULL GROUP BY tp ORDER BY min(id) LIMIT 33`.execute(db);
  return r.rows.map((x) => x.traceparent);
}
