// The operations table and its life cycle: create (row + job in one transaction), claim by a worker (only
// the oldest unfinished operation of an order key runs), finish (state, sync log, metrics, wake the next one),
// retry. Every state change goes through here so the sync log and metrics never miss one; the statements
// themselves are the operations store's (db/operations.ts).
import { createHash, randomUUID } from 'node:crypto';
import type { SentRequest } from '../api/transport.ts';
import { connectionName } from '../db/connections.ts';
import type { Db, Executor } from '../db/index.ts';
import {
  channelOrderMapping,
  countRefusedImports,
  firstUnfinished,
  getOperationForUpdate,
  insertOperation,
  lockOrderKey,
  mapChannelOrder,
  markFinished,
  markRetrying,
  markSent,
  orderKeyOf,
  liveOperationOfKind,
  requeueOperation,
  setOperationJob,
  type Final,
} from '../db/operations.ts';
import type { PushKind, PushOperation } from '../db/schema.ts';
import { metrics } from '../metrics.ts';
import { requestDelivery, sendPushJob } from '../queue/contracts.ts';
import { z } from 'zod';
import { blob, timestamp } from '../openapi/registry.ts';
import { kinds } from './input.ts';
import { recordImported, recordImportFailed } from '../channels/order-events.ts';
import { listChannels } from '../db/channels.ts';
import type { Boss } from '../queue/boss.ts';
import { logSync } from '../db/synclog.ts';
import type { OrderRef } from './input.ts';

/** How long a worker holds an operation; matches the push queue's job expiry. */
const LEASE_SECONDS = 900;

/**
 * The idempotency key of an import is derived from the channel order, so a second import can never create a
 * second order. Only after the service refused the create itself (POST /orders answered 4xx: nothing was
 * created) does a new import of the same channel order get a fresh key (generation), so the service does not
 * replay the stored refusal.
 */
export function importKey(connectionId: number, channel: string, channelOrderId: string, generation = 0): string {
  const digest = createHash('sha256').update(`${connectionId}\u0000${channel}\u0000${channelOrderId}`).digest('hex').slice(0, 40);
  return `cs-import-${digest}${generation ? `-${generation}` : ''}`;
}

const channelKey = (channel: string, channelOrderId: string) => `channel:${channel}:${channelOrderId}`;

/**
 * Operations sharing an order key run one at a time in id order. An order imported from a channel is keyed by
 * its channel order whether later operations name it by order_id or by channel ref, so import, ship and pay
 * of one order queue behind each other even before the import has an order id.
 */
export async function orderKeyFor(db: Executor, connectionId: number, kind: PushKind, input: Record<string, unknown>): Promise<string> {
  if (kind === 'stock-count') return 'stock-count';
  if (kind === 'receive-purchase-order') return `purchase-order:${input.purchase_order_id}`;
  const ref = input as OrderRef;
  if (ref.channel !== undefined && ref.channel_order_id !== undefined) return channelKey(ref.channel, ref.channel_order_id);
  const mapped = await channelOrderMapping(db, connectionId, { orderId: ref.order_id! });
  return mapped ? channelKey(mapped.channel, mapped.channel_order_id) : `order:${ref.order_id}`;
}

export async function recordChange(
  db: Executor,
  op: PushOperation,
  connectionName: string,
  extra: {
    error?: string | null;
    requestId?: string | null;
    durationMs?: number;
    outcome?: 'ok' | 'error' | 'warning';
    requests?: SentRequest[];
  } = {},
): Promise<void> {
  const result = (op.result ?? null) as Record<string, unknown> | null;
  const orderId = typeof result?.order_id === 'number' ? result.order_id : (op.input as OrderRef).order_id;
  const entry = {
    connectionId: op.connection_id,
    action: `push.${op.kind}.${op.state}`,
    after: op.state === 'confirmed' ? result : undefined,
    jobId: op.job_id,
    requestId: extra.requestId ?? op.request_id,
    durationMs: extra.durationMs,
    outcome: extra.outcome ?? (op.state === 'failed' ? 'error' : 'ok'),
    error: extra.error ?? (op.state === 'failed' ? op.reason : null),
    detail: {
      operation_id: op.id,
      kind: op.kind,
      state: op.state,
      attempts: op.attempts,
      order_key: op.order_key,
      order_id: orderId ?? null,
      field_errors: op.field_errors ?? undefined,
      requests: extra.requests,
    },
  };
  // The operation's own history, and the outcome once more on the order's, where an operator looks for it.
  const finished = op.state === 'confirmed' || op.state === 'failed';
  await logSync(db, [
    { ...entry, resource: 'operation', recordId: op.id },
    ...(finished && orderId !== undefined ? [{ ...entry, resource: 'order', recordId: orderId }] : []),
  ]);
  metrics.pushOperations.inc({ connection: connectionName, operation: op.kind, state: op.state });
}

