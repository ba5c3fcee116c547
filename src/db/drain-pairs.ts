// The drains' queue (migration 0280): one row per (connection, resource) with pending fetches. A mark moves
// marked_seq in markPending's own statement (src/db/pending.ts); workers claim due pairs here, several at once,
// and a drain that read what it claimed moves drained_seq to the marked_seq it claimed at, so a mark made while
// it ran leaves the pair due again after its coalescing window (next_at).
import { sql } from 'kysely';
import type { Executor } from './index.ts';
import { LEASE_SECONDS, tierOf } from './pending.ts';

export interface ClaimedPair {
  connectionId: number;
  resource: string;
  /** marked_seq when claimed: a drain that read everything pending then has drained up to it. */
  claimedSeq: number;
}

/**
 * Claims up to `limit` due pairs of active connections for `worker`, stock resources first, then the pair that
 * has waited longest since its window opened (a busy pair's window reopens after each drain, a quiet one's long
 * ago: so the quiet connection is not queued behind the busy one). One statement, which walks the due pairs in
 * that order (drain_pairs_claim: tier, next_at) and stops when it has `limit`; rows another worker is
 * claiming are skipped, not waited for. The connection's status is a subquery per pair walked, not a join: the
 * planner cannot tell how few pairs are due and hashed every connection for each claim.
 */
export async function claimPairs(db: Executor, worker: string, limit: number): Promise<ClaimedPair[]> {
  if (limit <= 0) return [];
  const { rows } = await sql<{ connection_id: number; resource: string; claimed_seq: number }>`
    UPDATE drain_pairs d SET claimed_by = ${worker}, claimed_until = now() + make_interval(secs => ${LEASE_SECONDS}),
      claimed_seq = d.marked_seq
    FROM (
      SELECT p.connection_id, p.resource FROM drain_pairs p
      WHERE p.marked_seq > p.drained_seq AND p.next_at <= now() AND (p.claimed_until IS NULL OR p.claimed_until < now())
        AND (SELECT c.status FROM connections c WHERE c.id = p.connection_id) = 'active'
      ORDER BY p.tier, p.next_at
      LIMIT ${limit} FOR UPDATE OF p SKIP LOCKED
    ) x
    WHERE d.connection_id = x.connection_id AND d.resource = x.resource
    RETURNING d.connection_id, d.resource, d.claimed_seq`.execute(db);
  return rows.map((r) => ({ connectionId: Number(r.connection_id), resource: r.resource, claimedSeq: Number(r.claimed_seq) }));
}

/** How a drain of a claimed pair ended. */
export interface PairOutcome {
  /** Everything pending at the claim was read (or cleared). */
  drained: boolean;
  /** The drain failed: the next waits 2, 4, 8 ... seconds, at most five minutes. */
  failed: boolean;
  /** Seconds until the pair's next drain may start: its coalescing window (src/sync/pacing.ts). */
  seconds: number;
}

/** Ends `worker`'s claim on the pair (a claim it lost to a mark, or to a lapse, is left alone). */
export async function releasePair(db: Executor, worker: string, pair: ClaimedPair, out: PairOutcome): Promise<void> {
  await sql`UPDATE drain_pairs SET claimed_by = NULL, claimed_until = NULL,
      drained_seq = CASE WHEN ${out.drained} THEN greatest(drained_seq, ${pair.claimedSeq}) ELSE drained_seq END,
      failures = CASE WHEN ${out.failed} THEN failures + 1 ELSE 0 END,
      next_at = now() + make_interval(secs => CASE WHEN ${out.failed} THEN least(300, power(2, failures + 1)) ELSE ${out.seconds} END)
    WHERE connection_id = ${pair.connectionId} AND resource = ${pair.resource} AND claimed_by = ${worker}`.execute(db);
}

/** Gives back every claim `worker` holds (it is stopping): they are due at once for the other workers. */
export async function releaseWorkerPairs(db: Executor, worker: string): Promise<void> {
  await sql`UPDATE drain_pairs SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = ${worker}`.execute(db);
}

/**
 * The safety net (the maintenance minute): a pair with unclaimed pending rows that is not due (rows a killed
 * drain had claimed, whose claim has since lapsed) becomes due. One statement.
 */
export async function duePendingPairs(db: Executor): Promise<number> {
  const r = await sql`INSERT INTO drain_pairs AS d (connection_id, resource, tier)
    SELECT DISTINCT connection_id, resource, ${tierOf('resource')} FROM pending_fetches
    WHERE claimed_until IS NULL OR claimed_until < now()
    ORDER BY 1, 2
    ON CONFLICT (connection_id, resource) DO UPDATE SET marked_seq = d.drained_seq + 1
      WHERE d.marked_seq <= d.drained_seq`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}
