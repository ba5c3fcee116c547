// The push queue's handler (its contract: src/queue/contracts.ts). A job claims its operation (only the
// oldest unfinished operation of an order key runs; the others wait and are woken when it finishes), runs it
// through the client at 'outbound' priority, and records the outcome. A refusal (4xx, bad input) fails the
// operation at once with the service's reason and field messages; a transient error is retried by pg-boss with
// the same idempotency keys, and after the last attempt the operation fails with that error.
import type { Job, JobResult, JobWithMetadata } from 'pg-boss';
import { ApiError } from '../api/index.ts';
import type { SentRequest } from '../api/transport.ts';
import { clientFor } from '../api/connections.ts';
import type { PushOperation } from '../db/schema.ts';
import { pushQueue, type PushData } from '../queue/contracts.ts';
import { defineHandler, type WorkerDeps } from '../queue/handler.ts';
import { InputError } from './input.ts';
import { OperationFailed } from './errors.ts';
import { makeContext, type Done, type OpContext } from './context.ts';
import { claimOperation, finishOperation, type Outcome } from './store.ts';
import { importOrder } from './import-order.ts';
import { ship } from './ship.ts';
import { orderAction } from './order-action.ts';
import { createReturn } from './return.ts';
import { receivePurchaseOrder } from './receive.ts';
import { stockCount } from './stock-count.ts';

const runners: Record<PushOperation['kind'], (ctx: OpContext) => Promise<Done>> = {
  'import-order': importOrder,
  ship,
  invoice: (ctx) => orderAction(ctx, 'invoice'),
  pay: (ctx) => orderAction(ctx, 'pay'),
  void: (ctx) => orderAction(ctx, 'void'),
  return: createReturn,
  'receive-purchase-order': receivePurchaseOrder,
  'stock-count': stockCount,
};

export async function runPushJob(deps: WorkerDeps, job: JobWithMetadata<PushData> | Job<PushData>): Promise<void> {
  const { db } = deps;
  const claim = await claimOperation(db, job.data.operationId, job.id);
  const log = deps.log.child({ job: job.id, operation: job.data.operationId });
  if (claim.status !== 'claimed') {
    log.debug({ status: claim.status }, 'push job: nothing to run now');
    return;
  }
  const op = claim.op;
  const started = Date.now();
  // The requests this attempt sends go into its outcome's sync-log detail (the console's operation page).
  const requests: SentRequest[] = [];
  try {
    const client = await clientFor({ db, config: deps.config, log, clients: deps.clients }, op.connection_id, {
      onRequest: (r) => requests.push(r),
    });
    const done = await runners[op.kind](makeContext({ db, client, config: deps.config, log }, op));
    await finishOperation(
      db,
      deps.boss,
      op,
      { state: 'confirmed', result: done.result, mapping: done.mapping, requests },
      Date.now() - started,
    );
    log.info({ kind: op.kind }, 'operation confirmed');
  } catch (err) {
    const outcome = { ...classify(err), requests };
    const retryLimit = 'retryLimit' in job ? job.retryLimit : 0;
    if (outcome.state === 'retrying' && job.retryCount < retryLimit) {
      await finishOperation(db, deps.boss, op, outcome, Date.now() - started);
      log.warn({ kind: op.kind, reason: outcome.reason }, 'operation will be retried');
      throw err;
    }
    const failed: Outcome =
      outcome.state === 'retrying'
        ? {
            state: 'failed',
            reason: `gave up after ${op.attempts} attempts: ${outcome.reason}`,
            statusCode: outcome.statusCode,
            requestId: outcome.requestId,
            requests,
          }
        : outcome;
    await finishOperation(db, deps.boss, op, failed, Date.now() - started);
    log.warn({ kind: op.kind, reason: (failed as { reason: string }).reason }, 'operation failed');
  }
}

/** Turns an error into a final failure (refusals) or a retry (transient). */
export function classify(err: unknown): Exclude<Outcome, { state: 'confirmed' }> {
  if (err instanceof OperationFailed)
    return { state: 'failed', reason: err.message, fieldErrors: err.fieldErrors, statusCode: err.statusCode };
  if (err instanceof InputError) return { state: 'failed', reason: `invalid input: ${err.message}` };
  if (err instanceof ApiError) {
    // The client's message names the request, the status, the service's message and field messages.
    const reason = err.message || `the service answered ${err.status ?? 'nothing'}${fieldText(err.fieldErrors)}`;
    if (!err.retryable) return { state: 'failed', reason, fieldErrors: err.fieldErrors, statusCode: err.status, requestId: err.requestId };
    return { state: 'retrying', reason, statusCode: err.status, requestId: err.requestId };
  }
  return { state: 'retrying', reason: err instanceof Error ? err.message : String(err) };
}

function fieldText(fields: Record<string, string[]> | null): string {
  if (!fields || !Object.keys(fields).length) return '';
  return ` (${Object.entries(fields)
    .map(([f, msgs]) => `${f}: ${msgs.join(', ')}`)
    .join('; ')})`;
}

export const pushHandler = defineHandler({
  queue: pushQueue,
  traceRoot: true,
  // Batches of two, fetched back to back while they come full: with one job per fetch every worker would wait
  // a polling interval between jobs even with a backlog. Each job of a batch is settled on its own.
  work: (config) => {
    const batchSize = Math.min(2, config.WORKER_CONCURRENCY);
    return {
      perJobResults: true,
      batchSize,
      burstWhenBatchFull: true,
      // At a batch of one (WORKER_CONCURRENCY 1) pg-boss ignores burstWhenBatchFull: a backlog bursts by its count.
      burstWhenReadyExceeds: 1,
      localConcurrency: Math.ceil(config.WORKER_CONCURRENCY / batchSize),
      pollingIntervalSeconds: 1,
      notifyPollingIntervalSeconds: 2,
    };
  },
  handle: (deps, jobs) =>
    Promise.all(
      jobs.map(async (job): Promise<JobResult> => {
        try {
          await runPushJob(deps, job);
          return { id: job.id, status: 'completed' };
        } catch (err) {
          // A transient failure: pg-boss retries the job with backoff (the operation stays sent).
          return { id: job.id, status: 'failed', output: { message: err instanceof Error ? err.message : String(err) } };
        }
      }),
    ),
});