/** Stores a validated operation and its job in one transaction. */
export async function createOperation(
  db: Db,
  boss: Boss,
  args: { connectionId: number; kind: PushKind; input: Record<string, unknown> },
): Promise<PushOperation> {
  const { connectionId, kind, input } = args;
  return db.transaction().execute(async (tx) => {
    const channel = input.channel as string;
    const channelOrderId = input.channel_order_id as string;
    const idempotencyKey =
      kind === 'import-order'
        ? importKey(connectionId, channel, channelOrderId, await countRefusedImports(tx, connectionId, channel, channelOrderId))
        : `cs-${kind}-${randomUUID()}`;
    const orderKey = await orderKeyFor(tx, connectionId, kind, input);
    let op = await insertOperation(tx, { connectionId, kind, input, idempotencyKey, orderKey });
    op = await setOperationJob(tx, op.id, await sendPushJob(boss, tx, op.id));
    await recordChange(tx, op, await connectionName(tx, connectionId));
    return op;
  });
}

/**
 * A void of a channel's order, once however often asked: an operation of it already queued, running or done is
 * answered instead of a new one (under the order key's lock, so two asking at once make one).
 */
export async function voidChannelOrderOnce(
  db: Db,
  boss: Boss,
  args: { connectionId: number; channel: string; channelOrderId: string },
): Promise<{ op: PushOperation; created: boolean }> {
  return db.transaction().execute(async (tx) => {
    const orderKey = channelKey(args.channel, args.channelOrderId);
    await lockOrderKey(tx, { connection_id: args.connectionId, order_key: orderKey });
    const existing = await liveOperationOfKind(tx, args.connectionId, orderKey, 'void');
    if (existing) return { op: existing, created: false };
    const input = { channel: args.channel, channel_order_id: args.channelOrderId };
    let op = await insertOperation(tx, {
      connectionId: args.connectionId,
      kind: 'void',
      input,
      idempotencyKey: `cs-void-${randomUUID()}`,
      orderKey,
    });
    op = await setOperationJob(tx, op.id, await sendPushJob(boss, tx, op.id));
    await recordChange(tx, op, await connectionName(tx, args.connectionId));
    return { op, created: true };
  });
}

export type Claim =
  | { status: 'claimed'; op: PushOperation }
  | { status: 'waiting'; op: PushOperation; behind: number } // an older operation of the same order key is unfinished
  | { status: 'busy'; op: PushOperation } // another worker holds it
  | { status: 'finished'; op: PushOperation }
  | { status: 'missing' };

/** Takes an operation for this worker if it is the oldest unfinished one of its order key. */
export async function claimOperation(db: Db, id: number, jobId: string): Promise<Claim> {
  return db.transaction().execute(async (tx): Promise<Claim> => {
    const peek = await orderKeyOf(tx, id);
    if (!peek) return { status: 'missing' };
    await lockOrderKey(tx, peek);
    const op = (await getOperationForUpdate(tx, id))!;
    if (op.state === 'confirmed' || op.state === 'failed') return { status: 'finished', op };
    // Held by another job: busy. Held by this same job: pg-boss offers a job again only once the attempt that
    // held it stopped heartbeating (a killed worker) or expired, so that attempt is gone and the lease is ours.
    if (op.locked_until && op.locked_until > new Date() && op.job_id !== jobId) return { status: 'busy', op };
    const older = await firstUnfinished(tx, op, true);
    if (older !== undefined) return { status: 'waiting', op, behind: older };
    const claimed = await markSent(tx, id, jobId, LEASE_SECONDS);
    if (op.state === 'queued') await recordChange(tx, claimed, await connectionName(tx, op.connection_id));
    return { status: 'claimed', op: claimed };
  });
}

/** `requests`: what the run sent (method, path, status, request id), kept in the outcome's sync-log detail. */
export type Outcome = { requests?: SentRequest[] } & (
  | (Extract<Final, { state: 'confirmed' }> & { mapping?: { channel: string; channelOrderId: string; orderId: number } })
  | Extract<Final, { state: 'failed' }>
  /** A retryable error; the job will run again (pg-boss retry), the operation stays sent. */
  | { state: 'retrying'; reason: string; statusCode?: number | null; requestId?: string | null }
);

/** Records the outcome of a run; when final, wakes the next operation of the same order key. */
export async function finishOperation(
  db: Db,
  boss: Boss,
  op: PushOperation,
  outcome: Outcome,
  durationMs?: number,
): Promise<PushOperation> {
  const told: number[] = [];
  const row = await db.transaction().execute(async (tx) => {
    await lockOrderKey(tx, op);
    const name = await connectionName(tx, op.connection_id);
    if (outcome.state === 'retrying') {
      const row = await markRetrying(tx, op, outcome);
      await logSync(tx, {
        connectionId: op.connection_id,
        resource: 'operation',
        recordId: op.id,
        action: `push.${op.kind}.retry`,
        jobId: op.job_id,
        requestId: outcome.requestId,
        durationMs,
        outcome: 'warning',
        error: outcome.reason,
        detail: { kind: op.kind, state: row.state, attempts: row.attempts, requests: outcome.requests },
      });
      return row;
    }
    if (outcome.state === 'confirmed' && outcome.mapping) {
      await mapChannelOrder(tx, { connectionId: op.connection_id, ...outcome.mapping, operationId: op.id });
    }
    // What became of a channel's order import is an event of the channel (src/channels/order-events.ts).
    if (op.kind === 'import-order') told.push(...(await tellImportOutcome(tx, op, outcome)));
    const row = await markFinished(tx, op, outcome);
    await recordChange(tx, row, name, { durationMs, requests: outcome.requests });
    const next = await firstUnfinished(tx, op, false);
    if (next !== undefined) await sendPushJob(boss, tx, next);
    return row;
  });
  for (const channelId of told) await requestDelivery(boss, channelId);
  return row;
}

