// Personal tokens and people over the JSON API (admin): list, make (answered once), revoke; who has signed in.
import type Router from '@koa/router';
import bodyParser from 'koa-bodyparser';
import { noteAudit, type Actor } from '../../audit.ts';
import { listPeople, listTokens, revokeToken, tokenById } from '../../db/people.ts';
import { idOf } from '../../inputs.ts';
import { problem } from '../../server.ts';
import { createToken, presentToken, TokenRefused } from '../tokens.ts';
import type { ConsoleDeps } from '../web.ts';

export function tokenRoutes(r: Router, deps: ConsoleDeps): void {
  const { db } = deps;
  const json = bodyParser({ enableTypes: ['json'], jsonLimit: '16kb', strict: true });

  r.get('/api/tokens', async (ctx) => {
    ctx.body = { tokens: (await listTokens(db)).map(presentToken) };
  });
  r.post('/api/tokens', json, async (ctx) => {
    try {
      const made = await createToken(db, ctx.state.actor as Actor, ctx.request.body);
      noteAudit(ctx, { target: `token ${made.row.id}` });
      ctx.status = 201;
      // The token is in this answer only; the audit entry keeps the rest (its `token` field is redacted).
      ctx.body = { token: made.token, ...presentToken(made.row) };
    } catch (err) {
      if (err instanceof TokenRefused) return problem(ctx, 400, err.message);
      throw err;
    }
  });
  r.delete('/api/tokens/:id', async (ctx) => {
    const id = idOf(ctx.params.id);
    const before = id === undefined ? undefined : await tokenById(db, id);
    if (!before || !(await revokeToken(db, id!))) return problem(ctx, 404, `no live token ${ctx.params.id}`);
    noteAudit(ctx, { target: `token ${id}`, before: presentToken(before) });
    ctx.body = { revoked: true, ...presentToken((await tokenById(db, id!))!) };
  });
  r.get('/api/people', async (ctx) => {
    ctx.body = { people: await listPeople(db) };
  });
}
