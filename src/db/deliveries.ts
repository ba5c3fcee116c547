// The webhook_deliveries store: every statement the receiver, the deliveries queue's handler and a replay run on
// the table. The operators' reads: delivery-reads.ts.
import { createHash } from 'node:crypto';
import { type Selectable, sql } from 'kysely';
import type pg from 'pg';
import { quoteLiteral, type Db, type Executor } from './index.ts';
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
  /** The W3C traceparent of the request's span when tracing (migration 0260): the work it causes continues that trace. */
  traceparent?: string | null;
}

export interface InsertedDelivery {
  id: number;
  connection_id: number;
  delivery_id: string;
  job_id: string | null;
}

// While a connection's deliveries job has not started, new rows join it rather than cost another pg-boss job (at the
// receiver's batch sizes a job insert is a large part of PostgreSQL's work per delivery): `delivery_waits` names the
// job that waits (migration 0180). Such a row is attached to only while WAIT_SECONDS old; one whose job the handler never
// got to (failed by pg-boss's supervisor) is left behind, and its rows go with that job's dead letter.
const WAIT_SECONDS = 30;

// The barrier between attaching and starting: a receiver's transaction holds this lock, shared, from before it looks
// for a waiting job until it commits; the handler takes it exclusively to delete the wait row. So every row attached
// to a job has committed before the handler reads the job's rows, and once the wait row is gone nothing attaches.
// (A statement's snapshot is taken when it starts: the lock is its own statement, before the rows'.)
// Taken in order of connection id, so two transactions never wait on each other in a cycle.
// `ids`: a bigint[] expression (the receiver's prepared statement's parameter, or the handler's literal).
const connectionLocks = (lock: 'pg_advisory_xact_lock_shared' | 'pg_advisory_xact_lock', ids: string) =>
  `SELECT ${lock}(hashtextextended('deliveries:' || c, 0)) FROM (SELECT DISTINCT c FROM unnest(${ids}::bigint[]) AS c ORDER BY c) AS s`;

// A queued row whose body a waiting row of its connection has already is a copy (the same event resent under a new
// delivery id) and is not stored: the read that twin causes comes after both (the unique index of waiting bodies,
// migration 0330). A copy of a row already handled is stored, so its record is read again: the same body may be a
// second change in the same second.
// One statement for the whole batch, whatever its size: the rows travel as ONE JSON text parameter
// (JSON.stringify is native; pg's array literals would escape every quote of every body in JavaScript),
// unpacked by json_to_recordset. `j` is the job a queued row would start; each connection's rows
// join the job already waiting for it instead, if one is. The same statement writes the sync-log entry of each
// row refused or left unhandled, with the NOTIFY that logSync (src/db/synclog.ts) would; a queued row's entry is
// written when the handler takes it (logReceived), so the acknowledgement waits only for what it promises.
// `${JOBS}` is replaced by the job insert (below), or by nothing for a batch with no queued row.
const JOBS = '/*jobs*/';
const insertRows = `
  WITH v AS (
    SELECT * FROM json_to_recordset($1::json) AS v(c bigint, d text, e text, r text, a text, o bigint, t timestamptz, u text, b text, s text, x text, j text, h text, p text)
  ), waiting AS (
    SELECT n.c, n.j, w.job_id AS existing
    FROM (SELECT DISTINCT c, j FROM v WHERE j IS NOT NULL) AS n
    LEFT JOIN LATERAL (SELECT job_id FROM delivery_waits w WHERE w.connection_id = n.c
      AND w.since > now() - make_interval(secs => ${WAIT_SECONDS}) ORDER BY w.since DESC LIMIT 1) AS w ON true
  ), made AS (
    INSERT INTO delivery_waits (job_id, connection_id) SELECT j, c FROM waiting WHERE existing IS NULL
  ), ins AS (
    INSERT INTO webhook_deliveries
      (connection_id, delivery_id, event, resource, action, object_id, event_at, resource_url, body, state, error, job_id, body_sha256, traceparent)
    SELECT v.c, d, e, r, a, o, t, u, b, s, x, coalesce(waiting.existing, v.j), decode(h, 'hex'), p
    FROM v LEFT JOIN waiting ON waiting.c = v.c AND v.j IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING id, connection_id, delivery_id, event, resource, object_id, state, error, job_id
  ), log AS (
    INSERT INTO sync_log (connection_id, resource, record_id, action, delivery_id, job_id, outcome, error, detail)
    SELECT connection_id, resource, object_id, 'delivery.' || state, delivery_id, job_id,
      CASE state WHEN 'unhandled' THEN 'skipped' ELSE 'warning' END, error, jsonb_build_object('event', event)
    FROM ins WHERE state <> 'queued'
    RETURNING id
  ), notified AS (
    SELECT pg_notify('sync_log', max(id)::text) FROM log HAVING count(*) > 0
  )${JOBS}
  SELECT id, connection_id, delivery_id, job_id, x.notified FROM ins CROSS JOIN (SELECT count(*) AS notified FROM notified) AS x`;
