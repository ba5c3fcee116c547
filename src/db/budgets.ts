// The budgets store: every statement on api_budgets, whose row holds a connection's whole budget: the service's
// count, the requests in flight (leases) and the processes waiting (waiters). What a budget allows (reserve,
// release, the pure decisions) is api/budget.ts; this module only reads and writes rows. A write names the version
// it read and fails when another process wrote in between (the caller reads again).
//
// api_budgets.updated_at is when the service's count (`remaining`) was last heard from an answer, not when the
// row was last written: the budget judges by it how old its count is (api/budget.ts expectedRemaining).
import { sql, type Selectable } from 'kysely';
import type { Executor } from './index.ts';
import type { ApiBudgetsTable, Connection } from './schema.ts';

export type BudgetRow = Selectable<ApiBudgetsTable>;

/** A request sent and not yet answered (epoch ms on the database's clock). */
export interface Lease {
  rank: number;
  at: number;
  exp: number;
}

/** A process waiting for a slot, with the best rank it waits with, until `exp`. */
export interface BudgetWaiter {
  rank: number;
  exp: number;
}

/** The budget row as the decisions read it, with the database's clock, the connection's status and its version. */
export interface BudgetRecord {
  request_limit: number;
  remaining: number;
  reset_at: Date;
  reset_known: boolean;
  /** When the service's count was last heard (the row's updated_at). */
  counted_at: Date;
  /** The other spenders' rate, requests a second (null: not measured), and the count it is measured from (api/budget.ts). */
  others_rate: number | null;
  sample_remaining: number | null;
  sample_at: Date | null;
  sample_own: number;
  now: Date;
  status: Connection['status'];
  status_reason: string | null;
  /** Requests sent and not answered, by lease id. */
  leases: Record<string, Lease>;
  waiters: Record<string, BudgetWaiter>;
  lease_seq: number;
  /** Moves with every write: a write names the version it read (optimistic concurrency). */
  version: number;
}

export async function ensureBudget(db: Executor, connectionId: number): Promise<void> {
  await db
    .insertInto('api_budgets')
    .values({ connection_id: connectionId })
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/** Reads the connection's budget row (made when missing), without a lock. */
export async function readBudget(db: Executor, connectionId: number): Promise<BudgetRecord> {
  const load = () =>
    sql<BudgetRecord>`
    SELECT b.request_limit, b.remaining, b.reset_at, b.reset_known, b.updated_at AS counted_at, b.others_rate, b.sample_remaining,
      b.sample_at, b.sample_own, now() AS now, c.status,
      c.status_reason, b.leases, b.waiters, b.lease_seq, b.version
    FROM api_budgets b JOIN connections c ON c.id = b.connection_id
    WHERE b.connection_id = ${connectionId}`.execute(db);
  let { rows } = await load();
  if (!rows[0]) {
    await ensureBudget(db, connectionId);
    ({ rows } = await load());
    if (!rows[0]) throw new Error(`connection ${connectionId} does not exist`);
  }
  return rows[0];
}

export interface BudgetWrite {
  limit: number;
  remaining: number;
  resetAt: Date;
  resetKnown: boolean;
  /** When the count was heard (null: keep the stored time). */
  countedAt: Date | null;
  /** The other spenders' rate, requests a second (null: not measured), and the count it is measured from (null: none). */
  othersRate: number | null;
  sample: { remaining: number; at: Date; own: number } | null;
  leases: Record<string, Lease>;
  waiters: Record<string, BudgetWaiter>;
  leaseSeq: number;
  /** Requests granted by this write, less granted leases given back unused (requests_total counts requests sent). */
  sent?: number;
  accountingError?: boolean;
}

/**
 * Writes the row if it is still at `version` (nobody wrote it since it was read) and the connection's status is still
 * `status`; the database's clock at the write, or null: read it again and decide again. One statement, no
 * transaction: a reservation is a read and this, and holds no row lock across statements for others to wait on.
 */
export async function writeBudget(
  db: Executor,
  connectionId: number,
  version: number,
  status: Connection['status'],
  w: BudgetWrite,
): Promise<Date | null> {
  const r = await sql<{ now: Date }>`UPDATE api_budgets SET request_limit = ${w.limit}, remaining = ${w.remaining},
      reset_at = ${w.resetAt}, reset_known = ${w.resetKnown}, in_flight = ${Object.keys(w.leases).length},
      leases = ${JSON.stringify(w.leases)}::jsonb, waiters = ${JSON.stringify(w.waiters)}::jsonb, lease_seq = ${w.leaseSeq},
      version = version + 1, requests_total = requests_total + ${w.sent ?? 0},
      accounting_errors = accounting_errors + ${w.accountingError ? 1 : 0},
      updated_at = COALESCE(${w.countedAt}::timestamptz, updated_at), others_rate = ${w.othersRate}::double precision,
      sample_remaining = ${w.sample?.remaining ?? null}::integer, sample_at = ${w.sample?.at ?? null}::timestamptz,
      sample_own = ${w.sample?.own ?? 0}
    WHERE connection_id = ${connectionId} AND version = ${version}
      AND (SELECT c.status FROM connections c WHERE c.id = ${connectionId}) = ${status}
    RETURNING now() AS now`.execute(db);
  return r.rows[0]?.now ?? null;
}

/** Drops one waiter (a process no longer waiting); one statement. */
export async function deleteWaiter(db: Executor, connectionId: number, waiter: string): Promise<void> {
  await sql`UPDATE api_budgets SET waiters = waiters - ${waiter}, version = version + 1
    WHERE connection_id = ${connectionId} AND waiters ? ${waiter}`.execute(db);
}

/** The budget rows of these connections (all when none are named). */
export async function listBudgets(db: Executor, connectionIds?: number[]): Promise<BudgetRow[]> {
  if (connectionIds && !connectionIds.length) return [];
  let q = db.selectFrom('api_budgets').selectAll();
  if (connectionIds) q = q.where('connection_id', 'in', connectionIds);
  return q.execute();
}

/** What pacing needs of a connection's budget: requests left and seconds to the reset (null: not known yet). */
export async function budgetWindow(
  db: Executor,
  connectionId: number,
): Promise<{ limit: number; remaining: number; toReset: number | null } | null> {
  const { rows } = await sql<{ request_limit: number; remaining: number; reset_known: boolean; to_reset: number }>`
    SELECT request_limit, remaining, reset_known, extract(epoch FROM reset_at - now())::float8 AS to_reset
    FROM api_budgets WHERE connection_id = ${connectionId}`.execute(db);
  const r = rows[0];
  return r ? { limit: r.request_limit, remaining: r.remaining, toReset: r.reset_known ? r.to_reset : null } : null;
}

/** Per connection, live waiters for a slot with rank at most `rank` (1: webhook reads): budget that is short now. */
export async function liveWaiters(db: Executor, rank: number): Promise<Map<number, number>> {
  const r = await sql<{ connection_id: number; n: number }>`SELECT b.connection_id, count(*)::int AS n
    FROM api_budgets b, jsonb_each(b.waiters) AS w(waiter, v)
    WHERE (w.v->>'rank')::int <= ${rank} AND (w.v->>'exp')::float8 > extract(epoch FROM now()) * 1000
    GROUP BY b.connection_id`.execute(db);
  return new Map(r.rows.map((x) => [Number(x.connection_id), Number(x.n)]));
}
