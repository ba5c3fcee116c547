// Job data of the sync queues and the helpers that send them.
import { sql } from 'kysely';
import type { Db } from '../db/index.ts';
import type { Boss } from '../queue/boss.ts';
import { queues } from '../queue/names.ts';
import type { FetchJob, ReconcileJob } from '../queue/jobs.ts';

/**
 * How long a drain of (connection, resource) waits for more marks before reading: the coalescing window,
 * paced by the connection's rate budget. `pairs` resources share the budget (those waiting now or read in the
 * last five minutes); with `remaining` requests until the window resets in `toReset` seconds, each resource may
 * read about every pairs x toReset / (0.8 x remaining) seconds, so steady traffic spends the budget evenly
 * across the window and leaves a fifth for sweeps, follow-up reads and pushes. Reading as fast as marks came
 * (one read a second per resource) spent the whole window in its first minute and left the mirror a window
 * behind until the reset. Bounds: 1 s (budget plentiful, or a fresh window) to 60 s. A burst is not slowed:
 * the first drain of a quiet pair starts at once and reads everything pending, 250 ids a request.
 */
export async function drainWindowSeconds(db: Db, connectionId: number): Promise<number> {
  const row = (await sql<{ remaining: number; reset_known: boolean; to_reset: number; pairs: number }>`
    SELECT b.remaining, b.reset_known, extract(epoch FROM b.reset_at - now())::float8 AS to_reset,
      (SELECT count(*)::int FROM (
        SELECT resource FROM pending_fetches WHERE connection_id = b.connection_id
        UNION SELECT resource FROM sync_log WHERE connection_id = b.connection_id AND action = 'fetch'
          AND at > now() - interval '5 minutes') r) AS pairs
    FROM api_budgets b WHERE b.connection_id = ${connectionId}`.execute(db)).rows[0];
  if (!row || !row.reset_known || row.to_reset <= 0) return 1;
  const perSecond = 0.8 * Math.max(row.remaining, 0) / row.to_reset;
  const wanted = Math.max(row.pairs, 1) / Math.max(perSecond, 1e-3);
  // pg-boss debounces per time slot of the given length: a length that changed with every call (7 s, 8 s, 7 s)
  // would open a new slot, and so a new drain, each time. A few fixed steps keep the slots stable.
  return WINDOW_STEPS.find((s) => s >= wanted) ?? 60;
}

const WINDOW_STEPS = [1, 2, 3, 5, 8, 13, 20, 30, 45, 60];

/**
 * Asks for a drain of (connection, resource). Debounced per pair: at most one job per window plus one
 * for the next window, so a burst of deliveries makes one drain and a mark made while a drain runs is
 * always followed by another. With `db`, the window is paced by the budget (drainWindowSeconds); without, or
 * for a backlog the last drain left (`backlog`), it is 1 s. The group keeps one busy connection from taking
 * every worker slot.
 */
export async function requestDrain(boss: Boss, connectionId: number, resource: string, pace?: { db: Db; backlog?: boolean }): Promise<void> {
  const seconds = pace && !pace.backlog ? await drainWindowSeconds(pace.db, connectionId) : 1;
  await boss.sendDebounced(queues.fetch, { connectionId, resource } satisfies FetchJob, { group: { id: String(connectionId) } },
    seconds, `${connectionId}:${resource}`);
}

export async function requestSweep(boss: Boss, connectionId: number, full: boolean): Promise<string | null> {
  return boss.send(queues.reconcile, { connectionId, full } satisfies ReconcileJob, { group: { id: String(connectionId) } });
}