// (x.notified is selected so the planner cannot drop the join, and with it the NOTIFY.)

// pg-boss's job insert, as one more part of the same statement: its one parameter (the jobs as JSON text) becomes
// this subquery, which keeps the candidate jobs (`$2`) the batch made a wait row for. Part of the statement, not a
// statement after it: a batch that joins a waiting job (nearly every batch under load) then runs no insert at all,
// where a statement of its own would still be prepared, bound and run with nothing to insert.
const madeJobs = `(SELECT coalesce(json_agg(e), '[]')::text FROM json_array_elements($2::text::json) AS e
  WHERE e->>'id' IN (SELECT j FROM waiting WHERE existing IS NULL))`;
const withJobs = (statement: string) => insertRows.replace(JOBS, `, jobs AS (${statement.trim().replace(/\$1\b/g, () => madeJobs)})`);

/**
 * pg-boss's job insert for the batch's candidate jobs (one per connection with queued rows, ids made up front):
 * `statement` as pg-boss would run it, `$1` its one parameter, `value` the jobs as JSON.
 */
export interface JobInsert {
  statement: string;
  value: string;
}

// The batch's statements are PREPAREd once per connection and run with EXECUTE: planning them afresh for
// every batch would cost PostgreSQL more CPU than inserting the rows. A connection's first batch prepares them in
// the same round trip. What each connection holds: the lock statement and the rows-only one once prepared, and
// the pg-boss insert text its rows-and-jobs statement was prepared with.
const preparedOn = new WeakMap<pg.PoolClient, { lock: boolean; rows: boolean; jobs: string | null }>();

/** The rows as the one JSON text the batch statement unpacks (json_to_recordset's columns c, d, e, ... j). */
export function deliveriesJson(rows: NewDelivery[]): string {
  return JSON.stringify(
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
      // The same body under another delivery id: the same event sent again, or another change in the same second.
      h: createHash('sha256').update(r.body).digest('hex'),
      p: r.traceparent ?? null,
    })),
  );
}

/**
 * Inserts the rows (copies of stored ones by delivery id, and of waiting ones by body, are skipped), attaching each connection's queued
 * rows to its waiting job or making the candidate job of `jobs` wait, and inserts the jobs made, in the same
 * transaction; returns the rows that are new, with the job each belongs to. One multi-statement query, which
 * PostgreSQL runs as one transaction: one round trip and one commit for the whole batch. The caller removes
 * duplicates within `rows` first.
 */
