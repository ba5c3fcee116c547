// The audit_log store (migration 0220): entries are inserted and read, never updated; retention is the one delete.
// The database holds it to that (migration 0310).
// Who writes them and what they hold: src/console/audit.ts.
import { type Insertable, type Selectable, sql } from 'kysely';
import type { Executor } from './index.ts';
import type { AuditLogTable } from './schema.ts';

export type AuditEntry = Selectable<AuditLogTable>;
export type NewAuditEntry = Insertable<AuditLogTable>;

export async function insertAudit(db: Executor, entry: NewAuditEntry): Promise<void> {
  await db.insertInto('audit_log').values(entry).execute();
}

export interface AuditFilter {
  /** Entries after this id (the export cursor). */
  since?: number;
  /** Entries before this id (the console's older pages). */
  before?: number;
  actor?: string;
  /** A part of the action, e.g. "channels" or "PATCH". */
  action?: string;
  connection?: string;
  limit: number;
}

/** Entries matching the filter: oldest first after `since` (an export), else newest first. */
export async function listAudit(db: Executor, f: AuditFilter): Promise<AuditEntry[]> {
  let q = db.selectFrom('audit_log').selectAll();
  if (f.since !== undefined) q = q.where('id', '>', f.since);
  if (f.before !== undefined) q = q.where('id', '<', f.before);
  if (f.actor) q = q.where('actor', '=', f.actor);
  if (f.action) q = q.where('action', 'ilike', `%${f.action.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  if (f.connection) q = q.where('connection', '=', f.connection);
  return q
    .orderBy('id', f.since !== undefined ? 'asc' : 'desc')
    .limit(f.limit)
    .execute();
}

/**
 * Retention: at most `limit` entries older than `olderThanSeconds`; returns how many went. The table's trigger
 * refuses any other delete: the cut-off is named to it in a setting local to this transaction (`db` must not be a
 * transaction already).
 */
export async function pruneAudit(db: Executor, olderThanSeconds: number, limit: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await sql`SELECT set_config('commerce_sync.audit_cutoff', (now() - make_interval(secs => ${olderThanSeconds}))::text, true)`.execute(
      trx,
    );
    const r = await sql`DELETE FROM audit_log WHERE id = ANY(ARRAY(
      SELECT id FROM audit_log WHERE at < current_setting('commerce_sync.audit_cutoff')::timestamptz ORDER BY id LIMIT ${limit}))`.execute(
      trx,
    );
    return Number(r.numAffectedRows ?? 0);
  });
}
