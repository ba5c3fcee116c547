// fetch: drain the pending fetches of (connection, resource). Asked for by deliveries, drains that left a
// backlog or follow-ups, and the maintenance minute's safety net; debounced per pair by the pacing window.
import PQueue from 'p-queue';
import type { Freshness } from '../catalog/index.ts';
import type { Boss } from '../queue/boss.ts';
import type { WorkerDeps } from '../runtime.ts';
import { BATCH, drainPending } from '../sync/drain.ts';
import { freshnessOf, heldForStock } from '../sync/pacing.ts';
import type { SyncState } from '../sync/state.ts';
import { rulesFrom } from '../stock/rules.ts';
import { announceChanges } from './channel-delivery.ts';
import { defineJob } from './job.ts';

export interface FetchData {
  connectionId: number;
  resource: string;
}

// When drains queue up (hundreds of accounts on a busy machine), the worker takes stock reads first: pg-boss
// fetches by priority, then age. Within a tier, the oldest first.
const PRIORITY: Record<Freshness, number> = { stock: 2, documents: 1, reference: 0 };

/** What asking for a drain needs: the queue and the runtime's pacing memory. */
export type DrainRequester = { boss: Boss; sync: Pick<SyncState, 'pacing'> };

/**
 * Asks for a drain of (connection, resource). Debounced per pair: at most one job per window plus one for the
 * next window, so a burst of deliveries makes one drain and a mark made while a drain runs is always followed by
 * another. The window is paced by the budget (src/sync/pacing.ts); for a backlog the last drain left
 * (`backlog`), it is 1 s. Stock reads have the highest job priority. The group keeps one busy connection from
 * taking every worker slot.
 */
export async function requestDrain(
  deps: DrainRequester,
  connectionId: number,
  resource: string,
  opts: { backlog?: boolean } = {},
): Promise<void> {
  const { pacing } = deps.sync;
  pacing.noteActive(connectionId, resource);
  const seconds = opts.backlog ? 1 : await pacing.windowSeconds(connectionId, resource);
  await deps.boss.sendDebounced(
    fetchJob.name,
    { connectionId, resource } satisfies FetchData,
    { group: { id: String(connectionId) }, priority: PRIORITY[freshnessOf(resource)] },
    seconds,
    `${connectionId}:${resource}`,
  );
}

// How many drain requests one caller has in flight: each is a look at the budget (cached a second or five) and one or
// two pg-boss inserts. One at a time, a batch of deliveries about a hundred connections spent seconds here while
// the next deliveries waited for the deliveries job (bench/accounts, 1,000 accounts: handled 18 s after receipt).
const REQUESTS_AT_ONCE = 8;

/** Asks for the drains of many pairs, REQUESTS_AT_ONCE at a time, taken in their order. */
export async function requestDrains(deps: DrainRequester, pairs: readonly { connectionId: number; resource: string }[]): Promise<void> {
  const queue = new PQueue({ concurrency: REQUESTS_AT_ONCE });
  await queue.addAll(pairs.map((p) => () => requestDrain(deps, p.connectionId, p.resource)));
}

export const fetchJob = defineJob<FetchData>({
  name: 'fetch',
  policy: { retryLimit: 10, retryDelay: 2, retryBackoff: true, expireInSeconds: 900 },
  // A connection may hold at most WORKER_CONCURRENCY / 2 drain slots, so one busy account cannot starve the
  // others. Drains mostly wait on the API, so there are twice WORKER_CONCURRENCY slots; with a backlog a slot
  // fetches its next job at once (with hundreds of accounts, a pause of 0.5 s between jobs capped the drains
  // at a few a second and the stock lag grew to tens of seconds).
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
  await announceChanges(deps, out.changes);
  await requestDrains(deps, out.followUps);
  if (out.more) await requestDrain(deps, connectionId, resource, { backlog: true });
  log.debug(
    { connectionId, resource, read: out.read, requests: out.requests, applied: out.applied, changes: out.changes.length },
    'drained',
  );
}
