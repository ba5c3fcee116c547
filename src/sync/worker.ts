// The sync workers of one process: deliveries -> pending fetches, drains, sweeps, maintenance, and (when
// CHANNEL_WEBHOOK_URL is set) the channel publisher. Several processes share the work through pg-boss.
import { sql } from 'kysely';
import { clientFor, probeLapsed } from '../api/index.ts';
import type { ApiClient } from '../api/index.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/index.ts';
import type { Logger } from '../log.ts';
import type { Boss } from '../queue/boss.ts';
import { createQueues, queues } from '../queue/names.ts';
import { metrics } from '../metrics.ts';
import { logSync, pruneSyncLog } from '../synclog/index.ts';
import { applyRulesIfChanged, channelRules, type ChannelChange } from '../stock/channel.ts';
import { postChannelChanges } from '../stock/feed.ts';
import { workDeliveries } from './deliveries.ts';
import { drainPending } from './drain.ts';
import { requestDrain, type FetchJob, type MaintenanceJob, type ReconcileJob } from './jobs.ts';
import { pendingPairs } from './pending.ts';
import { sweep, type SweepResult } from './reconcile.ts';
import { syncSchedules } from './schedules.ts';
import { checkAllWebhooks } from '../receiver/subscriptions.ts';

export interface WorkerDeps { db: Db; boss: Boss; config: Config; log: Logger }

/** Clients are kept per connection for the life of the process (they carry token state). */
export function clientCache(deps: Omit<WorkerDeps, 'boss'>): (connectionId: number) => Promise<ApiClient> {
  const cache = new Map<number, Promise<ApiClient>>();
  return (id) => {
    let c = cache.get(id);
    if (!c) {
      c = clientFor({ db: deps.db, config: deps.config, log: deps.log }, id);
      c.catch(() => cache.delete(id));
      cache.set(id, c);
    }
    return c;
  };
}

/** Puts channel changes on the channel-stock queue (one job each). */
export async function publishChanges(boss: Boss, changes: ChannelChange[]): Promise<void> {
  for (let i = 0; i < changes.length; i += 500) {
    await boss.insert(queues.channelStock, changes.slice(i, i + 500).map((c) => ({ data: c })));
  }
}

/** commerce_sync_mirror_lag_seconds: age of the oldest change still waiting to be read, per connection. */
async function updateLag(db: Db): Promise<void> {
  const rows = await sql<{ name: string; lag: number | null }>`
    SELECT n.name, extract(epoch FROM now() - min(p.first_marked_at))::float8 AS lag
    FROM connections n LEFT JOIN pending_fetches p ON p.connection_id = n.id GROUP BY n.name`.execute(db);
  for (const r of rows.rows) metrics.mirrorLag.set({ connection: r.name }, r.lag ?? 0);
}

async function connectionActive(db: Db, id: number): Promise<boolean> {
  const row = await db.selectFrom('connections').select('status').where('id', '=', id).executeTakeFirst();
  return row?.status === 'active';
}

/** Runs one sweep of a connection now (the reconcile job, and `commerce-sync reconcile`). */
export async function runSweep(deps: WorkerDeps, client: ApiClient, opts: { full: boolean; wait?: boolean; jobId?: string | null }): Promise<SweepResult> {
  return sweep({
    db: deps.db, log: deps.log, client, rules: await channelRules(deps.db, deps.config, client.connection.id),
    overlapSeconds: deps.config.RECONCILE_OVERLAP_SECONDS, jobId: opts.jobId ?? null,
    onChanges: (changes) => publishChanges(deps.boss, changes),
  }, { full: opts.full, wait: opts.wait });
}

