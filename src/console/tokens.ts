// Personal API tokens for scripts and the CLI: named, shown once (only their SHA-256 is kept), with an expiry,
// revocable, each acting for the person who made it in a role no higher than theirs, now as when it was made
// (src/console/auth.ts judges every use against the right it was made with).
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Actor } from '../audit.ts';
import type { Db } from '../db/index.ts';
import { insertToken, type ApiToken, type TokenOriginValues } from '../db/people.ts';
import { boundedText } from '../inputs.ts';
import { TOKEN_PREFIX, tokenDigest } from './auth.ts';
import { OPERATOR_ROLES } from '../config.ts';
import { allows } from './roles.ts';

export const tokenInput = z.strictObject({
  name: boundedText(100),
  // Named whichever door leaves it out or mistypes it (the CLI said only "Invalid option").
  role: z.enum(OPERATOR_ROLES, {
    error: (iss) =>
      `one of ${OPERATOR_ROLES.join(', ')}${iss.input === undefined ? ' (none given)' : `, not ${JSON.stringify(iss.input)}`}`,
  }),
  expires_in_days: z.number().int().min(1).max(3650).default(90),
});

export class TokenRefused extends Error {
  readonly status: 400 | 403;
  constructor(message: string, status: 400 | 403 = 400) {
    super(message);
    this.status = status;
  }
}

/** What a new token inherits from the actor that makes it: the origin of its right, and its parent token. */
function originOf(by: Actor): TokenOriginValues {
  const g = by.grant;
  switch (g.kind) {
    case 'person':
      return { madeBy: 'person', personId: g.personId };
    case 'break-glass':
      return { madeBy: 'break-glass', operatorMac: g.operatorMac };
    case 'cli':
      return { madeBy: 'cli' };
    case 'token':
      return { ...originOf({ ...by, grant: g.origin }), parentId: g.tokenId };
    case 'demo':
      // Demo mode lets in every local user as an administrator: a token made there would carry that into a
      // deployment that closes the console later (OPERATOR_TOKEN set), so none is made.
      throw new TokenRefused(
        'the open demo console makes no tokens: it lets in every user of this machine. Set OPERATOR_TOKEN (or OIDC_ISSUER) first',
        403,
      );
  }
}

/** A token as the API and the CLI list it: never the token itself. */
export const presentToken = (t: ApiToken) => ({
  id: t.id,
  name: t.name,
  person: t.person,
  role: t.role,
  created_at: t.created_at,
  expires_at: t.expires_at,
  revoked_at: t.revoked_at,
  last_used_at: t.last_used_at,
});

/** Makes a token for `by`; answers the token, to be shown once. */
export async function createToken(db: Db, by: Actor, raw: unknown): Promise<{ token: string; row: ApiToken }> {
  const parsed = tokenInput.safeParse(raw);
  if (!parsed.success) throw new TokenRefused(parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; '));
  const { name, role, expires_in_days } = parsed.data;
  const origin = originOf(by);
  if (!allows(by.role, role as Actor['role']))
    throw new TokenRefused(`role: ${by.name} (${by.role}) cannot make a token with more (${role})`);
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  // A token made by a token ends no later than its parent.
  const asked = Date.now() + expires_in_days * 86_400_000;
  const expiresAt = new Date(by.grant.kind === 'token' ? Math.min(asked, by.grant.expiresAt.getTime()) : asked);
  const row = await insertToken(db, { name, person: by.name, role: role as Actor['role'], digest: tokenDigest(token), expiresAt, origin });
  if (!row) throw new TokenRefused('the token this request was made with has been revoked or has expired', 403);
  return { token, row };
}
