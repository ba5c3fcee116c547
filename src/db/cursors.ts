// The cursors store: every statement on sync_cursors (per connection and resource: the newest updated_at a
// sweep read, and when it last swept). The sweep itself is sync/sweep.ts.
import { sql, type Selectable } from 'kysely';
import type { Executor } from './index.ts';
import type { SyncCursorsTable } from './schema.ts';

export type SyncCursor = Selectable<SyncCursorsTable>;

/** The ids of connections swept at least once. */
export async function sweptConnections(db: Executor): Promise<Set<number>> {
  return new Set((await db.selectFrom('sync_cursors').select('connection_id').distinct().execute()).map((r) => r.connection_id));
}

/** The cursors of these connections, by resource. */
export async function listCursors(db: Executor, connectionIds: number[]): Promise<SyncCursor[]> {
  if (!connectionIds.length) return [];
  return db.selectFrom('sync_cursors').selectAll().where('connection_id', 'in', connectionIds).orderBy('resource').execute();
}

/**
 * What the latest sweeps of each connection found wrong (its resources' last_drift summed), for the connections
 * where they found anything: one aggregate, where a read of every cursor and a sum per connection in the process
 * cost a second of CPU at 5,000 connections.
 */
export async function driftByConnection(db: Executor): Promise<Map<number, number>> {
  const rows = await db
    .selectFrom('sync_cursors')
    .select(['connection_id', sql<number>`sum(last_drift)::int`.as('drift')])
    .groupBy('connection_id')
    .having(sql`sum(last_drift)`, '>', 0)
    .execute();
  return new Map(rows.map((r) => [r.connection_id, Number(r.drift)]));
}

/** Records a sweep of a resource; the cursor only moves forward. */
export async function saveCursor(
  db: Executor,
  connectionId: number,
  resource: string,
  newest: string | null,
  full: boolean,
  drift: number,
): Promise<void> {
  await sql`
    INSERT INTO sync_cursors (connection_id, resource, cursor, last_sweep_at, last_full_sweep_at, last_drift)
    VALUES (${connectionId}, ${resource}, ${newest}::timestamptz, now(), ${full ? new Date() : null}, ${drift})
    ON CONFLICT (connection_id, resource) DO UPDATE SET
      cursor = GREATEST(sync_cursors.cursor, excluded.cursor), last_sweep_at = now(),
      last_full_sweep_at = COALESCE(excluded.last_full_sweep_at, sync_cursors.last_full_sweep_at), last_drift = excluded.last_drift`.execute(
    db,
  );
}