export async function startSyncWorkers(deps: WorkerDeps): Promise<void> {
  const { db, boss, config } = deps;
  const log = deps.log.child({ role: 'worker' });
  await createQueues(boss);
  // Drains and sweeps get clients of their own: the client keeps one request gate per connection and
  // database handle, and a gate that mixes priorities has been seen to lose a waiting request (a webhook
  // read queued ahead of a sweep's read while the sweep's reservation was in progress). Separate handles
  // on the same pool give separate gates, which share the budget in PostgreSQL as separate processes do.
  const client = clientCache({ db: db.withoutPlugins(), config, log });
  const sweepClient = clientCache({ db: db.withoutPlugins(), config, log });
  const concurrency = config.WORKER_CONCURRENCY;

  await workDeliveries({ db, boss, log });

  // A connection may hold at most half the drain slots, so one busy account cannot starve the others.
  await boss.work<FetchJob>(queues.fetch, {
    batchSize: 1, localConcurrency: concurrency, localGroupConcurrency: Math.max(1, Math.ceil(concurrency / 2)), pollingIntervalSeconds: 0.5,
  }, async ([job]) => {
    const { connectionId, resource } = job!.data;
    if (!(await connectionActive(db, connectionId))) {
      log.warn({ connectionId, resource }, 'connection not active: pending fetches wait until it is');
      return;
    }
    const c = await client(connectionId);
    const out = await drainPending({ db, log, client: c, rules: await channelRules(db, config, connectionId), jobId: job!.id }, resource);
    await publishChanges(boss, out.changes);
    for (const p of out.followUps) await requestDrain(boss, p.connectionId, p.resource, { db });
    if (out.more) await requestDrain(boss, connectionId, resource, { db, backlog: true });
    log.debug({ connectionId, resource, read: out.read, requests: out.requests, applied: out.applied, changes: out.changes.length }, 'drained');
  });

  await boss.work<ReconcileJob>(queues.reconcile, { batchSize: 1, localConcurrency: Math.max(1, Math.min(concurrency, 4)), localGroupConcurrency: 1 }, async ([job]) => {
    const { connectionId, full } = job!.data;
    if (!(await connectionActive(db, connectionId))) return;
    const r = await runSweep({ db, boss, config, log }, await sweepClient(connectionId), { full, jobId: job!.id });
    log.info({ connectionId, full, drift: r.drift, records: r.records, busy: r.busy ?? false, ms: r.durationMs }, 'sweep done');
  });

  await boss.work<MaintenanceJob>(queues.maintenance, { batchSize: 1 }, async ([job]) => {
    switch (job!.data.task) {
      case 'prune-sync-log': {
        const n = await pruneSyncLog(db, config.SYNC_LOG_RETENTION_DAYS);
        log.info({ deleted: n, retentionDays: config.SYNC_LOG_RETENTION_DAYS }, 'sync log pruned');
        break;
      }
      case 'schedules':
        await syncSchedules(db, boss, config);
        await applyRules({ db, boss, config, log });
        break;
      case 'probe-lapsed': {
        const resumed = await probeLapsed({ db, config, log });
        for (const name of resumed) {
          const c = await db.selectFrom('connections').select('id').where('name', '=', name).executeTakeFirst();
          await logSync(db, { connectionId: c?.id ?? null, action: 'connection.resumed', detail: { was: 'lapsed' } });
        }
        // Sweeps were unscheduled while it was lapsed; the first one repairs whatever changed meanwhile.
        if (resumed.length) await syncSchedules(db, boss, config);
        break;
      }
      case 'webhooks':
        // The service deletes a subscription after 3 days of failed deliveries: recreate what is missing.
        await checkAllWebhooks({ db, config, log });
        break;
      case 'pending':
        // Safety net: pending rows whose drain job was lost (a crash between commit and send) get one.
        for (const p of await pendingPairs(db)) await requestDrain(boss, p.connectionId, p.resource, { db });
        await updateLag(db);
        break;
    }
  });

  if (config.CHANNEL_WEBHOOK_URL) {
    await boss.work<ChannelChange>(queues.channelStock, { batchSize: 100 }, async (jobs) => {
      await postChannelChanges(config.CHANNEL_WEBHOOK_URL, config.CHANNEL_WEBHOOK_SECRET, jobs.map((j) => j.data));
    });
  }

  await syncSchedules(db, boss, config);
  await applyRules({ db, boss, config, log });
}

/** Channel rules changed (settings, or a channel_rules row): recompute the connection's quantities. */
async function applyRules(deps: WorkerDeps): Promise<void> {
  const connections = await deps.db.selectFrom('connections').select(['id', 'name']).where('status', '=', 'active').execute();
  for (const c of connections) {
    const n = await applyRulesIfChanged(deps.db, deps.config, Number(c.id), (changes) => publishChanges(deps.boss, changes));
    if (n !== null) deps.log.info({ connection: c.name, changes: n }, 'channel rules applied');
  }
}
