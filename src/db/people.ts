// The people and api_tokens store (migration 0230): who signs in by name, and the personal tokens of scripts and
// the CLI. Who gets in and with which role: src/console/auth.ts.
import { type Selectable, sql } from 'kysely';
import type { Executor } from './index.ts';
import type { ApiTokensTable, PeopleTable, Role } from './schema.ts';

export type Person = Selectable<PeopleTable>;
export type ApiToken = Selectable<ApiTokensTable>;

/** A person signed in: created at the first sign-in, their name, e-mail and role as the provider says now. */
export async function upsertPerson(db: Executor, p: { subject: string; email: string; name: string | null; role: Role }): Promise<Person> {
  const { rows } = await sql<Person>`
    INSERT INTO people (subject, email, name, role, last_seen_at) VALUES (${p.subject}, ${p.email}, ${p.name}, ${p.role}, now())
    ON CONFLICT (subject) DO UPDATE SET email = excluded.email, name = excluded.name, role = excluded.role, last_seen_at = now()
    RETURNING *`.execute(db);
  return rows[0]!;
}

export async function listPeople(db: Executor): Promise<Person[]> {
  return db.selectFrom('people').selectAll().orderBy('email').execute();
}

export async function insertToken(
  db: Executor,
  t: { name: string; person: string; role: Role; digest: string; expiresAt: Date },
): Promise<ApiToken> {
  return db
    .insertInto('api_tokens')
    .values({ name: t.name, person: t.person, role: t.role, digest: t.digest, expires_at: t.expiresAt })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The live token of this digest (not revoked, not expired), noting its use. */
export async function liveToken(db: Executor, digest: string): Promise<ApiToken | undefined> {
  return db
    .updateTable('api_tokens')
    .set({ last_used_at: sql`now()` })
    .where('digest', '=', digest)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returningAll()
    .executeTakeFirst();
}

export async function listTokens(db: Executor): Promise<ApiToken[]> {
  return db.selectFrom('api_tokens').selectAll().orderBy('id', 'desc').execute();
}

export async function tokenById(db: Executor, id: number): Promise<ApiToken | undefined> {
  return db.selectFrom('api_tokens').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Revokes a token; false when there is no such token or it was revoked already. */
export async function revokeToken(db: Executor, id: number): Promise<boolean> {
  const r = await db
    .updateTable('api_tokens')
    .set({ revoked_at: sql`now()` })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}