export async function insertDeliveries(pool: pg.Pool, rows: NewDelivery[], jobs?: JobInsert): Promise<InsertedDelivery[]> {
  const json = deliveriesJson(rows);
  const waiting = [...new Set(rows.filter((r) => r.jobId !== null).map((r) => r.connectionId))];
  const client = await pool.connect();
  try {
    const has = preparedOn.get(client) ?? { lock: false, rows: false, jobs: null };
    const statements: string[] = [];
    if (waiting.length && !has.lock)
      statements.push(`PREPARE cs_receive_lock(bigint[]) AS ${connectionLocks('pg_advisory_xact_lock_shared', '$1')}`);
    if (jobs) {
      if (has.jobs !== jobs.statement) {
        if (has.jobs !== null) statements.push('DEALLOCATE cs_receive_jobs');
        statements.push(`PREPARE cs_receive_jobs(text, text) AS ${withJobs(jobs.statement)}`);
      }
    } else if (!has.rows) statements.push(`PREPARE cs_receive_rows(text) AS ${insertRows.replace(JOBS, '')}`);
    if (waiting.length) statements.push(`EXECUTE cs_receive_lock('{${waiting.join(',')}}')`);
    const first = statements.length; // the results before ours: PREPAREs, the lock
    statements.push(
      jobs
        ? `EXECUTE cs_receive_jobs(${quoteLiteral(json)}, ${quoteLiteral(jobs.value)})`
        : `EXECUTE cs_receive_rows(${quoteLiteral(json)})`,
    );
    const result = (await client.query(statements.join(';\n'))) as unknown as
      | pg.QueryResult<InsertedDelivery>
      | pg.QueryResult<InsertedDelivery>[];
    preparedOn.set(client, {
      lock: has.lock || waiting.length > 0,
      rows: has.rows || !jobs,
      jobs: jobs?.statement ?? has.jobs,
    });
    client.release();
    return (Array.isArray(result) ? result[first]! : result).rows;
  } catch (err) {
    // A failed query may have left some of its PREPAREs behind (they outlive the transaction): the
    // connection is closed rather than guessed about.
    client.release(err as Error);
    throw err;
  }
}

/**
 * The handler starts these jobs: their wait rows go, under the barrier's lock, in a transaction of their own. When
 * it commits, every row attached to them has committed, and no more will be.
 */
export async function startWaitingJobs(db: Db, jobs: { connectionId: number; jobId: string }[]): Promise<void> {
  if (!jobs.length) return;
  await db.transaction().execute(async (tx) => {
    await sql.raw(connectionLocks('pg_advisory_xact_lock', `'{${jobs.map((j) => j.connectionId).join(',')}}'`)).execute(tx);
    await sql`DELETE FROM delivery_waits WHERE job_id = ANY(${jobs.map((j) => j.jobId)}::text[])`.execute(tx);
  });
}

