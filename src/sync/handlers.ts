// The sync feature's queue handlers: deliveries (intake.ts), reconcile (a sweep, sweep.ts) and maintenance
// (maintenance.ts). Their contracts: src/queue/contracts.ts. Drains have no queue of their own: drainer.ts.
import type { JobWithMetadata } from 'pg-boss';
import { markFailed } from '../db/deliveries.ts';
import type { Db } from '../db/index.ts';
import type { Logger } from '../log.ts';
import { deliveriesQueue, maintenanceQueue, reconcileQueue, type DeliveriesData, type ReconcileData } from '../queue/contracts.ts';
import { defineHandler } from '../queue/handler.ts';
import type { SyncDeps } from './state.ts';
import { consumeDeliveries, deliveryRefsOf } from './intake.ts';
import { handleMaintenance } from './maintenance.ts';
import { handleReconcile } from './sweep.ts';

export const deliveriesHandler = defineHandler({
  queue: deliveriesQueue,
  work: () => ({ batchSize: 200, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true }),
  async handle(deps, jobs) {
    try {
      const r = await consumeDeliveries(
        deps.db,
        jobs.map((j) => j.data),
      );
      deps.log.debug({ jobs: jobs.length, ...r, drains: r.drains.length }, 'deliveries consumed');
    } catch (err) {
      await failedForGood(deps.db, deps.log, jobs, err as Error);
      throw err;
    }
  },
});

/**
 * The jobs of a failed batch that pg-boss will not retry again go to the dead-letter queue now: their rows
 * still `queued` become `failed` with the error (a dead-letter replay moves them on to `processed`).
 */
async function failedForGood(db: Db, log: Logger, jobs: JobWithMetadata<DeliveriesData>[], err: Error): Promise<void> {
  const last = jobs.filter((j) => j.retryCount >= j.retryLimit);
  if (!last.length) return;
  try {
    const n = await markFailed(
      db,
      deliveryRefsOf(last.map((j) => j.data)),
      `job failed ${last[0]!.retryCount + 1} times, now a dead letter: ${err.message}`,
    );
    log.error({ err, jobs: last.map((j) => j.id), deliveries: n }, 'delivery jobs failed for good: deliveries marked failed');
  } catch (markErr) {
    // The database is likely away: the rows stay `queued`; the dead letters still hold them for a replay.
    log.error({ err: markErr }, 'could not mark the deliveries of dead-lettered jobs failed');
  }
}

export const reconcileHandler = defineHandler<ReconcileData, SyncDeps>({
  queue: reconcileQueue,
  traceRoot: true,
  // Sweeps mostly wait on the API and hold no database connection while they do (their lock is a lease,
  // src/db/locks.ts), so like drains they get twice WORKER_CONCURRENCY slots.
  // While jobs are ready, a worker that got one fetches again at once (burstWhenReadyExceeds; pg-boss ignores
  // burstWhenBatchFull at a batch of one): woken by notifications, an idle one polls every 5 s (a sweep asked for
  // while the listener reconnects after a database restart waits that long at most), and a backlog of first sweeps
  // must not wait that long between jobs.
  work: (config) => ({
    batchSize: 1,
    localConcurrency: config.WORKER_CONCURRENCY * 2,
    localGroupConcurrency: 1,
    burstWhenReadyExceeds: 1,
    notifyPollingIntervalSeconds: 5,
  }),
  async handle(deps, [job]) {
    if (!(await deps.sync.statuses.active(job!.data.connectionId))) return;
    await handleReconcile(deps, await deps.sync.sweepClient(job!.data.connectionId), job!);
  },
});

export const maintenanceHandler = defineHandler({
  queue: maintenanceQueue,
  traceRoot: true,
  // Its tasks come five at once every minute, one notification wakes the worker for the first, and the ready count a
  // burst reads is up to 15 s old: the rest are fetched by the poll, every 2 s as before notifications.
  work: () => ({ batchSize: 1, notifyPollingIntervalSeconds: 2 }),
  async handle(deps, [job]) {
    await handleMaintenance(deps, job!.data.task);
  },
});
