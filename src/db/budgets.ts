// The budgets store: every statement on api_budgets, api_budget_leases and api_budget_waiters. What a budget
// allows (reserve, release, the pure decisions) is api/budget.ts; this module only reads and writes rows, and
// the caller holds the budget row's lock (lockBudget) for the length of its transaction.
//
// api_budgets.updated_at is when the service's count (`remaining`) was last heard from an answer, not when the
// row was last written: the budget judges by it how old its count is (api/budget.ts expectedRemaining).
import { sql, type Selectable } from 'kysely';
import type { Executor } from './index.ts';
import type { ApiBudgetsTable, Connection } from './schema.ts';

export type BudgetRow = Selectable<ApiBudgetsTable>;

/** The budget columns the decisions work on, with the database's clock and the connection's status. */
export interface LockedBudget {
  request_limit: number;
  remaining: number;
  reset_at: Date;
  reset_known: boolean;
  /** When the service's count was last heard (the row's updated_at). */
  counted_at: Date;
  now: Date;
  status: Connection['status'];
  status_reason: string | null;
}

export async function ensureBudget(db: Executor, connectionId: number): Promise<void> {
  await db
    .insertInto('api_budgets')
    .values({ connection_id: connectionId })
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/** Locks the connection's budget row (made when missing) until the caller's transaction ends. */
export async function lockBudget(trx: Executor, connectionId: number): Promise<LockedBudget> {
  const load = () =>
    sql<LockedBudget>`
    SELECT b.request_limit, b.remaining, b.reset_at, b.reset_known, b.updated_at AS counted_at, now() AS now, c.status, c.status_reason
    FROM api_budgets b JOIN connections c ON c.id = b.connection_id
    WHERE b.connection_id = ${connectionId} FOR UPDATE OF b`.execute(trx);
  let { rows } = await load();
  if (!rows[0]) {
    await ensureBudget(trx, connectionId);
    ({ rows } = await load());
    if (!rows[0]) throw new Error(`connection ${connectionId} does not exist`);
  }
  return rows[0];
}

export interface SavedBudget {
  limit: number;
  remaining: number;
  resetAt: Date;
  resetKnown: boolean;
  /** When the count was heard (null: keep the stored time). */
  countedAt: Date | null;
}

export async function saveBudget(
  trx: Executor,
  connectionId: number,
  s: SavedBudget,
  inFlight: number,
  extra: { sent?: boolean; accountingError?: boolean } = {},
): Promise<void> {
  await sql`UPDATE api_budgets SET request_limit = ${s.limit}, remaining = ${s.remaining},
      reset_at = ${s.resetAt}, reset_known = ${s.resetKnown}, in_flight = ${inFlight},
      requests_total = requests_total + ${extra.sent ? 1 : 0},
      accounting_errors = accounting_errors + ${extra.accountingError ? 1 : 0},
      updated_at = COALESCE(${s.countedAt}::timestamptz, updated_at)
    WHERE connection_id = ${connectionId}`.execute(trx);
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

/**
 * Drops expired leases and counts the live ones (requests sent and not yet answered), and of those the ones sent
 * within the last `recentMs` (whose answer is still due), in one statement.
 */
export async function liveLeases(trx: Executor, connectionId: number, recentMs = 0): Promise<{ live: number; recent: number }> {
  // The DELETE's effect is not visible to the count of the same statement, hence the count's own filter.
  const { rows } = await sql<{ live: number; recent: number }>`
    WITH expired AS (DELETE FROM api_budget_leases WHERE connection_id = ${connectionId} AND expires_at < now())
    SELECT count(*)::int AS live,
      (count(*) FILTER (WHERE created_at > now() - make_interval(secs => ${recentMs / 1000})))::int AS recent
    FROM api_budget_leases WHERE connection_id = ${connectionId} AND expires_at >= now()`.execute(trx);
  return rows[0]!;
}

export async function insertLease(trx: Executor, connectionId: number, rank: number, leaseMs: number): Promise<number> {
  const { rows } = await sql<{ id: number }>`
    INSERT INTO api_budget_leases (connection_id, rank, expires_at)
    VALUES (${connectionId}, ${rank}, now() + make_interval(secs => ${leaseMs / 1000})) RETURNING id`.execute(trx);
  return rows[0]!.id;
}

export async function deleteLease(trx: Executor, leaseId: number): Promise<void> {
  await sql`DELETE FROM api_budget_leases WHERE id = ${leaseId}`.execute(trx);
}

/** Whether another live waiter wants the budget for a more urgent (lower) rank. */
export async function betterWaiter(trx: Executor, connectionId: number, waiter: string, rank: number): Promise<boolean> {
  const { rows } = await sql<{ one: number }>`
    SELECT 1 AS one FROM api_budget_waiters WHERE connection_id = ${connectionId} AND waiter <> ${waiter}
      AND rank < ${rank} AND expires_at > now() LIMIT 1`.execute(trx);
  return rows.length > 0;
}

/** Registers (or renews) a waiter for waitMs, with two seconds of slack. */
export async function saveWaiter(trx: Executor, connectionId: number, waiter: string, rank: number, waitMs: number): Promise<void> {
  await sql`INSERT INTO api_budget_waiters (connection_id, waiter, rank, expires_at)
    VALUES (${connectionId}, ${waiter}, ${rank}, now() + make_interval(secs => ${(waitMs + 2000) / 1000}))
    ON CONFLICT (connection_id, waiter) DO UPDATE SET rank = EXCLUDED.rank, expires_at = EXCLUDED.expires_at`.execute(trx);
}

export async function deleteWaiter(db: Executor, connectionId: number, waiter: string): Promise<void> {
  await sql`DELETE FROM api_budget_waiters WHERE connection_id = ${connectionId} AND waiter = ${waiter}`.execute(db);
}

/** Per connection, live waiters for a slot with rank at most `rank` (1: webhook reads): budget that is short now. */
export async function liveWaiters(db: Executor, rank: number): Promise<Map<number, number>> {
  const r = await sql<{ connection_id: number; n: number }>`SELECT connection_id, count(*)::int AS n FROM api_budget_waiters
    WHERE rank <= ${rank} AND expires_at > now() GROUP BY connection_id`.execute(db);
  return new Map(r.rows.map((x) => [Number(x.connection_id), Number(x.n)]));
}
