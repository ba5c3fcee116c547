// The push operations store: every statement on push_operations and channel_orders. The life cycle (which
// state follows which, the sync log entries, the jobs) is push/store.ts; this module only reads and writes rows.
import { sql } from 'kysely';
import type { Executor } from './index.ts';
import type { PushKind, PushOperation, PushState } from './schema.ts';

export async function insertOperation(
  tx: Executor,
  values: { connectionId: number; kind: PushKind; input: Record<string, unknown>; idempotencyKey: string; orderKey: string },
): Promise<PushOperation> {
  return tx
    .insertInto('push_operations')
    .values({
      connection_id: values.connectionId,
      kind: values.kind,
      input: JSON.stringify(values.input),
      idempotency_key: values.idempotencyKey,
      order_key: values.orderKey,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function setOperationJob(tx: Executor, id: number, jobId: string | null): Promise<PushOperation> {
  return tx.updateTable('push_operations').set({ job_id: jobId }).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function getOperation(db: Executor, id: number): Promise<PushOperation | undefined> {
  return db.selectFrom('push_operations').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The row locked for update (inside the caller's transaction). */
export async function getOperationForUpdate(tx: Executor, id: number): Promise<PushOperation | undefined> {
  return tx.selectFrom('push_operations').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function operationsByIds(db: Executor, ids: number[]): Promise<PushOperation[]> {
  return ids.length ? db.selectFrom('push_operations').selectAll().where('id', 'in', ids).execute() : [];
}

export interface ListFilter {
  connectionId?: number;
  kind?: PushKind;
  state?: PushState;
  orderKey?: string;
  limit?: number;
  beforeId?: number;
}

/** Newest first. */
export async function listOperations(db: Executor, f: ListFilter = {}): Promise<PushOperation[]> {
  let q = db
    .selectFrom('push_operations')
    .selectAll()
    .orderBy('id', 'desc')
    .limit(Math.min(f.limit ?? 50, 500));
  if (f.connectionId !== undefined) q = q.where('connection_id', '=', f.connectionId);
  if (f.kind) q = q.where('kind', '=', f.kind);
  if (f.state) q = q.where('state', '=', f.state);
  if (f.orderKey) q = q.where('order_key', '=', f.orderKey);
  if (f.beforeId !== undefined) q = q.where('id', '<', f.beforeId);
  return q.execute();
}

/** The operations touching one order: by its order key (own or channel), or naming it in input or result. */
export async function operationsOfOrder(
  db: Executor,
  connectionId: number,
  orderId: number,
  channelKey: string | null,
  limit = 100,
): Promise<PushOperation[]> {
  return db
    .selectFrom('push_operations')
    .selectAll()
    .where('connection_id', '=', connectionId)
    .where((eb) =>
      eb.or([
        eb('order_key', '=', `order:${orderId}`),
        ...(channelKey ? [eb('order_key', '=', channelKey)] : []),
        eb(sql<string>`input->>'order_id'`, '=', String(orderId)),
        eb(sql<string>`result->>'order_id'`, '=', String(orderId)),
      ]),
    )
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** The operation of `kind` on this order key that has not failed (queued, sent or confirmed), if any: the oldest. */
export async function liveOperationOfKind(
  tx: Executor,
  connectionId: number,
  orderKey: string,
  kind: PushKind,
): Promise<PushOperation | undefined> {
  return tx
    .selectFrom('push_operations')
    .selectAll()
    .where('connection_id', '=', connectionId)
    .where('order_key', '=', orderKey)
    .where('kind', '=', kind)
    .where('state', '!=', 'failed')
    .orderBy('id')
    .executeTakeFirst();
}

/** How many imports of this channel order the service refused to create (POST /orders answered 4xx). */
export async function countRefusedImports(tx: Executor, connectionId: number, channel: string, channelOrderId: string): Promise<number> {
  const row = await tx
    .selectFrom('push_operations')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('connection_id', '=', connectionId)
    .where('kind', '=', 'import-order')
    .where('state', '=', 'failed')
    .where(sql<boolean>`(result->>'create_refused')::boolean IS TRUE`)
    .where(sql<boolean>`input->>'channel' = ${channel} AND input->>'channel_order_id' = ${channelOrderId}`)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** An order among the candidates an earlier import created but left without all its lines. */
export async function incompleteImportOrder(db: Executor, connectionId: number, candidates: number[]): Promise<string | undefined> {
  const row = await db
    .selectFrom('push_operations')
    .select(sql<string>`result->>'order_id'`.as('order_id'))
    .where('connection_id', '=', connectionId)
    .where('kind', '=', 'import-order')
    .where(sql<boolean>`(result->>'incomplete')::boolean IS TRUE AND (result->>'order_id')::bigint = ANY(${candidates}::bigint[])`)
    .executeTakeFirst();
  return row?.order_id;
}

/** Serialises claim and finish per (connection, order key) across processes, until the transaction ends. */
export async function lockOrderKey(tx: Executor, op: Pick<PushOperation, 'connection_id' | 'order_key'>): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`push:${op.connection_id}:${op.order_key}`}, 0))`.execute(tx);
}

export async function orderKeyOf(tx: Executor, id: number): Promise<Pick<PushOperation, 'connection_id' | 'order_key'> | undefined> {
  return tx.selectFrom('push_operations').select(['connection_id', 'order_key']).where('id', '=', id).executeTakeFirst();
}

/** The oldest other unfinished operation of the same order key; `olderOnly` limits it to ones before op. */
export async function firstUnfinished(
  tx: Executor,
  op: Pick<PushOperation, 'id' | 'connection_id' | 'order_key'>,
  olderOnly: boolean,
): Promise<number | undefined> {
  const row = await tx
    .selectFrom('push_operations')
    .select('id')
    .where('connection_id', '=', op.connection_id)
    .where('order_key', '=', op.order_key)
    .where('state', 'in', ['queued', 'sent'])
    .where('id', olderOnly ? '<' : '!=', op.id)
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return row?.id;
}

/** Takes the operation for a job: sent, one more attempt, held for leaseSeconds. */
export async function markSent(tx: Executor, id: number, jobId: string, leaseSeconds: number): Promise<PushOperation> {
  return tx
    .updateTable('push_operations')
    .set({
      state: 'sent',
      attempts: sql`attempts + 1`,
      job_id: jobId,
      locked_until: sql`now() + make_interval(secs => ${leaseSeconds})`,
      sent_at: sql`coalesce(sent_at, now())`,
      updated_at: sql`now()`,
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Saves partial progress (ids of steps already done) so a retry skips them. */
export async function saveProgress(
  db: Executor,
  id: number,
  patch: { plan?: unknown; result?: Record<string, unknown>; requestId?: string | null },
): Promise<void> {
  await db
    .updateTable('push_operations')
    .set({
      ...(patch.plan !== undefined ? { plan: JSON.stringify(patch.plan) } : {}),
      ...(patch.result ? { result: sql`coalesce(result, '{}'::jsonb) || ${JSON.stringify(patch.result)}::jsonb` } : {}),
      ...(patch.requestId ? { request_id: patch.requestId } : {}),
      updated_at: sql`now()`,
    })
    .where('id', '=', id)
    .execute();
}

/** A retryable failure: the reason is kept, the lease let go, the state stays. */
export async function markRetrying(
  tx: Executor,
  op: PushOperation,
  f: { reason: string; statusCode?: number | null; requestId?: string | null },
): Promise<PushOperation> {
  return tx
    .updateTable('push_operations')
    .set({
      reason: f.reason,
      status_code: f.statusCode ?? null,
      request_id: f.requestId ?? op.request_id,
      locked_until: null,
      updated_at: sql`now()`,
    })
    .where('id', '=', op.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export type Final =
  | { state: 'confirmed'; result: Record<string, unknown>; requestId?: string | null }
  | {
      state: 'failed';
      reason: string;
      fieldErrors?: Record<string, string[]> | null;
      statusCode?: number | null;
      requestId?: string | null;
    };

export async function markFinished(tx: Executor, op: PushOperation, f: Final): Promise<PushOperation> {
  return tx
    .updateTable('push_operations')
    .set(
      f.state === 'confirmed'
        ? {
            state: 'confirmed',
            result: sql`coalesce(result, '{}'::jsonb) || ${JSON.stringify(f.result)}::jsonb`,
            reason: null,
            field_errors: null,
            status_code: null,
            request_id: f.requestId ?? op.request_id,
          }
        : {
            state: 'failed',
            reason: f.reason,
            field_errors: f.fieldErrors ? JSON.stringify(f.fieldErrors) : null,
            status_code: f.statusCode ?? null,
            request_id: f.requestId ?? op.request_id,
          },
    )
    .set({ locked_until: null, finished_at: sql`now()`, updated_at: sql`now()` })
    .where('id', '=', op.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Back in the queue under a new job: a failed operation is queued again, a stuck one keeps its state. */
export async function requeueOperation(tx: Executor, op: PushOperation, jobId: string | null): Promise<PushOperation> {
  return tx
    .updateTable('push_operations')
    .set({
      state: op.state === 'failed' ? 'queued' : op.state,
      reason: null,
      field_errors: null,
      status_code: null,
      finished_at: null,
      job_id: jobId,
      updated_at: sql`now()`,
    })
    .where('id', '=', op.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Remembers which service order an imported channel order became; the first mapping stays. */
export async function mapChannelOrder(
  tx: Executor,
  m: { connectionId: number; channel: string; channelOrderId: string; orderId: number; operationId: number },
): Promise<void> {
  await tx
    .insertInto('channel_orders')
    .values({
      connection_id: m.connectionId,
      channel: m.channel,
      channel_order_id: m.channelOrderId,
      order_id: m.orderId,
      operation_id: m.operationId,
      // Read back a minute from now, then less often (src/channels/order-events.ts).
      watch_at: sql`now() + interval '1 minute'`,
    })
    .onConflict((oc) => oc.columns(['connection_id', 'channel', 'channel_order_id']).doNothing())
    .execute();
}

/** An imported channel order's mapping, found by the channel order or by the service's order. */
export async function channelOrderMapping(
  db: Executor,
  connectionId: number,
  key: { channel: string; channelOrderId: string } | { orderId: number },
): Promise<{ channel: string; channel_order_id: string; order_id: number } | undefined> {
  const row = await db
    .selectFrom('channel_orders')
    .select(['channel', 'channel_order_id', 'order_id'])
    .where('connection_id', '=', connectionId)
    .where((eb) =>
      'orderId' in key
        ? eb('order_id', '=', key.orderId)
        : eb.and([eb('channel', '=', key.channel), eb('channel_order_id', '=', key.channelOrderId)]),
    )
    .executeTakeFirst();
  return row;
}

/** The service's order id of an imported channel order, if known. */
export const mappedOrderId = async (db: Executor, connectionId: number, channel: string, channelOrderId: string) =>
  (await channelOrderMapping(db, connectionId, { channel, channelOrderId }))?.order_id;

/** Of the candidate orders, those mapped to a channel order of another channel. */
export async function ordersMappedElsewhere(
  db: Executor,
  connectionId: number,
  candidates: number[],
  channel: string,
): Promise<Set<number>> {
  const rows = await db
    .selectFrom('channel_orders')
    .select('order_id')
    .where('connection_id', '=', connectionId)
    .where('order_id', 'in', candidates)
    .where('channel', '!=', channel)
    .execute();
  return new Set(rows.map((r) => r.order_id));
}

/**
 * Retention: deletes at most `limit` finished operations (confirmed or failed) that finished more than
 * `olderThanSeconds` ago, in one short statement; returns how many went. Kept whatever their age: unfinished ones,
 * and an import that created an order it could not complete (`incomplete`: a later import of that channel order
 * must still refuse to take the order for done). Their channel_orders mappings stay, with operation_id NULL.
 */
export async function pruneOperations(db: Executor, olderThanSeconds: number, limit: number): Promise<number> {
  const old = sql`state IN ('confirmed', 'failed') AND created_at < now() - make_interval(secs => ${olderThanSeconds})
    AND finished_at < now() - make_interval(secs => ${olderThanSeconds}) AND (result->>'incomplete') IS DISTINCT FROM 'true'`;
  const r = await sql`DELETE FROM push_operations WHERE id = ANY(ARRAY(SELECT id FROM push_operations WHERE ${old} LIMIT ${limit}))
    AND ${old}`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}
