// Reading the sync log: filtered queries for the console, the API and the CLI. Each filter maps onto one
// of the (column, at DESC) indexes of 0001_initial.sql, so a query reads only the rows it returns.
import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/index.ts';
import type { SyncLogTable } from '../db/schema.ts';

export const outcomes = ['ok', 'skipped', 'error', 'warning'] as const;

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

const selectRows = (db: Db) =>
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
      'l.duration_ms',
      'l.outcome',
      'l.error',
      'l.detail',
    ]);

/** Newest first, or oldest first after `afterId`. */
export async function querySyncLog(db: Db, f: LogFilter): Promise<LogRow[]> {
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

/** The same filter as querySyncLog, applied to a row in memory (the live tail filters what it fans out). */
export function matchesFilter(row: LogRow, f: LogFilter): boolean {
  return (
    (f.connectionId === undefined || row.connection_id === f.connectionId) &&
    (!f.resource || row.resource === f.resource) &&
    (!f.sku || row.sku === f.sku) &&
    (!f.outcome || row.outcome === f.outcome) &&
    (f.recordId === undefined || row.record_id === f.recordId) &&
    (!f.action || row.action === f.action)
  );
}

/** Rows after `afterId` plus the given older ids (gaps left by transactions still open), oldest first. */
export async function syncLogAfter(db: Db, afterId: number, alsoIds: number[] = [], limit = 1000): Promise<LogRow[]> {
  return (await selectRows(db)
    .where((eb) => (alsoIds.length ? eb.or([eb('l.id', '>', afterId), eb('l.id', 'in', alsoIds)]) : eb('l.id', '>', afterId)))
    .orderBy('l.id', 'asc')
    .limit(limit)
    .execute()) as LogRow[];
}

export async function latestSyncLogId(db: Db): Promise<number> {
  const r = await db.selectFrom('sync_log').select(sql<number>`coalesce(max(id), 0)::bigint`.as('id')).executeTakeFirstOrThrow();
  return Number(r.id);
}

export class FilterError extends Error {}

/** Parses filter query parameters (API, SSE, console pages); connection is a name or id. Throws FilterError. */
export async function parseLogFilter(db: Db, q: Record<string, string | string[] | undefined>): Promise<LogFilter> {
  const one = (k: string) => {
    const v = q[k];
    return (Array.isArray(v) ? v[0] : v)?.trim() || undefined;
  };
  const f: LogFilter = {};
  const conn = one('connection');
  if (conn) f.connectionId = await connectionIdOf(db, conn);
  f.resource = one('resource');
  f.sku = one('sku');
  f.action = one('action');
  const outcome = one('outcome');
  if (outcome) {
    if (!(outcomes as readonly string[]).includes(outcome)) throw new FilterError(`outcome must be one of ${outcomes.join(', ')}`);
    f.outcome = outcome;
  }
  const int = (k: string) => {
    const v = one(k);
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) throw new FilterError(`${k} must be a whole number`);
    return Number(v);
  };
  const time = (k: string) => {
    const v = one(k);
    if (v === undefined) return undefined;
    const d = new Date(v);
    if (Number.isNaN(d.getTime())) throw new FilterError(`${k} must be an ISO timestamp`);
    return d;
  };
  f.recordId = int('record');
  f.afterId = int('after');
  f.limit = int('limit');
  f.from = time('from');
  if (time('to')) f.to = one('to');
  f.beforeId = int('before');
  return f;
}

/** A connection by name or numeric id; FilterError when there is none. */
export async function connectionIdOf(db: Db, nameOrId: string): Promise<number> {
  const row = await db
    .selectFrom('connections')
    .select('id')
    .where((eb) =>
      /^\d+$/.test(nameOrId) ? eb.or([eb('id', '=', Number(nameOrId)), eb('name', '=', nameOrId)]) : eb('name', '=', nameOrId),
    )
    .executeTakeFirst();
  if (!row) throw new FilterError(`no connection named ${JSON.stringify(nameOrId)}`);
  return row.id;
}

/** A page cursor for an entry: its time with PostgreSQL's microseconds (a JS Date keeps milliseconds only). */
export async function exactTime(db: Db, id: number): Promise<string | null> {
  const r = await db
    .selectFrom('sync_log')
    .select(sql<string>`to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('at'))
    .where('id', '=', id)
    .executeTakeFirst();
  return r?.at ?? null;
}
