// Session advisory locks: work that must run once at a time across every process, with no table of its own
// (PostgreSQL's lock manager holds them). The transaction-scoped locks of a store stay with that store
// (db/operations.ts, db/channel.ts), as does the migrations' lock (db/migrate.ts).
import { sql } from 'kysely';
import type { Db, Executor } from './index.ts';

/** The lock space of the reconciliation sweeps: one key per connection. */
const SWEEP_LOCK_SPACE = 727_031;

/**
 * Runs `fn` holding the connection's sweep lock, on one pooled connection kept until it is released. With `wait`
 * the lock is waited for; without, a lock held elsewhere returns undefined at once and `fn` does not run.
 */
export async function withSweepLock<T>(db: Db, connectionId: number, wait: boolean, fn: () => Promise<T>): Promise<T | undefined> {
  return db.connection().execute(async (conn) => {
    if (wait) await sql`SELECT pg_advisory_lock(${SWEEP_LOCK_SPACE}, ${connectionId}::int)`.execute(conn);
    else {
      const got = await sql<{ ok: boolean }>`SELECT pg_try_advisory_lock(${SWEEP_LOCK_SPACE}, ${connectionId}::int) AS ok`.execute(conn);
      if (!got.rows[0]?.ok) return undefined;
    }
    try {
      return await fn();
    } finally {
      await sql`SELECT pg_advisory_unlock(${SWEEP_LOCK_SPACE}, ${connectionId}::int)`.execute(conn);
    }
  });
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
