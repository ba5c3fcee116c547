// Asking for drains of pending fetches (the fetch queue): by deliveries, drains that left a backlog or
// follow-ups, sweeps, and the maintenance minute's safety net; debounced per pair by the pacing window.
import PQueue from 'p-queue';
import { freshnessOf, type Freshness } from '../catalog/index.ts';
import type { Boss } from '../queue/boss.ts';
import { sendFetch, STOCK_PRIORITY } from '../queue/contracts.ts';
import type { SyncState } from './state.ts';

// When drains queue up (hundreds of accounts on a busy machine), the worker takes stock reads first: pg-boss
// fetches by priority, then age. Within a tier, the oldest first.
const PRIORITY: Record<Freshness, number> = { stock: STOCK_PRIORITY, documents: 1, reference: 0 };

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
  await sendFetch(deps.boss, { connectionId, resource }, { priority: PRIORITY[freshnessOf(resource)], seconds });
}

// How many drain requests one caller has in flight: each is a look at the budget (cached a second or five) and one or
// two pg-boss inserts. One at a time, a batch of deliveries about a hundred connections would spend seconds here
// while the next deliveries wait for the deliveries job.
const REQUESTS_AT_ONCE = 8;

/** Asks for the drains of many pairs, REQUESTS_AT_ONCE at a time, taken in their order. */
export async function requestDrains(deps: DrainRequester, pairs: readonly { connectionId: number; resource: string }[]): Promise<void> {
  const queue = new PQueue({ concurrency: REQUESTS_AT_ONCE });
  await queue.addAll(pairs.map((p) => () => requestDrain(deps, p.connectionId, p.resource)));
}
