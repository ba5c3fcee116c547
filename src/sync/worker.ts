// The sync workers of one process: which handler takes which queue, with what concurrency. Several
// processes share the work through pg-boss. The handlers: deliveries.ts, drain.ts (fetch), reconcile.ts,
// maintenance.ts, and stock/feed.ts's poster for channel-stock when CHANNEL_WEBHOOK_URL is set.
import { clientCache } from '../api/index.ts';
import { connectionStatus } from '../db/connections.ts';
import type { Db } from '../db/index.ts';
import type { ChannelStockJob, FetchJob, MaintenanceJob, ReconcileJob } from '../queue/jobs.ts';
import { CHANNEL_DESTINATION, trackPost } from '../notify/destinations.ts';
import { createQueues, queues } from '../queue/names.ts';
import type { WorkerDeps } from '../runtime.ts';
import { channelRules } from '../stock/channel.ts';
import { postChannelChanges, publishChanges } from '../stock/feed.ts';
import { workDeliveries } from './deliveries.ts';
import { BATCH, drainPending } from './drain.ts';
import { requestDrain } from './jobs.ts';
import { applyRules, handleMaintenance } from './maintenance.ts';
import { budgetState, heldForStock, noteActive, noteCost } from './pacing.ts';
import { handleReconcile } from './reconcile.ts';
import { syncSchedules } from './schedules.ts';

// A connection's status, looked at by every drain: cached for two seconds (hundreds of connections make dozens of
// drains a second). A drain that starts just after a connection stopped is refused by the client's budget anyway
// (the reservation reads the status under the budget's lock), so the cache only decides how that drain ends.
const STATUS_MS = 2000;
const statuses = new Map<number, { at: number; active: boolean }>();
async function connectionActive(db: Db, id: number): Promise<boolean> {
  const now = Date.now();
  const hit = statuses.get(id);
  if (hit && now - hit.at < STATUS_MS) return hit.active;
  const active = (await connectionStatus(db, id)) === 'active';
  if (statuses.size > 10_000) statuses.clear();
  statuses.set(id, { at: now, active });
  return active;
}

export async function startSyncWorkers(deps: WorkerDeps): Promise<void> {
  const { db, boss, config } = deps;
  const log = deps.log.child({ role: 'worker' });
  await createQueues(boss, config);
  // Drains and sweeps get clients of their own: the client keeps one request gate per connection and
  // database handle, and a gate that mixes priorities has been seen to lose a waiting request (a webhook
  // read queued ahead of a sweep's read while the sweep's reservation was in progress). Separate handles
  // on the same pool give separate gates, which share the budget in PostgreSQL as separate processes do.
  const client = clientCache({ db: db.withoutPlugins(), config, log });
  const sweepClient = clientCache({ db: db.withoutPlugins(), config, log });
  const concurrency = config.WORKER_CONCURRENCY;

  await workDeliveries({ db, boss, log });

  // A connection may hold at most WORKER_CONCURRENCY / 2 drain slots, so one busy account cannot starve the
  // others. Drains mostly wait on the API, so there are twice WORKER_CONCURRENCY slots; with a backlog a slot
  // fetches its next job at once (with hundreds of accounts, a pause of 0.5 s between jobs capped the drains
  // at a few a second and the stock lag grew to tens of seconds).
  await boss.work<FetchJob>(
    queues.fetch,
    {
      batchSize: 1,
      localConcurrency: concurrency * 2,
      localGroupConcurrency: Math.max(1, Math.ceil(concurrency / 2)),
      pollingIntervalSeconds: 0.5,
      burstWhenReadyExceeds: 1,
    },
    async ([job]) => {
      const { connectionId, resource } = job!.data;
      if (!(await connectionActive(db, connectionId))) {
        log.warn({ connectionId, resource }, 'connection not active: pending fetches wait until it is');
        return;
      }
      if (heldForStock(await budgetState(db, connectionId), resource, config.BUDGET_RESERVE)) {
        log.debug({ connectionId, resource }, 'drain held: the rest of the rate window is kept for stock reads');
        return;
      }
      const c = await client(connectionId);
      noteActive(connectionId, resource);
      const out = await drainPending(
        {
          db,
          log,
          client: c,
          rules: await channelRules(db, config, connectionId),
          jobId: job!.id,
          clockMarginMs: config.SERVICE_CLOCK_MARGIN_SECONDS * 1000,
        },
        resource,
      );
      // What a read of up to BATCH ids cost (its lines too): more ids make more reads however long a drain waits.
      noteCost(connectionId, resource, out.requests / Math.max(1, Math.ceil(out.read / BATCH)));
      await publishChanges(boss, out.changes);
      for (const p of out.followUps) await requestDrain(boss, p.connectionId, p.resource, { db });
      if (out.more) await requestDrain(boss, connectionId, resource, { db, backlog: true });
      log.debug(
        { connectionId, resource, read: out.read, requests: out.requests, applied: out.applied, changes: out.changes.length },
        'drained',
      );
    },
  );

  await boss.work<ReconcileJob>(
    queues.reconcile,
    { batchSize: 1, localConcurrency: Math.max(1, Math.min(concurrency, 4)), localGroupConcurrency: 1 },
    async ([job]) => {
      if (!(await connectionActive(db, job!.data.connectionId))) return;
      await handleReconcile({ db, boss, config, log }, await sweepClient(job!.data.connectionId), job!);
    },
  );

  await boss.work<MaintenanceJob>(queues.maintenance, { batchSize: 1 }, async ([job]) => {
    await handleMaintenance({ db, boss, config, log }, job!.data.task);
  });

  if (config.CHANNEL_WEBHOOK_URL) {
    await boss.work<ChannelStockJob>(queues.channelStock, { batchSize: 100 }, async (jobs) => {
      // Each POST's outcome is recorded (src/notify/destinations.ts): the `destination` alert reads it.
      await trackPost(db, log, CHANNEL_DESTINATION, config.CHANNEL_WEBHOOK_URL, () =>
        postChannelChanges(
          config.CHANNEL_WEBHOOK_URL,
          config.CHANNEL_WEBHOOK_SECRET,
          jobs.map((j) => j.data),
        ),
      );
    });
  }

  await syncSchedules(db, boss, config);
  await applyRules({ db, boss, config, log });
}
