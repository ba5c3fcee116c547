// The sync log: one row per delivery, fetch, mirror change, sweep, push or error, for operators.
// Writers call logSync (inside their own transaction when they have one, so the entry commits with the
// change it describes). Each insert also NOTIFYs `sync_log` with the new id, which feeds the live tail.
import { sql } from 'kysely';
import type { Executor } from './index.ts';
import type { SyncLogEntry } from './schema.ts';

export interface SyncLogInput {
  connectionId?: number | null;
  resource?: string | null;
  recordId?: number | null;
  sku?: string | null;
  action: string;
  before?: unknown;
  after?: unknown;
  jobId?: string | null;
  deliveryId?: string | null;
  requestId?: string | null;
  durationMs?: number | null;
  outcome?: 'ok' | 'skipped' | 'error' | 'warning';
  error?: string | null;
  detail?: unknown;
}

function row(e: SyncLogInput): SyncLogEntry {
  const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));
  return {
    connection_id: e.connectionId ?? null,
    resource: e.resource ?? null,
    record_id: e.recordId ?? null,
    sku: e.sku ?? null,
    action: e.action,
    before: json(e.before),
    after: json(e.after),
    job_id: e.jobId ?? null,
    delivery_id: e.deliveryId ?? null,
    request_id: e.requestId ?? null,
    duration_ms: e.durationMs == null ? null : Math.round(e.durationMs),
    outcome: e.outcome ?? 'ok',
    error: e.error ?? null,
    detail: json(e.detail),
  };
}

/** Appends entries; returns their ids. */
export async function logSync(db: Executor, entries: SyncLogInput | SyncLogInput[]): Promise<number[]> {
  const list = Array.isArray(entries) ? entries : [entries];
  if (!list.length) return [];
  const ids = (await db.insertInto('sync_log').values(list.map(row)).returning('id').execute()).map((r) => r.id);
  await sql`SELECT pg_notify('sync_log', ${String(ids[ids.length - 1])})`.execute(db);
  return ids;
}

/** Deletes entries older than the retention; returns how many went. */
export async function pruneSyncLog(db: Executor, retentionDays: number): Promise<number> {
  const res = await db.deleteFrom('sync_log').where(sql<boolean>`at < now() - make_interval(days => ${retentionDays})`).executeTakeFirst();
  return Number(res.numDeletedRows);
}
