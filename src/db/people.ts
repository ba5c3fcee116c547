// The people and api_tokens store (migration 0230): who signs in by name, and the personal tokens of scripts and
// the CLI. Who gets in and with which role: src/console/auth.ts.
import { type Selectable, sql } from 'kysely';
import type { Executor } from './index.ts';
import type { ApiTokensTable, PeopleTable, Role, TokenOrigin } from './schema.ts';

export type Person = Selectable<PeopleTable>;
export type ApiToken = Selectable<ApiTokensTable>;

/** A person signed in: created at the first sign-in, their name, e-mail and role as the provider says now. */
export async function upsertPerson(db: Executor, p: { subject: string; email: string; name: string | null; role: Role }): Promise<Person> {
  const { rows } = await sql<Person>`
    INSERT INTO people (subject, email, name, role, last_seen_at) VALUES (${p.subject}, ${p.email}, ${p.name}, ${p.role}, now())
    ON CONFLICT (subject) DO UPDATE
      SET email = excluded.email, name = excluded.name, role = excluded.role, last_seen_at = now(), disabled_at = NULL
    RETURNING *`.execute(db);
  return rows[0]!;
}

/** The provider vouched for this subject but it may no longer come in: its sessions end, its tokens stop. */
export async function disablePerson(db: Executor, subject: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const person = await tx
      .updateTable('people')
      .set({ disabled_at: sql`coalesce(disabled_at, now())`, last_seen_at: sql`now()` })
      .where('subject', '=', subject)
      .returning('id')
      .executeTakeFirst();
    if (person) await tx.deleteFrom('console_sessions').where('person_id', '=', person.id).execute();
  });
}

/** Removes a person: their sessions and tokens go with the row (ON DELETE CASCADE); a later sign-in starts afresh. */
export async function deletePerson(db: Executor, id: number): Promise<Person | undefined> {
  return db.deleteFrom('people').where('id', '=', id).returningAll().executeTakeFirst();
}

export async function listPeople(db: Executor): Promise<Person[]> {
  return db.selectFrom('people').selectAll().orderBy('email').execute();
}

/** Where a new token's right comes from: a person, the break-glass token (its HMAC), the shell; and the token it was made with. */
export interface TokenOriginValues {
  madeBy: Exclude<TokenOrigin, 'unknown'>;
  personId?: number | null;
  operatorMac?: string | null;
  parentId?: number | null;
}

export async function insertToken(
  db: Executor,
  t: { name: string; person: string; role: Role; digest: string; expiresAt: Date; origin: TokenOriginValues },
): Promise<ApiToken> {
  return db
    .insertInto('api_tokens')
    .values({
      name: t.name,
      person: t.person,
      role: t.role,
      digest: t.digest,
      expires_at: t.expiresAt,
      made_by: t.origin.madeBy,
      person_id: t.origin.personId ?? null,
      operator_mac: t.origin.operatorMac ?? null,
      parent_id: t.origin.parentId ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A token that is neither revoked nor expired, with its person's role now (null: no person, or disabled). */
export type LiveToken = ApiToken & { person_role: Role | null };

/** The token of this digest if neither revoked nor expired; whether its origin still holds is the caller's to judge. */
export async function liveToken(db: Executor, digest: string): Promise<LiveToken | undefined> {
  return db
    .selectFrom('api_tokens as t')
    .leftJoin('people as p', (j) => j.onRef('p.id', '=', 't.person_id').on('p.disabled_at', 'is', null))
    .selectAll('t')
    .select('p.role as person_role')
    .where('t.digest', '=', digest)
    .where('t.revoked_at', 'is', null)
    .where('t.expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
}

/** Notes a token's use (after it was let in). */
export async function tokenUsed(db: Executor, id: number): Promise<void> {
  await db.updateTable('api_tokens').set({ last_used_at: sql`now()` }).where('id', '=', id).execute();
}

export async function listTokens(db: Executor): Promise<ApiToken[]> {
  return db.selectFrom('api_tokens').selectAll().orderBy('id', 'desc').execute();
}

export async function tokenById(db: Executor, id: number): Promise<ApiToken | undefined> {
  return db.selectFrom('api_tokens').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Revokes a token and every token made with it, and theirs; false when there is no such token or it was revoked
 * already. A child's revocation is its own: revoking a parent a second time finds nothing to do.
 */
export async function revokeToken(db: Executor, id: number): Promise<boolean> {
  const { rows } = await sql<{ id: number }>`
    WITH RECURSIVE tree AS (
      SELECT id FROM api_tokens WHERE id = ${id} AND revoked_at IS NULL
      UNION SELECT c.id FROM api_tokens c JOIN tree ON c.parent_id = tree.id
    )
    UPDATE api_tokens SET revoked_at = now() WHERE id IN (SELECT id FROM tree) AND revoked_at IS NULL RETURNING id`.execute(db);
  return rows.some((r) => Number(r.id) === id);
}
