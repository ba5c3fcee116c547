// The helpers that send the sync queues' jobs (their payload types live in src/queue/jobs.ts).
import type { Db } from '../db/index.ts';
import type { Boss } from '../queue/boss.ts';
import { queues } from '../queue/names.ts';
import type { FetchJob, ReconcileJob } from '../queue/jobs.ts';
import type { Freshness } from '../catalog/index.ts';
import { drainWindowSeconds, freshnessOf, noteActive } from './pacing.ts';

// When drains queue up (hundreds of accounts on a busy machine), the worker takes stock reads first: pg-boss
// fetches by priority, then age. Within a tier, the oldest first.
const PRIORITY: Record<Freshness, number> = { stock: 2, documents: 1, reference: 0 };

/**
 * Asks for a drain of (connection, resource). Debounced per pair: at most one job per window plus one
 * for the next window, so a burst of deliveries makes one drain and a mark made while a drain runs is
 * always followed by another. Stock reads have the highest job priority. With `db`, the window is paced by the budget (src/sync/pacing.ts); without, or
 * for a backlog the last drain left (`backlog`), it is 1 s. The group keeps one busy connection from taking
 * every worker slot.
 */
export async function requestDrain(
  boss: Boss,
  connectionId: number,
  resource: string,
  pace?: { db: Db; backlog?: boolean },
): Promise<void> {
  noteActive(connectionId, resource);
  const seconds = pace && !pace.backlog ? await drainWindowSeconds(pace.db, connectionId, resource) : 1;
  await boss.sendDebounced(
    queues.fetch,
    { connectionId, resource } satisfies FetchJob,
    { group: { id: String(connectionId) }, priority: PRIORITY[freshnessOf(resource)] },
    seconds,
    `${connectionId}:${resource}`,
  );
}

export async function requestSweep(boss: Boss, connectionId: number, full: boolean): Promise<string | null> {
  return boss.send(queues.reconcile, { connectionId, full } satisfies ReconcileJob, { group: { id: String(connectionId) } });
}
