// Retention of a feed read by cursor (channel quantity changes, channel order events): only a prefix of ids ever
// goes, and the newest id deleted is recorded in the feed's mark table, so "every id up to through_id is gone, none
// after it" holds and a reader can be told exactly when its cursor is older than what is kept (410).
import { sql } from 'kysely';
import type { Executor } from './index.ts';

export interface Feed {
  table: 'channel_quantity_changes' | 'channel_order_events';
  /** The column retention ages rows by. */
  at: 'at' | 'recorded_at';
  mark: 'channel_changes_pruned' | 'channel_order_events_pruned';
}

export const QUANTITY_CHANGES: Feed = { table: 'channel_quantity_changes', at: 'at', mark: 'channel_changes_pruned' };
export const ORDER_EVENTS: Feed = { table: 'channel_order_events', at: 'recorded_at', mark: 'channel_order_events_pruned' };

/** The newest id retention deleted from the feed (0: none). */
export async function prunedThroughOf(db: Executor, feed: Feed): Promise<number> {
  const row = await db.selectFrom(feed.mark).select('through_id').executeTakeFirst();
  return Number(row?.through_id ?? 0);
}

/**
 * Deletes at most `limit` of the oldest rows, up to the first one not older than `olderThanSeconds`, and records
 * the newest id deleted, all in one short statement; returns how many went.
 */
export async function prunePrefix(db: Executor, feed: Feed, olderThanSeconds: number, limit: number): Promise<number> {
  const table = sql.table(feed.table);
  const mark = sql.table(feed.mark);
  const at = sql.ref(feed.at);
  const r = await sql<{ n: number }>`
    WITH oldest AS MATERIALIZED (SELECT id, ${at} AS at FROM ${table} ORDER BY id LIMIT ${limit}),
    stop AS (SELECT min(id) AS id FROM oldest WHERE at >= now() - make_interval(secs => ${olderThanSeconds})),
    gone AS (
      DELETE FROM ${table}
       WHERE id = ANY(ARRAY(SELECT id FROM oldest WHERE id < coalesce((SELECT id FROM stop), 9223372036854775807)))
      RETURNING id),
    marked AS (
      INSERT INTO ${mark} (through_id) SELECT max(id) FROM gone HAVING count(*) > 0
      ON CONFLICT (one) DO UPDATE SET through_id = greatest(${mark}.through_id, excluded.through_id), pruned_at = now())
    SELECT count(*)::int AS n FROM gone`.execute(db);
  return r.rows[0]?.n ?? 0;
}