/** Retention: wait rows of jobs that never started (failed by pg-boss's supervisor), long past attaching to. */
export async function pruneDeliveryWaits(db: Executor, olderThanSeconds: number, limit: number): Promise<number> {
  const r = await sql`DELETE FROM delivery_waits WHERE job_id = ANY(ARRAY(
      SELECT job_id FROM delivery_waits WHERE since < now() - make_interval(secs => ${olderThanSeconds}) LIMIT ${limit}))`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/**
 * The sync-log entry of each row of these jobs not handled yet (queued, or failed: a dead letter's replay): received
 * and queued for a read. `at` is when it arrived. One statement, with logSync's NOTIFY.
 */
export async function logReceived(db: Executor, jobIds: string[]): Promise<void> {
  if (!jobIds.length) return;
  await sql`WITH log AS (
      INSERT INTO sync_log (at, connection_id, resource, record_id, action, delivery_id, job_id, outcome, detail, trace_id)
      SELECT received_at, connection_id, resource, object_id, 'delivery.received', delivery_id, job_id, 'ok', jsonb_build_object('event', event),
        substr(traceparent, 4, 32)
      FROM webhook_deliveries WHERE job_id = ANY(${jobIds}::text[]) AND state IN ('queued', 'failed') ORDER BY id
      RETURNING id)
    SELECT pg_notify('sync_log', max(id)::text) FROM log HAVING count(*) > 0`.execute(db);
}

/**
 * Which rows jobs on `deliveries` name: by row id (a replayed delivery), or every row whose job_id is the job's id
 * (webhook_deliveries_job).
 */
export interface DeliveryRefs {
  rowIds: number[];
  jobIds: string[];
}

/** The ids of the rows `refs` names that exist (rows deleted since, with their connection, are missing). */
function rowIdsOf(refs: DeliveryRefs) {
  return sql<{ id: number }>`SELECT id FROM webhook_deliveries WHERE id = ANY(${refs.rowIds}::bigint[])
    UNION SELECT id FROM webhook_deliveries WHERE job_id = ANY(${refs.jobIds}::text[])`;
}

export type DeliveryToConsume = Pick<
  WebhookDeliveriesTable,
  'connection_id' | 'resource' | 'action' | 'object_id' | 'state' | 'traceparent'
> & {
  id: number;
};

/** The rows jobs name, in arrival order. */
export async function deliveriesToConsume(db: Executor, refs: DeliveryRefs): Promise<DeliveryToConsume[]> {
  if (!refs.rowIds.length && !refs.jobIds.length) return [];
  const { rows } = await sql<DeliveryToConsume>`SELECT id, connection_id, resource, action, object_id, state, traceparent
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
  if (!refs.rowIds.length && !refs.jobIds.length) return 0;
  const r = await sql`UPDATE webhook_deliveries SET state = 'failed', processed_at = now(), error = ${error}
    WHERE id IN (${rowIdsOf(refs)}) AND state = 'queued'`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** The row locked for update (a replay, inside the caller's transaction). */
export async function deliveryForUpdate(tx: Executor, id: number): Promise<Selectable<WebhookDeliveriesTable> | undefined> {
  return tx.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

/**
 * A replayed delivery waits again, for the new job; false when a delivery of the same body already waits (its read
 * comes after the replay's, so the row is left as it is and the job finds nothing of its own to do).
 */
export async function requeueDelivery(tx: Executor, id: number, jobId: string): Promise<boolean> {
  // A row stored before migration 0370 has only the hex digest: it gets its bytes as it waits again (SET and WHERE
  // both read the row as it was).
  const r = await sql`UPDATE webhook_deliveries d SET state = 'queued', error = NULL, job_id = ${jobId}, processed_at = NULL,
      body_sha256 = coalesce(d.body_sha256, decode(d.body_digest, 'hex'))
    WHERE d.id = ${id} AND NOT EXISTS (SELECT 1 FROM webhook_deliveries w WHERE w.connection_id = d.connection_id
      AND w.body_sha256 = coalesce(d.body_sha256, decode(d.body_digest, 'hex')) AND w.state = 'queued' AND w.id <> d.id)`.execute(tx);
  return Number(r.numAffectedRows ?? 0) > 0;
}

/**
 * Retention: deletes at most `limit` deliveries in one of `states` received and settled more than
 * `olderThanSeconds` ago (by the database clock), in one short statement; returns how many went. The outer
 * condition is checked again on each row, so a row a replay moved back to `queued` meanwhile stays.
 */
export async function pruneDeliveries(
  db: Executor,
  states: readonly Exclude<WebhookDeliveriesTable['state'], 'queued'>[],
  olderThanSeconds: number,
  limit: number,
): Promise<number> {
  const settledBefore = sql`received_at < now() - make_interval(secs => ${olderThanSeconds})
    AND coalesce(processed_at, received_at) < now() - make_interval(secs => ${olderThanSeconds})`;
  // One index probe per state (webhook_deliveries_state: state, received_at), never a scan of the table.
  const r = await sql`DELETE FROM webhook_deliveries WHERE id = ANY(ARRAY(
      SELECT d.id FROM unnest(${states}::text[]) AS s(state)
      CROSS JOIN LATERAL (SELECT id FROM webhook_deliveries w WHERE w.state = s.state AND ${settledBefore} LIMIT ${limit}) d
      LIMIT ${limit}))
    AND state = ANY(${states}::text[]) AND ${settledBefore}`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/**
 * Whether deliveries reach us for this connection: one received in the last two minutes. While they do, what the
 * service announces is read when it happens, and the order watch reads less often (src/channels/order-events.ts).
 */
export async function deliveriesFlowing(db: Executor, connectionId: number): Promise<boolean> {
  const { rows } = await sql<{ flowing: boolean }>`
    SELECT coalesce(max(received_at) > now() - interval '2 minutes', false) AS flowing
      FROM webhook_deliveries WHERE connection_id = ${connectionId}`.execute(db);
  return rows[0]?.flowing ?? false;
}
