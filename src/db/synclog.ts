// The sync log: one row per delivery, fetch, mirror change, sweep, push or error, for operators.
// Writers call logSync (inside their own transaction when they have one, so the entry commits with the
// change it describes). Each insert also NOTIFYs `sync_log` with the new id, which feeds the live tail.
import { type Selectable, sql } from 'kysely';
import { type BinWindow, countsPerBin } from './bins.ts';
import type { Executor } from './index.ts';
import type { Part } from './together.ts';
import type { SyncLogEntry, SyncLogTable } from './schema.ts';
import { activeTraceId } from '../telemetry/spans.ts';

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

function row(e: SyncLogInput, traceId: string | null): SyncLogEntry {
  const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));
  return {
    trace_id: traceId,
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
  // The entries and the live tail's NOTIFY (its payload: the newest id) in one statement: a statement of its own
  // for the NOTIFY would add a round trip to every write of the log, and there are several per merchant operation.
  const rows = await db
    .with('ins', () => inserting(db, list))
    .with('notified', (qb) => qb.selectFrom('ins').select(sql<string>`pg_notify('sync_log', max(id)::text)`.as('sent')))
    .selectFrom(['ins', 'notified'])
    .select('ins.id')
    .orderBy('ins.id')
    .execute();
  return rows.map((r) => r.id);
}

/** The insert of entries, written in a traced span (a drain, a push): the entries name its trace. */
const inserting = (db: Executor, list: SyncLogInput[]) => {
  const traceId = activeTraceId();
  return db
    .insertInto('sync_log')
    .values(list.map((e) => row(e, traceId)))
    .returning('id');
};

/** logSync as a part of a drain's last statement (src/db/together.ts), the tail's NOTIFY with it. */
export function logging(db: Executor, entry: SyncLogInput): Part<unknown> {
  return {
    write: inserting(db, [entry]),
    answer: (rows) => sql`(SELECT pg_notify('sync_log', max(id)::text) FROM ${rows})`,
  };
}

/**
 * Retention: deletes at most `limit` entries older than `olderThanSeconds` (by the database clock), in one short
 * statement of its own; returns how many went. The caller repeats it until fewer than `limit` go.
 */
