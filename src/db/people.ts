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

/**
 * A token and each token it was made with, up to the first made by no token: its chain of rights. Parents exist
 * before their children, so the chain ends.
 */
const chainOf = (start: ReturnType<typeof sql>) => sql`
  WITH RECURSIVE chain AS (
    SELECT id, parent_id, revoked_at, expires_at FROM api_tokens WHERE ${start}
    UNION ALL
    SELECT p.id, p.parent_id, p.revoked_at, p.expires_at FROM api_tokens p JOIN chain c ON p.id = c.parent_id
  )`;

/**
 * A token is live only while every token of its chain is neither revoked nor expired. Judged when it is used, not
 * when it is made: a child minted while its parent's revocation commits escapes the recursive revoke (that sees
 * only rows committed when it runs), but not this.
 */
const chainLive = sql`NOT EXISTS (SELECT 1 FROM chain WHERE revoked_at IS NOT NULL OR expires_at <= now())`;

/** Stores a token; undefined when its parent is no longer live (revoked or expired since the request was let in). */
export async function insertToken(
  db: Executor,
  t: { name: string; person: string; role: Role; digest: string; expiresAt: Date; origin: TokenOriginValues },
): Promise<ApiToken | undefined> {
  const parentId = t.origin.parentId ?? null;
  const { rows } = await sql<ApiToken>`
    ${chainOf(sql`id = ${parentId}`)}
    INSERT INTO api_tokens (name, person, role, digest, expires_at, made_by, person_id, operator_mac, parent_id)
    SELECT ${t.name}, ${t.person}, ${t.role}, ${t.digest}, ${t.expiresAt}, ${t.origin.madeBy}, ${t.origin.personId ?? null},
      ${t.origin.operatorMac ?? null}, ${parentId}::bigint
    WHERE ${parentId}::bigint IS NULL OR ${chainLive}
    RETURNING *`.execute(db);
  return rows[0];
}

/** A token that is neither revoked nor expired, with its person's role now (null: no person, or disabled). */
export type LiveToken = ApiToken & { person_role: Role | null };

/** The token of this digest if it and every ancestor are live; whether its origin still holds is the caller's to judge. */
export async function liveToken(db: Executor, digest: string): Promise<LiveToken | undefined> {
  const { rows } = await sql<LiveToken>`
    ${chainOf(sql`digest = ${digest}`)}
    SELECT t.*, p.role AS person_role
    FROM api_tokens t LEFT JOIN people p ON p.id = t.person_id AND p.disabled_at IS NULL
    WHERE t.digest = ${digest} AND ${chainLive}`.execute(db);
  return rows[0];
}

/** Notes a token's use (after it was let in). */
export async function tokenUsed(db: Executor, id: number): Promise<void> {
  await db.updateTable('api_tokens').set({ last_used_at: sql`now()` }).where('id', '=', id).execute();
}

/**
 * Every token, as its chain makes it: revoked when it or an ancestor is (at the earliest of them), expiring when the
 * first of them does. So a child that escaped its parent's revocation is listed as revoked, as it is refused.
 */
export async function listTokens(db: Executor): Promise<ApiToken[]> {
  const { rows } = await sql<ApiToken>`
    WITH RECURSIVE chain AS (
      SELECT id AS token_id, id, parent_id, revoked_at, expires_at FROM api_tokens
      UNION ALL
      SELECT c.token_id, p.id, p.parent_id, p.revoked_at, p.expires_at FROM api_tokens p JOIN chain c ON p.id = c.parent_id
    ), effective AS (
      SELECT token_id, min(revoked_at) AS revoked_at, min(expires_at) AS expires_at FROM chain GROUP BY token_id
    )
    SELECT t.id, t.name, t.person, t.role, t.digest, t.created_at, e.expires_at, e.revoked_at, t.last_used_at, t.made_by,
      t.person_id, t.operator_mac, t.parent_id
    FROM api_tokens t JOIN effective e ON e.token_id = t.id
    ORDER BY t.id DESC`.execute(db);
  return rows;
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
  return rows.some((r) => r.id === id);
}
