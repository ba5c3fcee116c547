// The sync log as the console, its API, the live tail and the CLI filter it: query parameters parsed into a
// filter, and the same filter applied in memory. The queries are the sync log store's (db/synclog.ts).
import { isId, MAX_ID } from '../inputs.ts';
import { getConnection } from '../db/connections.ts';
import type { Db } from '../db/index.ts';
import { type LogFilter, type LogRow, querySyncLog, readsOfRecord } from '../db/synclog.ts';
import { z } from 'zod';
import { timestamp } from '../openapi/registry.ts';

export { exactTime, latestSyncLogId, querySyncLog, syncLogAfter, type LogFilter, type LogRow } from '../db/synclog.ts';

export const outcomes = ['ok', 'skipped', 'error', 'warning'] as const;

/** A sync-log entry (src/db/synclog.ts LogRow) as /api/logs answers it. */
export const logEntry = z
  .object({
    id: z.number().int(),
    at: timestamp,
    connection_id: z.number().int().nullable(),
    connection: z.string().nullable(),
    resource: z.string().nullable(),
    record_id: z.number().int().nullable(),
    sku: z.string().nullable(),
    action: z.string(),
    before: z.unknown().describe('The record before (its fields of interest), as the entry recorded it.'),
    after: z.unknown().describe('The record after, as the entry recorded it.'),
    job_id: z.string().nullable(),
    delivery_id: z.string().nullable(),
    request_id: z.string().nullable(),
    duration_ms: z.number().nullable(),
    outcome: z.enum(outcomes),
    error: z.string().nullable(),
    detail: z.record(z.string(), z.unknown()).nullable().describe("The action's particulars (counts, reasons, ids)."),
    trace_id: z.string().nullable().describe('The trace the entry was written in, when traced.'),
  })
  .meta({ id: 'LogEntry' });

/**
 * A record's history, newest first: the entries about it, and the reads that brought it (a drain's read is one
 * entry per batch, naming the record only in its detail). Without them a delivery's "a read is queued" never
 * met its read. The reads count from the oldest entry shown: a read answers something there.
 */
export async function recordHistory(
  db: Db,
  f: { connectionId: number; resource: string; recordId: number; limit: number },
): Promise<LogRow[]> {
  const own = await querySyncLog(db, f);
  const oldest = own.at(-1)?.at;
  if (!oldest) return own;
  const reads = await readsOfRecord(db, { ...f, from: new Date(oldest) });
  return [...own, ...reads].sort((a, b) => new Date(b.at).getTime() - new Date(a.at).getTime() || b.id - a.id).slice(0, f.limit);
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
    if (!isId(v)) throw new FilterError(`${k} must be a whole number from 0 to ${MAX_ID}`);
    return Number(v);
  };
  const time = (k: string) => {
    const v = one(k);
    if (v === undefined) return undefined;
    const d = new Date(v);
    const year = d.getUTCFullYear();
    if (Number.isNaN(year) || year < 1 || year > 9999) throw new FilterError(`${k} must be an ISO timestamp`);
    return d;
  };
  f.recordId = int('record');
  f.afterId = int('after');
  f.limit = int('limit');
  f.from = time('from');
  // Text, to keep a page cursor's microseconds (exactTime), but the time JavaScript read: PostgreSQL refuses some
  // text a Date takes ("1").
  const to = time('to');
  if (to) f.to = `${to.toISOString().slice(0, -1)}${/\.\d{3}(\d{3})Z$/.exec(one('to')!)?.[1] ?? ''}Z`;
  f.beforeId = int('before');
  return f;
}

/** A connection by name or numeric id; FilterError when there is none. */
export async function connectionIdOf(db: Db, nameOrId: string): Promise<number> {
  const row = await getConnection(db, nameOrId);
  if (!row) throw new FilterError(`no connection named ${JSON.stringify(nameOrId)}`);
  return row.id;
}
