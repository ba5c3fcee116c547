// Personal tokens and people over the JSON API (admin): list, make (answered once), revoke; who has signed in.
import type Router from '@koa/router';
import bodyParser from 'koa-bodyparser';
import { noteAudit, type Actor } from '../../audit.ts';
import { OPERATOR_ROLES } from '../../config.ts';
import { deletePerson, listPeople, listTokens, revokeToken, tokenById } from '../../db/people.ts';
import { idOf } from '../../inputs.ts';
import { problem } from '../../server.ts';
import { createToken, presentToken, tokenInput, TokenRefused } from '../tokens.ts';
import type { ConsoleDeps } from '../web.ts';
import { z } from 'zod';
import { documented, timestamp } from '../../openapi/registry.ts';

const role = z.enum(OPERATOR_ROLES);
/** presentToken: never the token itself. */
const tokenFields = {
  id: z.number().int(),
  name: z.string(),
  person: z.string().describe('Who it acts for: an e-mail, or the break-glass operator.'),
  role,
  created_at: timestamp,
  expires_at: timestamp,
  revoked_at: timestamp.nullable(),
  last_used_at: timestamp.nullable(),
};
const token = z.object(tokenFields).meta({ id: 'Token' });
const person = z
  .object({
    id: z.number().int(),
    subject: z.string(),
    email: z.string(),
    name: z.string().nullable(),
    role,
    created_at: timestamp,
    last_seen_at: timestamp.nullable(),
    disabled_at: timestamp.nullable().describe('Refused at their latest sign-in: no session, no token of theirs works.'),
  })
  .meta({ id: 'Person' });

export function tokenRoutes(r: Router, deps: ConsoleDeps): void {
  const { db } = deps;
  const api = documented(r);
  const json = bodyParser({ enableTypes: ['json'], jsonLimit: '16kb', strict: true });

  api.get(
    '/api/tokens',
    { role: 'admin', summary: 'Personal tokens (never the tokens themselves)', answers: { 200: z.object({ tokens: z.array(token) }) } },
    async (ctx) => {
      ctx.body = { tokens: (await listTokens(db)).map(presentToken) };
    },
  );
  api.post(
    '/api/tokens',
    {
      role: 'admin',
      summary: 'Make a personal token (answered once)',
      body: tokenInput,
      answers: { 201: z.object({ token: z.string().describe('The token: shown in this answer only.'), ...tokenFields }) },
      problems: [400, 403],
    },
    json,
    async (ctx) => {
      try {
        const made = await createToken(db, ctx.state.actor as Actor, ctx.request.body);
        noteAudit(ctx, { target: `token ${made.row.id}` });
        ctx.status = 201;
        // The token is in this answer only; the audit entry keeps the rest (its `token` field is redacted).
        ctx.body = { token: made.token, ...presentToken(made.row) };
      } catch (err) {
        if (err instanceof TokenRefused) return problem(ctx, err.status, err.message);
        throw err;
      }
    },
  );
  api.delete(
    '/api/tokens/:id',
    { role: 'admin', summary: 'Revoke a token', answers: { 200: z.object({ revoked: z.literal(true), ...tokenFields }) }, problems: [404] },
    async (ctx) => {
      const id = idOf(ctx.params.id);
      const before = id === undefined ? undefined : await tokenById(db, id);
      if (!before || !(await revokeToken(db, id!))) return problem(ctx, 404, `no live token ${ctx.params.id}`);
      noteAudit(ctx, { target: `token ${id}`, before: presentToken(before) });
      ctx.body = { revoked: true, ...presentToken((await tokenById(db, id!))!) };
    },
  );
  api.get(
    '/api/people',
    { role: 'admin', summary: 'People who have signed in, and their roles', answers: { 200: z.object({ people: z.array(person) }) } },
    async (ctx) => {
      ctx.body = { people: await listPeople(db) };
    },
  );
  api.delete(
    '/api/people/:id',
    {
      role: 'admin',
      summary: 'Remove a person: their sessions and tokens end now (a later sign-in the provider allows starts afresh)',
      answers: { 200: z.object({ removed: z.literal(true), ...person.shape }) },
      problems: [404],
    },
    async (ctx) => {
      const id = idOf(ctx.params.id);
      const gone = id === undefined ? undefined : await deletePerson(db, id);
      if (!gone) return problem(ctx, 404, `no person ${ctx.params.id}`);
      noteAudit(ctx, { target: `person ${gone.email}`, before: gone });
      ctx.body = { removed: true, ...gone };
    },
  );
}
