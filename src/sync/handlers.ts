// The sync feature's queue handlers: deliveries (intake.ts), fetch (a drain, drain.ts), reconcile (a sweep,
// sweep.ts) and maintenance (maintenance.ts). Their contracts: src/queue/contracts.ts.
import type { JobWithMetadata } from 'pg-boss';
import { announceChanges } from '../channels/dispatch.ts';
import { markFailed } from '../db/deliveries.ts';
import type { Db } from '../db/index.ts';
import type { Logger } from '../log.ts';
import {
  deliveriesQueue,
  fetchQueue,
  maintenanceQueue,
  reconcileQueue,
  type DeliveriesData,
  type FetchData,
  type LegacyDeliveriesData,
} from '../queue/contracts.ts';
import { rulesFrom } from '../stock/rules.ts';
import { defineHandler, type WorkerDeps } from '../worker/handler.ts';
import { BATCH, drainPending } from './drain.ts';
import { requestDrain, requestDrains } from './drain-requests.ts';
import { consumeDeliveries, deliveryRefsOf } from './intake.ts';
import { handleMaintenance } from './maintenance.ts';
import { heldForStock } from './pacing.ts';
import { handleReconcile } from './sweep.ts';

export const deliveriesHandler = defineHandler({
  queue: deliveriesQueue,
  work: () => ({ batchSize: 200, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true }),
  async handle(deps, jobs) {
    try {
      const r = await consumeDeliveries(
        deps.db,
        deps,
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
async function failedForGood(
  db: Db,
  log: Logger,
  jobs: JobWithMetadata<DeliveriesData | LegacyDeliveriesData>[],
  err: Error,
): Promise<void> {
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

export const fetchHandler = defineHandler({
  queue: fetchQueue,
  // A connection may hold at most WORKER_CONCURRENCY / 2 drain slots, so one busy account cannot starve the
  // others. Drains mostly wait on the API, so there are twice WORKER_CONCURRENCY slots; with a backlog a slot
  // fetches its next job at once (a pause between jobs would cap the drains at a few a second).
  work: (config) => ({
    batchSize: 1,
    localConcurrency: config.WORKER_CONCURRENCY * 2,
    localGroupConcurrency: Math.max(1, Math.ceil(config.WORKER_CONCURRENCY / 2)),
    pollingIntervalSeconds: 0.5,
    burstWhenReadyExceeds: 1,
  }),
  async handle(deps, [job]) {
    await drain(deps, job!.id, job!.data);
  },
});

async function drain(deps: WorkerDeps, jobId: string, { connectionId, resource }: FetchData): Promise<void> {
  const { db, config, log, sync } = deps;
  if (!(await sync.statuses.active(connectionId))) {
    log.warn({ connectionId, resource }, 'connection not active: pending fetches wait until it is');
    return;
  }
  if (heldForStock(await sync.pacing.state(connectionId), resource, config.BUDGET_RESERVE)) {
    log.debug({ connectionId, resource }, 'drain held: the rest of the rate window is kept for stock reads');
    return;
  }
  const client = await sync.drainClient(connectionId);
  sync.pacing.noteActive(connectionId, resource);
  const out = await drainPending(
    {
      db,
      log,
      client,
      rules: rulesFrom(config),
      jobId,
      clockMarginMs: config.SERVICE_CLOCK_MARGIN_SECONDS * 1000,
    },
    resource,
  );
  // What a read of up to BATCH ids cost (its lines too): more ids make more reads however long a drain waits.
  sync.pacing.noteCost(connectionId, resource, out.requests / Math.max(1, Math.ceil(out.read / BATCH)));
  await announceChanges(deps, [...out.changes, ...out.orderEvents.map((id) => ({ channel_id: id }))]);
  await requestDrains(deps, out.followUps);
  if (out.more) await requestDrain(deps, connectionId, resource, { backlog: true });
  log.debug(
    { connectionId, resource, read: out.read, requests: out.requests, applied: out.applied, changes: out.changes.length },
    'drained',
  );
}

export const reconcileHandler = defineHandler({
  queue: reconcileQueue,
  traceRoot: true,
  // Sweeps mostly wait on the API and hold no database connection while they do (their lock is a lease,
  // src/db/locks.ts), so like drains they get twice WORKER_CONCURRENCY slots.
  work: (config) => ({ batchSize: 1, localConcurrency: config.WORKER_CONCURRENCY * 2, localGroupConcurrency: 1 }),
  async handle(deps, [job]) {
    if (!(await deps.sync.statuses.active(job!.data.connectionId))) return;
    await handleReconcile(deps, await deps.sync.sweepClient(job!.data.connectionId), job!);
  },
});

export const maintenanceHandler = defineHandler({
  queue: maintenanceQueue,
  traceRoot: true,
  work: () => ({ batchSize: 1 }),
  async handle(deps, [job]) {
    const task = job!.data.task;
    await handleMaintenance(deps, task === 'prune-sync-log' ? 'retention' : task);
  },
});
