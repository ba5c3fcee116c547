// Session advisory locks: work that must run once at a time across every process, with no table of its own
// (PostgreSQL's lock manager holds them). The transaction-scoped locks of a store stay with that store
// (db/operations.ts, db/channel.ts), as does the migrations' lock (db/migrate.ts).
import { sql } from 'kysely';
import type { Db } from './index.ts';

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
