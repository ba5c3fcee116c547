// The console_sessions store: operator sessions of the console (migration 0100). src/console/auth.ts decides
// who gets one and for how long; this module only reads and writes. Ids are digests of the cookie's secret.
import { sql } from 'kysely';
import type { Executor } from './index.ts';

/**
 * Stores a new session, the break-glass token's (`tokenMac`) or a person's (`person`), and drops the expired ones
 * (the table stays as small as the live sessions).
 */
export async function openSession(
  db: Executor,
  s: { id: string; expiresAt: Date } & ({ tokenMac: string } | { person: { id: number; role: string } }),
): Promise<void> {
  await db.deleteFrom('console_sessions').where('expires_at', '<=', sql<Date>`now()`).execute();
  await db
    .insertInto('console_sessions')
    .values({
      id: s.id,
      expires_at: s.expiresAt,
      ...('tokenMac' in s ? { token_mac: s.tokenMac } : { person_id: s.person.id, role: s.person.role }),
    })
    .execute();
}

/**
 * A live person's session: who, the role it was opened with and the person's role now. A person refused at a later
 * sign-in (disabled) has none.
 */
export async function personSession(
  db: Executor,
  id: string,
): Promise<{ person_id: number; email: string; name: string | null; role: string; person_role: string } | undefined> {
  return db
    .selectFrom('console_sessions as s')
    .innerJoin('people as p', 'p.id', 's.person_id')
    .select(['p.id as person_id', 'p.email', 'p.name', 's.role', 'p.role as person_role'])
    .where('s.id', '=', id)
    .where('s.expires_at', '>', sql<Date>`now()`)
    .where('p.disabled_at', 'is', null)
    .executeTakeFirst() as Promise<
    { person_id: number; email: string; name: string | null; role: string; person_role: string } | undefined
  >;
}

/** Whether the session exists, has not expired and was opened with the current operator token. */
export async function sessionLive(db: Executor, id: string, tokenMac: string): Promise<boolean> {
  const row = await db
    .selectFrom('console_sessions')
    .select('id')
    .where('id', '=', id)
    .where('token_mac', '=', tokenMac)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
  return !!row;
}

export async function closeSession(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('console_sessions').where('id', '=', id).execute();
}
