// The webhook_deliveries store: every statement the receiver and the deliveries queue's handler run on
// the table. (The console's reads and its replay live with the console for now.)
import { sql } from 'kysely';
import type pg from 'pg';
import { quoteLiteral, type Executor } from './index.ts';
import type { WebhookDeliveriesTable } from './schema.ts';

/** States the receiver writes; the handler moves `queued` on to `processed`, `unhandled` or `failed`. */
export type ReceivedState = 'queued' | 'unhandled' | 'rejected';

export interface NewDelivery {
  connectionId: number;
  deliveryId: string;
  event: string | null;
  resource: string | null;
  action: string | null;
  objectId: number | null;
  eventAt: Date | null;
  resourceUrl: string | null;
  body: string;
  state: ReceivedState;
  /** Why a delivery was rejected or left unhandled. */
  error: string | null;
  /** The job that will consume it (queued rows only). */
  jobId: string | null;
}

export interface InsertedDelivery {
  id: number;
  connection_id: number;
  delivery_id: string;
}

// One statement for the whole batch, whatever its size: the rows travel as ONE JSON text parameter
// (JSON.stringify is native; pg's array literals escape every quote of every body in JavaScript, which the
// profile showed), unpacked by json_to_recordset. The same statement writes each new row's sync-log entry
// and the NOTIFY that logSync (src/synclog) would.
const insertRows = `
  WITH ins AS (
    INSERT INTO webhook_deliveries
      (connection_id, delivery_id, event, resource, action, object_id, event_at, resource_url, body, state, error, job_id)
    SELECT c, d, e, r, a, o, t, u, b, s, x, j
    FROM json_to_recordset($1::json) AS v(c bigint, d text, e text, r text, a text, o bigint, t timestamptz, u text, b text, s text, x text, j text)
    ON CONFLICT (connection_id, delivery_id) DO NOTHING
    RETURNING id, connection_id, delivery_id, event, resource, object_id, state, error, job_id
  ), log AS (
    INSERT INTO sync_log (connection_id, resource, record_id, action, delivery_id, job_id, outcome, error, detail)
    SELECT connection_id, resource, object_id,
      CASE state WHEN 'queued' THEN 'delivery.received' ELSE 'delivery.' || state END,
      delivery_id, job_id,
      CASE state WHEN 'queued' THEN 'ok' WHEN 'unhandled' THEN 'skipped' ELSE 'warning' END,
      error, jsonb_build_object('event', event)
    FROM ins
    RETURNING id
  ), notified AS (
    SELECT pg_notify('sync_log', max(id)::text) FROM log HAVING count(*) > 0
  )
  SELECT id, connection_id, delivery_id, x.notified FROM ins CROSS JOIN (SELECT count(*) AS notified FROM notified) AS x`;
// (x.notified is selected so the planner cannot drop the join, and with it the NOTIFY.)

/**
 * Inserts the rows (duplicates of stored ones are skipped by the unique key) with their sync-log entries,
 * and runs `andThen` (a statement without parameters: the receiver's pg-boss job insert) in the same
 * transaction; returns the rows that are new. One multi-statement query, which PostgreSQL runs as one
 * transaction: one round trip and one commit for the whole batch, where BEGIN, insert, job insert and
 * COMMIT were four (each waiting its turn in a busy event loop). The caller removes duplicates within
 * `rows` first.
 */
export async function insertDeliveries(pool: pg.Pool, rows: NewDelivery[], andThen = ''): Promise<InsertedDelivery[]> {
  const json = JSON.stringify(
    rows.map((r) => ({
      c: r.connectionId,
      d: r.deliveryId,
      e: r.event,
      r: r.resource,
      a: r.action,
      o: r.objectId,
      t: r.eventAt,
      u: r.resourceUrl,
      b: r.body,
      s: r.state,
      x: r.error,
      j: r.jobId,
    })),
  );
  const text = insertRows.replace('$1', () => quoteLiteral(json)) + (andThen ? `;\n${andThen}` : '');
  const result = (await pool.query(text)) as unknown as pg.QueryResult<InsertedDelivery> | pg.QueryResult<InsertedDelivery>[];
  return (Array.isArray(result) ? result[0]! : result).rows;
}

/**
 * Which rows jobs on `deliveries` name: by row id (a replayed delivery, jobs queued before batch jobs named
 * deliveries by id), or by (connection, delivery id) owned by the job: a row whose job_id is that job's id.
 */
export interface DeliveryRefs {
  rowIds: number[];
  keys: { connectionId: number; deliveryId: string; jobId: string }[];
}

/** The ids of the rows `refs` names that exist (rows deleted since, with their connection, are missing). */
function rowIdsOf(refs: DeliveryRefs) {
  const keys = JSON.stringify(refs.keys.map((k) => ({ c: k.connectionId, d: k.deliveryId, j: k.jobId })));
  return sql<{ id: number }>`SELECT id FROM webhook_deliveries WHERE id = ANY(${refs.rowIds}::bigint[])
    UNION SELECT w.id FROM json_to_recordset(${keys}::json) AS k(c bigint, d text, j text)
      JOIN webhook_deliveries w ON w.connection_id = k.c AND w.delivery_id = k.d AND w.job_id = k.j`;
}

export type DeliveryToConsume = Pick<WebhookDeliveriesTable, 'connection_id' | 'resource' | 'action' | 'object_id' | 'state'> & {
  id: number;
};

/** The rows jobs name, in arrival order. */
export async function deliveriesToConsume(db: Executor, refs: DeliveryRefs): Promise<DeliveryToConsume[]> {
  if (!refs.rowIds.length && !refs.keys.length) return [];
  const { rows } = await sql<DeliveryToConsume>`SELECT id, connection_id, resource, action, object_id, state
    FROM webhook_deliveries WHERE id IN (${rowIdsOf(refs)}) ORDER BY id`.execute(db);
  return rows;
}

export async function markProcessed(db: Executor, ids: number[]): Promise<void> {
  if (!ids.length) return;
  await sql`UPDATE webhook_deliveries SET state = 'processed', processed_at = now(), error = NULL
    WHERE id = ANY(${ids}::bigint[]) AND state <> 'processed'`.execute(db);
}

export async function markUnhandled(db: Executor, rows: { id: number; why: string }[]): Promise<void> {
  if (!rows.length) return;
  await sql`UPDATE webhook_deliveries d SET state = 'unhandled', processed_at = now(), error = x.why
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS x(id bigint, why text) WHERE d.id = x.id`.execute(db);
}

/** A job that will not be retried again (dead-lettered): its rows still waiting become `failed`, with why. */
export async function markFailed(db: Executor, refs: DeliveryRefs, error: string): Promise<number> {
  if (!refs.rowIds.length && !refs.keys.length) return 0;
  const r = await sql`UPDATE webhook_deliveries SET state = 'failed', processed_at = now(), error = ${error}
    WHERE id IN (${rowIdsOf(refs)}) AND state = 'queued'`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}
