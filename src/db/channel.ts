// The channel store: every statement on channel_quantities, channel_quantity_changes (and channel_changes_pruned,
// how far retention has deleted them), channel_rules and channel_rules_applied. What a channel quantity is (the rules, the recomputation) is stock/; this module only
// reads and writes rows.
import { sql, type Selectable } from 'kysely';
import type { Executor } from './index.ts';
import type { ChannelQuantityChangesTable, ChannelRulesTable } from './schema.ts';

/** A recorded change of a channel quantity, as the feed and the channel-stock queue carry it (`at` as ISO text). */
export type ChannelChange = Pick<
  Selectable<ChannelQuantityChangesTable>,
  | 'id'
  | 'connection_id'
  | 'variant_id'
  | 'sku'
  | 'quantity'
  | 'tracked'
  | 'backorderable'
  | 'before_quantity'
  | 'before_tracked'
  | 'cause'
  | 'delivery_id'
> & { at: string };

/** A change as the feed gives it: the recorded change with its connection's name. */
export type FeedItem = Omit<ChannelChange, 'before_tracked'> & { connection: string };

// Channel-feed ids must become visible in order: writers of changes serialise on this lock.
const FEED_LOCK = 727_030;

export async function getChannelRules(db: Executor, connectionId: number): Promise<Selectable<ChannelRulesTable> | undefined> {
  return db.selectFrom('channel_rules').selectAll().where('connection_id', '=', connectionId).executeTakeFirst();
}

export interface StoredQuantity {
  variant_id: number;
  quantity: string | null;
  tracked: boolean;
  backorderable: boolean;
  stock: unknown;
}

export async function storedQuantities(db: Executor, connectionId: number, variantIds: number[]): Promise<StoredQuantity[]> {
  return (
    await sql<StoredQuantity>`
    SELECT variant_id, quantity::text AS quantity, tracked, backorderable, stock FROM channel_quantities
    WHERE connection_id = ${connectionId} AND variant_id = ANY(${variantIds}::bigint[])`.execute(db)
  ).rows;
}

/** Appends changes (rows of channel_quantity_changes) under the feed lock; returns them as recorded. */
export async function recordChanges(db: Executor, changes: any[]): Promise<ChannelChange[]> {
  if (!changes.length) return [];
  await sql`SELECT pg_advisory_xact_lock(${FEED_LOCK})`.execute(db);
  return (
    await db
      .insertInto('channel_quantity_changes')
      .values(changes)
      .returning([
        'id',
        'connection_id',
        'variant_id',
        'sku',
        'quantity',
        'tracked',
        'backorderable',
        'before_quantity',
        'before_tracked',
        'cause',
        'delivery_id',
        'at',
      ])
      .execute()
  ).map((c) => ({ ...c, at: c.at.toISOString() }));
}

/** Writes quantities; a row without last_change_id keeps the one stored. */
export async function saveQuantities(db: Executor, rows: any[]): Promise<void> {
  // rows go through jsonb_to_recordset as one JSON document
  await sql`
    INSERT INTO channel_quantities AS c (connection_id, variant_id, sku, status, quantity, tracked, backorderable, bundle, stock, last_change_id, computed_at)
    SELECT connection_id, variant_id, sku, status, quantity, tracked, backorderable, bundle, stock, last_change_id, now()
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS x(connection_id bigint, variant_id bigint, sku text, status text,
      quantity numeric, tracked boolean, backorderable boolean, bundle boolean, stock jsonb, last_change_id bigint)
    ON CONFLICT (connection_id, variant_id) DO UPDATE SET sku = excluded.sku, status = excluded.status, quantity = excluded.quantity,
      tracked = excluded.tracked, backorderable = excluded.backorderable, bundle = excluded.bundle, stock = excluded.stock,
      last_change_id = COALESCE(excluded.last_change_id, c.last_change_id), computed_at = now()`.execute(db);
}

/** The fingerprint of the rules the stored quantities were computed with. */
export async function appliedRules(db: Executor, connectionId: number): Promise<string | undefined> {
  const row = await db
    .selectFrom('channel_rules_applied')
    .select('fingerprint')
    .where('connection_id', '=', connectionId)
    .executeTakeFirst();
  return row?.fingerprint;
}

export async function saveAppliedRules(db: Executor, connectionId: number, fingerprint: string): Promise<void> {
  await db
    .insertInto('channel_rules_applied')
    .values({ connection_id: connectionId, fingerprint })
    .onConflict((oc) => oc.column('connection_id').doUpdateSet({ fingerprint, applied_at: new Date() }))
    .execute();
}

