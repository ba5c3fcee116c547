// The drains' queue (migration 0280): one row per (connection, resource) with pending fetches. A mark moves
// marked_seq in markPending's own statement (src/db/pending.ts); workers claim due pairs here, several at once,
// and a drain that read what it claimed moves drained_seq to the marked_seq it claimed at, so a mark made while
// it ran leaves the pair due again after its coalescing window (next_at).
import { sql } from 'kysely';
import type { Executor } from './index.ts';
import { tierOf } from './pending.ts';

/**
 * How long a pair's claim lasts unless its worker renews it (every PAIR_RENEW_SECONDS while it drains): a killed
 * worker's pairs are taken over within this, with the rows its drains had claimed (claimPairs).
 */
export const PAIR_LEASE_SECONDS = 30;
export const PAIR_RENEW_SECONDS = 10;

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
 *
 * A pair still named by a claim that lapsed (its worker stopped renewing: killed) is taken over, and the pending
 * rows its drain had claimed are freed in the same statement: the pair was that drain's alone, so they were its
 * rows, and they would otherwise wait out their own 5-minute lease.
 */
export async function claimPairs(db: Executor, worker: string, limit: number): Promise<ClaimedPair[]> {
  if (limit <= 0) return [];
  const { rows } = await sql<{ connection_id: number; resource: string; claimed_seq: number }>`
    WITH due AS (
      SELECT p.connection_id, p.resource, p.claimed_by IS NOT NULL AS taken_over FROM drain_pairs p
      WHERE p.marked_seq > p.drained_seq AND p.next_at <= now() AND (p.claimed_until IS NULL OR p.claimed_until < now())
        AND (SELECT c.status FROM connections c WHERE c.id = p.connection_id) = 'active'
      ORDER BY p.tier, p.next_at
      LIMIT ${limit} FOR UPDATE OF p SKIP LOCKED
    ), freed AS (
      UPDATE pending_fetches f SET claimed_until = NULL FROM due
      WHERE due.taken_over AND f.connection_id = due.connection_id AND f.resource = due.resource AND f.claimed_until IS NOT NULL
    )
    UPDATE drain_pairs d SET claimed_by = ${worker}, claimed_until = now() + make_interval(secs => ${PAIR_LEASE_SECONDS}),
      claimed_seq = d.marked_seq
    FROM due
    WHERE d.connection_id = due.connection_id AND d.resource = due.resource
    RETURNING d.connection_id, d.resource, d.claimed_seq`.execute(db);
  return rows.map((r) => ({ connectionId: r.connection_id, resource: r.resource, claimedSeq: Number(r.claimed_seq) }));
}

/** Renews `worker`'s claims of these pairs (their drains run on); answers how many it still held. */
export async function renewPairs(db: Executor, worker: string, pairs: ClaimedPair[]): Promise<number> {
  if (!pairs.length) return 0;
  const r = await sql`UPDATE drain_pairs d SET claimed_until = now() + make_interval(secs => ${PAIR_LEASE_SECONDS})
    FROM unnest(${pairs.map((p) => p.connectionId)}::bigint[], ${pairs.map((p) => p.resource)}::text[]) AS x(connection_id, resource)
    WHERE d.connection_id = x.connection_id AND d.resource = x.resource AND d.claimed_by = ${worker}`.execute(db);
  return Number(r.numAffectedRows ?? 0);
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
