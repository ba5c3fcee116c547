// Work that must run once at a time across every process: the sweeps' leases (a row each) and the retention run's
// session advisory lock (PostgreSQL's lock manager holds it). The transaction-scoped locks of a store stay with that
// store (db/operations.ts, db/channels.ts), as does the migrations' lock (db/migrate.ts).
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db, Executor } from './index.ts';

// The reconciliation sweeps: one per connection at a time, as a lease row (migration 0170) rather than a session
// advisory lock, so a sweep that spends minutes waiting on the API holds no pooled connection meanwhile. The holder
// renews it every LEASE_RENEW_MS; a holder that died leaves a lease that runs out after LEASE_SECONDS.
const LEASE_SECONDS = 120;
const LEASE_RENEW_MS = 30_000;
const LEASE_WAIT_MS = 1000;

/** Takes the connection's sweep lease for `holder` if nobody holds it, or its holder let it run out. */
export async function takeSweepLease(db: Executor, connectionId: number, holder: string): Promise<boolean> {
  const r = await sql<{ holder: string }>`
    INSERT INTO sweep_leases (connection_id, holder, until) VALUES (${connectionId}, ${holder}, now() + make_interval(secs => ${LEASE_SECONDS}))
    ON CONFLICT (connection_id) DO UPDATE SET holder = excluded.holder, until = excluded.until WHERE sweep_leases.until < now()
    RETURNING holder`.execute(db);
  return r.rows.length === 1;
}

async function renewSweepLease(db: Executor, connectionId: number, holder: string): Promise<void> {
  await sql`UPDATE sweep_leases SET until = now() + make_interval(secs => ${LEASE_SECONDS})
    WHERE connection_id = ${connectionId} AND holder = ${holder}`.execute(db);
}

async function releaseSweepLease(db: Executor, connectionId: number, holder: string): Promise<void> {
  await sql`DELETE FROM sweep_leases WHERE connection_id = ${connectionId} AND holder = ${holder}`.execute(db);
}

/**
 * Runs `fn` holding the connection's sweep lease. With `wait` the lease is waited for (asked again every second);
 * without, a lease held elsewhere returns undefined at once and `fn` does not run.
 */
export async function withSweepLock<T>(db: Db, connectionId: number, wait: boolean, fn: () => Promise<T>): Promise<T | undefined> {
  const holder = randomUUID();
  while (!(await takeSweepLease(db, connectionId, holder))) {
    if (!wait) return undefined;
    await new Promise((r) => setTimeout(r, LEASE_WAIT_MS));
  }
  // A renewal that fails (the database away) is not retried: the sweep's own statements fail then too, and a
  // lease that ran out meanwhile only lets a second sweep of the connection start, which the mirror's guards allow.
  const renew = setInterval(() => void renewSweepLease(db, connectionId, holder).catch(() => {}), LEASE_RENEW_MS);
  renew.unref();
  try {
    return await fn();
  } finally {
    clearInterval(renew);
    await releaseSweepLease(db, connectionId, holder).catch(() => {}); // else it runs out by itself
  }
}

/** The lock of the retention run (src/sync/retention.ts): one at a time across every worker process. */
const RETENTION_LOCK = [727_032, 0] as const;

/**
 * Runs `fn` with the retention lock held, on one pooled connection it also gets to run its statements on (each
 * its own short transaction); a lock held elsewhere returns undefined at once and `fn` does not run.
 */
export async function withRetentionLock<T>(db: Db, fn: (conn: Executor) => Promise<T>): Promise<T | undefined> {
  return db.connection().execute(async (conn) => {
    const got = await sql<{ ok: boolean }>`SELECT pg_try_advisory_lock(${RETENTION_LOCK[0]}::int, ${RETENTION_LOCK[1]}::int) AS ok`.execute(
      conn,
    );
    if (!got.rows[0]?.ok) return undefined;
    try {
      return await fn(conn);
    } finally {
      await sql`SELECT pg_advisory_unlock(${RETENTION_LOCK[0]}::int, ${RETENTION_LOCK[1]}::int)`.execute(conn);
    }
  });
}

/**
 * Runs `fn` while holding the channel's recomputation lock (a session advisory lock on one pooled connection),
 * waiting for a recomputation of the same channel elsewhere to finish first.
 */
export async function withChannelLock<T>(db: Db, channelId: number, fn: () => Promise<T>): Promise<T> {
  return db.connection().execute(async (conn) => {
    await sql`SELECT pg_advisory_lock(727033, ${channelId % 2_147_483_647}::int)`.execute(conn);
    try {
      return await fn();
    } finally {
      await sql`SELECT pg_advisory_unlock(727033, ${channelId % 2_147_483_647}::int)`.execute(conn);
    }
  });
}