/** Changes after the id `since`, oldest first; one more than `limit` tells the caller there are more. */
export async function changesAfter(db: Executor, opts: { since: number; limit: number; connection?: string | null }): Promise<FeedItem[]> {
  const rows = await sql<FeedItem>`
    SELECT c.id, c.at, n.name AS connection, c.connection_id, c.variant_id, c.sku, c.quantity::text AS quantity, c.tracked,
      c.backorderable, c.before_quantity::text AS before_quantity, c.cause, c.delivery_id
    FROM channel_quantity_changes c JOIN connections n ON n.id = c.connection_id
    WHERE c.id > ${opts.since} ${opts.connection ? sql`AND n.name = ${opts.connection}` : sql``}
    ORDER BY c.id LIMIT ${opts.limit + 1}`.execute(db);
  return rows.rows;
}

/** The newest change id retention has deleted (every change up to it is gone), 0 when none was. */
export async function prunedThrough(db: Executor): Promise<number> {
  const row = await db.selectFrom('channel_changes_pruned').select('through_id').executeTakeFirst();
  return Number(row?.through_id ?? 0);
}

/**
 * Retention: deletes at most `limit` of the oldest changes, up to the first one not older than
 * `olderThanSeconds`, and records the newest id deleted, all in one short statement; returns how many went.
 * Only a prefix of the ids ever goes, so "every change up to through_id is gone, none after it" holds and the
 * feed can tell a caller exactly when its cursor is older than what is kept.
 */
export async function pruneChannelChanges(db: Executor, olderThanSeconds: number, limit: number): Promise<number> {
  const r = await sql<{ n: number }>`
    WITH oldest AS MATERIALIZED (SELECT id, at FROM channel_quantity_changes ORDER BY id LIMIT ${limit}),
    stop AS (SELECT min(id) AS id FROM oldest WHERE at >= now() - make_interval(secs => ${olderThanSeconds})),
    gone AS (
      DELETE FROM channel_quantity_changes
       WHERE id = ANY(ARRAY(SELECT id FROM oldest WHERE id < coalesce((SELECT id FROM stop), 9223372036854775807)))
      RETURNING id),
    mark AS (
      INSERT INTO channel_changes_pruned (through_id) SELECT max(id) FROM gone HAVING count(*) > 0
      ON CONFLICT (one) DO UPDATE SET through_id = greatest(channel_changes_pruned.through_id, excluded.through_id), pruned_at = now())
    SELECT count(*)::int AS n FROM gone`.execute(db);
  return r.rows[0]?.n ?? 0;
}

/** One variant's channel quantity, for the console. */
export async function quantityOf(db: Executor, connectionId: number, variantId: number) {
  return (
    await sql<{ quantity: string | null; tracked: boolean; backorderable: boolean; bundle: boolean; computed_at: Date }>`
    SELECT quantity::text, tracked, backorderable, bundle, computed_at FROM channel_quantities
     WHERE connection_id = ${connectionId} AND variant_id = ${variantId}`.execute(db)
  ).rows[0];
}

/** One variant's recorded changes, newest first, for the console. */
export async function changesOf(db: Executor, connectionId: number, variantId: number, limit: number) {
  return (
    await sql<{
      id: number;
      at: Date;
      before_quantity: string | null;
      quantity: string | null;
      tracked: boolean;
      cause: string;
      delivery_id: string | null;
      delivery_row_id: number | null;
      job_id: string | null;
      detail: unknown;
    }>`
    SELECT id, at, before_quantity::text, quantity::text, tracked, cause, delivery_id, delivery_row_id, job_id, detail
      FROM channel_quantity_changes WHERE connection_id = ${connectionId} AND variant_id = ${variantId}
     ORDER BY id DESC LIMIT ${limit}`.execute(db)
  ).rows;
}

/** Variants with their channel quantity, by connection name and SKU (the `stock` command). */
export async function channelStockReport(db: Executor, opts: { connection?: string | null; sku?: string | null; limit?: number }) {
  return (
    await sql<{
      connection: string;
      variant_id: number;
      sku: string | null;
      status: string | null;
      channel_quantity: string | null;
      backorderable: boolean | null;
      keep_selling: boolean;
    }>`
    SELECT n.name AS connection, v.id AS variant_id, v.sku, v.status, q.quantity::text AS channel_quantity, q.backorderable, v.keep_selling
    FROM variants v JOIN connections n ON n.id = v.connection_id
    LEFT JOIN channel_quantities q ON q.connection_id = v.connection_id AND q.variant_id = v.id
    WHERE true ${opts.connection ? sql`AND n.name = ${opts.connection}` : sql``} ${opts.sku ? sql`AND v.sku = ${opts.sku}` : sql``}
    ORDER BY n.name, v.sku NULLS LAST, v.id ${opts.limit ? sql`LIMIT ${opts.limit}` : sql``}`.execute(db)
  ).rows;
}