async function tellImportOutcome(tx: Executor, op: PushOperation, outcome: Outcome): Promise<number[]> {
  if (outcome.state === 'confirmed' && outcome.mapping) {
    const result = (outcome.result ?? {}) as Record<string, unknown>;
    // Not read back now: the order's delivery reads it, or else its watch a minute from now (channel_orders.watch_at).
    return recordImported(tx, {
      connectionId: op.connection_id,
      orderId: outcome.mapping.orderId,
      status: result.status,
      orderNumber: result.order_number,
    });
  }
  if (outcome.state !== 'failed') return [];
  const input = (op.input ?? {}) as { channel?: unknown; channel_order_id?: unknown };
  if (typeof input.channel !== 'string' || typeof input.channel_order_id !== 'string') return [];
  const [channel] = await listChannels(tx, { connectionId: op.connection_id, name: input.channel });
  if (!channel) return [];
  return recordImportFailed(tx, {
    connectionId: op.connection_id,
    channelId: channel.id,
    channelOrderId: input.channel_order_id,
    operationId: op.id,
    reason: outcome.reason,
    problems: outcome.fieldErrors ?? null,
  });
}

export class RetryRefused extends Error {}

/** Puts a failed (or stuck) operation back in the queue with the same idempotency key. */
export async function retryOperation(db: Db, boss: Boss, id: number): Promise<PushOperation> {
  return db.transaction().execute(async (tx) => {
    const op = await getOperationForUpdate(tx, id);
    if (!op) throw new RetryRefused(`operation ${id} does not exist`);
    if (op.state === 'confirmed') throw new RetryRefused(`operation ${id} is already confirmed; nothing to retry`);
    if (op.locked_until && op.locked_until > new Date()) throw new RetryRefused(`operation ${id} is running right now`);
    const jobId = await sendPushJob(boss, tx, op.id);
    const row = await requeueOperation(tx, op, jobId);
    await logSync(tx, {
      connectionId: op.connection_id,
      resource: 'operation',
      recordId: op.id,
      action: `push.${op.kind}.retry-requested`,
      jobId,
      detail: { kind: op.kind, previous_state: op.state, previous_reason: op.reason },
    });
    metrics.pushOperations.inc({ connection: await connectionName(tx, op.connection_id), operation: op.kind, state: row.state });
    return row;
  });
}

const operationFields = {
  id: z.number().int(),
  connection_id: z.number().int(),
  kind: z.enum(kinds),
  state: z.enum(['queued', 'sent', 'confirmed', 'failed']),
  reason: z.string().nullable().describe('Why it failed, or what it is waiting for.'),
  field_errors: blob.describe("The service's field errors of a refused request."),
  status_code: z.number().int().nullable(),
  request_id: z.string().nullable(),
  input: z.record(z.string(), z.unknown()).describe("The operation's input as validated (the body of POST /api/operations/<kind>)."),
  result: blob.describe('What the service answered, as it answered it.'),
  idempotency_key: z.string(),
  order_key: z.string(),
  attempts: z.number().int(),
  created_at: timestamp,
  updated_at: timestamp,
  sent_at: timestamp.nullable(),
  finished_at: timestamp.nullable(),
};
const plan = blob.describe('The requests computed for the service (large for big orders and counts).');
/** An operation as `present` shows it (with its plan: GET /api/operations/{id}). */
export const operationSchema = z.object({ ...operationFields, plan: plan.optional() }).meta({ id: 'Operation' });
/** An operation row as stored (an order's record lists them). */
export const operationRowSchema = z
  .object({ ...operationFields, plan, locked_until: timestamp.nullable(), job_id: z.string().nullable() })
  .meta({ id: 'OperationRow' });

/** The API shape of an operation; `withPlan` adds the computed requests (large for big orders and counts). */
export function present(op: PushOperation, withPlan = false) {
  return {
    ...(withPlan ? { plan: op.plan } : {}),
    id: op.id,
    connection_id: op.connection_id,
    kind: op.kind,
    state: op.state,
    reason: op.reason,
    field_errors: op.field_errors,
    status_code: op.status_code,
    request_id: op.request_id,
    input: op.input,
    result: op.result,
    idempotency_key: op.idempotency_key,
    order_key: op.order_key,
    attempts: op.attempts,
    created_at: op.created_at,
    updated_at: op.updated_at,
    sent_at: op.sent_at,
    finished_at: op.finished_at,
  };
}
