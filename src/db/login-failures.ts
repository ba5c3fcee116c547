// The login_failures store (migration 0210): wrong operator tokens per client address, for the throttle every
// console process shares. What counts and for how long: src/console/auth.ts.
import { sql } from 'kysely';
import type { Executor } from './index.ts';

/**
 * Seconds until `address` may offer a token again (0: now): when it sent `limit` wrong ones within `windowSeconds`,
 * until the oldest of its last `limit` ages out.
 */
export async function failureWait(db: Executor, address: string, limit: number, windowSeconds: number): Promise<number> {
  const { rows } = await sql<{ wait: number | null }>`
    SELECT ceil(extract(epoch FROM (min(at) + make_interval(secs => ${windowSeconds}) - now())))::int AS wait
      FROM (SELECT at FROM login_failures
             WHERE address = ${address} AND at > now() - make_interval(secs => ${windowSeconds})
             ORDER BY at DESC LIMIT ${limit}) last
    HAVING count(*) >= ${limit}`.execute(db);
  return rows[0]?.wait ? Math.max(1, rows[0].wait) : 0;
}

/** Counts a wrong token of `address`, and drops failures older than the window (of every address). */
export async function recordFailure(db: Executor, address: string, windowSeconds: number): Promise<void> {
  await sql`WITH old AS (DELETE FROM login_failures WHERE at < now() - make_interval(secs => ${windowSeconds}))
    INSERT INTO login_failures (address) VALUES (${address})`.execute(db);
}