export async function pruneSyncLog(db: Executor, olderThanSeconds: number, limit: number): Promise<number> {
  const r = await sql`DELETE FROM sync_log WHERE id = ANY(ARRAY(
    SELECT id FROM sync_log WHERE at < now() - make_interval(secs => ${olderThanSeconds}) LIMIT ${limit}))`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

// ---- reads (the console, its API and tail, the CLI). Each filter maps onto one of the (column, at DESC)
// indexes of 0001_initial.sql, so a query reads only the rows it returns.

export interface LogFilter {
  connectionId?: number;
  resource?: string;
  sku?: string;
  outcome?: string;
  recordId?: number;
  action?: string;
  /** Entries at or after this time. */
  from?: Date;
  /** Entries before this time (exclusive). An ISO string keeps PostgreSQL's microseconds (page cursors). */
  to?: Date | string;
  /** With `to`: also entries at exactly `to` with a smaller id (the next page when many share a time). */
  beforeId?: number;
  /** Entries with a larger id, oldest first (the tail's catch-up). */
  afterId?: number;
  limit?: number;
}

/** A sync log entry with its connection's name. */
export type LogRow = Selectable<SyncLogTable> & { connection: string | null };

const selectRows = (db: Executor) =>
  db
    .selectFrom('sync_log as l')
    .leftJoin('connections as c', 'c.id', 'l.connection_id')
    .select([
      'l.id',
      'l.at',
      'l.connection_id',
      'c.name as connection',
      'l.resource',
      'l.record_id',
      'l.sku',
      'l.action',
      'l.before',
      'l.after',
      'l.job_id',
      'l.delivery_id',
      'l.request_id',
      'l.trace_id',
      'l.duration_ms',
      'l.outcome',
      'l.error',
      'l.detail',
    ]);

/** Newest first, or oldest first after `afterId`. */
export async function querySyncLog(db: Executor, f: LogFilter): Promise<LogRow[]> {
  let q = selectRows(db);
  if (f.connectionId !== undefined) q = q.where('l.connection_id', '=', f.connectionId);
  if (f.resource) q = q.where('l.resource', '=', f.resource);
  if (f.sku) q = q.where('l.sku', '=', f.sku);
  if (f.outcome) q = q.where('l.outcome', '=', f.outcome as LogRow['outcome'] as never);
  if (f.recordId !== undefined) q = q.where('l.record_id', '=', f.recordId);
  if (f.action) q = q.where('l.action', '=', f.action);
  if (f.from) q = q.where('l.at', '>=', f.from);
  if (f.to && f.beforeId !== undefined) {
    // (at, id) < (to, beforeId), written so the at index bounds the scan.
    const to = f.to,
      beforeId = f.beforeId;
    q = q
      .where(sql<boolean>`l.at <= ${to}::timestamptz`)
      .where((eb) => eb.or([eb('l.at', '<', sql<Date>`${to}::timestamptz`), eb('l.id', '<', beforeId)]));
  } else if (f.to) {
    q = q.where('l.at', '<', sql<Date>`${f.to}::timestamptz`);
  }
  const limit = Math.min(Math.max(f.limit ?? 100, 1), 1000);
  if (f.afterId !== undefined) {
    return (await q.where('l.id', '>', f.afterId).orderBy('l.id', 'asc').limit(limit).execute()) as LogRow[];
  }
  return (await q.orderBy('l.at', 'desc').orderBy('l.id', 'desc').limit(limit).execute()) as LogRow[];
}

/**
 * The drains' reads of a record, newest first, from `from` on: `fetch` entries are one per batch read (no record id
 * of their own) and name the ids they read in `detail.record_ids`. The record index bounds the scan to the
 * resource's reads of the connection since `from`.
 */
export async function readsOfRecord(
  db: Executor,
  f: { connectionId: number; resource: string; recordId: number; from: Date; limit: number },
): Promise<LogRow[]> {
  return (await selectRows(db)
    .where('l.connection_id', '=', f.connectionId)
    .where('l.resource', '=', f.resource)
    .where('l.record_id', 'is', null)
    .where('l.at', '>=', f.from)
    .where('l.action', '=', 'fetch')
    .where(sql<boolean>`l.detail->'record_ids' @> ${JSON.stringify([f.recordId])}::jsonb`)
    .orderBy('l.at', 'desc')
    .orderBy('l.id', 'desc')
    .limit(f.limit)
    .execute()) as LogRow[];
}

/** Rows after `afterId` plus the given older ids (gaps left by transactions still open), oldest first. */
export async function syncLogAfter(db: Executor, afterId: number, alsoIds: number[] = [], limit = 1000): Promise<LogRow[]> {
  return (await selectRows(db)
    .where((eb) => (alsoIds.length ? eb.or([eb('l.id', '>', afterId), eb('l.id', 'in', alsoIds)]) : eb('l.id', '>', afterId)))
    .orderBy('l.id', 'asc')
    .limit(limit)
    .execute()) as LogRow[];
}

export async function latestSyncLogId(db: Executor): Promise<number> {
  const r = await db.selectFrom('sync_log').select(sql<number>`coalesce(max(id), 0)::bigint`.as('id')).executeTakeFirstOrThrow();
  return r.id;
}

/** A page cursor for an entry: its time with PostgreSQL's microseconds (a JS Date keeps milliseconds only). */
export async function exactTime(db: Executor, id: number): Promise<string | null> {
  const r = await db
    .selectFrom('sync_log')
    .select(sql<string>`to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('at'))
    .where('id', '=', id)
    .executeTakeFirst();
  return r?.at ?? null;
}

/** Error entries of the last hour per connection (connections without any are absent). */
export async function errorCountsLastHour(db: Executor, connectionIds: number[]): Promise<{ connection_id: number; n: number }[]> {
  return (
    await sql<{ connection_id: number; n: number }>`
      SELECT connection_id, count(*)::int AS n FROM sync_log
       WHERE outcome = 'error' AND at > now() - interval '1 hour' AND connection_id = ANY(${connectionIds})
       GROUP BY connection_id`.execute(db)
  ).rows;
}

export type RecentError = Pick<Selectable<SyncLogTable>, 'id' | 'at' | 'action' | 'resource' | 'sku' | 'error'> & { connection_id: number };

/** The five latest error entries of each connection. */
export async function recentErrors(db: Executor, connectionIds: number[]): Promise<RecentError[]> {
  return (
    await sql<RecentError>`
      SELECT e.* FROM unnest(${connectionIds}::bigint[]) AS c(id)
       CROSS JOIN LATERAL (SELECT connection_id, id, at, action, resource, sku, error FROM sync_log
                            WHERE connection_id = c.id AND outcome = 'error' ORDER BY at DESC LIMIT 5) e`.execute(db)
  ).rows;
}

/** Sync-log entries of a connection per bucket of the window (the console's events chart). */
export function syncLogPerBin(db: Executor, connectionId: number, w: BinWindow): Promise<{ at: Date; n: number }[]> {
  return countsPerBin(db, 'sync_log', 'at', connectionId, w);
}

/** The drift each sweep of the window found, oldest first (at most 1000). */
export async function sweepDrifts(db: Executor, connectionId: number, w: BinWindow): Promise<{ at: Date; drift: number }[]> {
  return (
    await sql<{ at: Date; drift: number }>`
      SELECT at, coalesce((detail->>'drift')::int, 0) AS drift FROM sync_log
       WHERE connection_id = ${connectionId} AND action IN ('sweep', 'sweep.full', 'sweep.initial') AND at >= ${w.start} AND at < ${w.end}
       ORDER BY at LIMIT 1000`.execute(db)
  ).rows;
}

/** The detail of a `webhooks.repaired` entry (src/receiver/subscriptions.ts): the events it recreated and removed. */
export interface RepairDetail {
  created?: string[];
  removed?: string[];
  [field: string]: unknown;
}

/** Per connection, the newest webhook subscription repair (`webhooks.repaired`), for `commerce-sync status`. */
export async function lastWebhookRepairs(db: Executor): Promise<Map<number, { at: Date; detail: RepairDetail | null }>> {
  const r = await sql<{ connection_id: number; at: Date; detail: RepairDetail | null }>`
    SELECT DISTINCT ON (connection_id) connection_id, at, detail FROM sync_log
    WHERE action = 'webhooks.repaired' ORDER BY connection_id, at DESC`.execute(db);
  return new Map(r.rows.map((x) => [x.connection_id, { at: x.at, detail: x.detail }]));
}

/**
 * Per connection, the subscriptions recreated by repairs within the last `hours` (the service had deleted them) and
 * when the latest was: the alerts' webhook condition (the partial index sync_log_webhook_repairs serves it).
 */
export async function recentWebhookRepairs(db: Executor, hours: number): Promise<Map<number, { at: Date; created: string[] }>> {
  const r = await sql<{ connection_id: number; at: Date; detail: RepairDetail | null }>`
    SELECT connection_id, at, detail FROM sync_log
    WHERE action = 'webhooks.repaired' AND at > now() - make_interval(hours => ${hours}) ORDER BY at`.execute(db);
  const out = new Map<number, { at: Date; created: string[] }>();
  for (const x of r.rows) {
    const created: string[] = Array.isArray(x.detail?.created) ? x.detail.created.map(String) : [];
    if (!created.length || x.connection_id === null) continue;
    const was = out.get(x.connection_id);
    out.set(x.connection_id, { at: x.at, created: [...new Set([...(was?.created ?? []), ...created])] });
  }
  return out;
}
