// Roles on every route: each guarded route of the running console (read from its routers, not from a list) was
// mounted with a role (`documented(router)`, src/openapi/registry.ts: the compiler refuses one without, and this
// test lists any that got past it), and a personal token of each role is refused (403, naming the role needed)
// exactly where its role is below the route's; tokens are shown once, stored hashed, expire, and stop working when
// revoked, from the API and from the CLI (`--url` with OPERATOR_API_TOKEN).
import Router from '@koa/router';
import { sql } from 'kysely';
import Koa from 'koa';
import t from 'tap';
import { z } from 'zod';
import { cliActor } from '../../src/audit.ts';
import { ROLES, allows, leastRole } from '../../src/console/roles.ts';
import { commands } from '../../src/console/tokens-cli.ts';
import { createToken } from '../../src/console/tokens.ts';
import type { Role } from '../../src/db/schema.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { documented } from '../../src/openapi/registry.ts';
import { routesOf } from '../support/routes.ts';
import { testConsole } from '../support/runtime.ts';

const OPERATOR = 'operator-token-for-roles-test-0123456789';
// Open on purpose (test/reliability/access.test.ts says why), and the live tail, a stream that never ends.
const PUBLIC = /^(GET|HEAD|POST) \/(healthz|readyz|webhooks\/|login|logout|assets\/|favicon\.ico|auth\/oidc\/)/;

/** The guarded routes of an app (not PUBLIC) that were mounted without a role: the guard refuses them to everyone. */
const withoutRole = (app: Koa) =>
  routesOf(app)
    .filter((r) => r.method !== 'HEAD' && !PUBLIC.test(`${r.method} ${r.path}`) && !leastRole(r.router, r.method, r.path))
    .map((r) => `${r.method} ${r.path}`);

const sample = (path: string) =>
  path
    // Not a token of this test's: revoking one would end it mid-walk.
    .replace('/api/tokens/:id', '/api/tokens/999999')
    .replace(/:connection/g, 'shop')
    .replace(/:queue/g, 'fetch')
    .replace(/:kind/g, 'ship')
    .replace(/:name/g, 'default')
    .replace(/:[a-z_]+/gi, '1');

t.test('every guarded route has a least role, and each role is refused exactly below it', async (t) => {
  const tdb = await testDatabase(t);
  const config = testConfig({ OPERATOR_TOKEN: OPERATOR, DATABASE_URL: tdb.url, OPERATOR_LOGIN_FAILURES: 1_000_000 });
  const { rt, server } = await testConsole(t, tdb, config, captureLogger('error').log, { receiver: true });
  await tdb.db.insertInto('connections').values({ name: 'shop', base_url: 'http://127.0.0.1:1', auth_kind: 'token' }).execute();
  const base = `http://127.0.0.1:${server.port}`;
  const routes = routesOf(rt.app).filter((r) => !PUBLIC.test(`${r.method} ${r.path}`) && r.method !== 'HEAD');
  t.ok(routes.length > 60, `${routes.length} guarded routes`);
  t.same(withoutRole(rt.app), [], 'every guarded route was mounted with a role');

  const tokens = {} as Record<Role, string>;
  for (const role of ROLES) tokens[role] = (await createToken(tdb.db, cliActor(), { name: `${role} script`, role })).token;
  const wrong: string[] = [];
  for (const r of routes.filter((x) => x.path !== '/api/tail' && x.path !== '/tail')) {
    const need = leastRole(r.router, r.method, r.path)!;
    for (const role of ROLES) {
      const res = await fetch(base + sample(r.path), {
        method: r.method,
        headers: { authorization: `Bearer ${tokens[role]}`, accept: 'application/json', 'content-type': 'application/json' },
        redirect: 'manual',
        body: r.method === 'GET' || r.method === 'DELETE' ? undefined : '{}',
      });
      const text = await res.text();
      const refused = res.status === 403 && /needs the \w+ role/.test(text);
      if (refused !== !allows(role, need))
        wrong.push(`${r.method} ${r.path} as ${role} (needs ${need}): ${res.status} ${text.slice(0, 120)}`);
    }
  }
  t.same(wrong, [], 'each role is refused exactly where the route needs more, and only there');

  // A route mounted around the registry (so without a role) is listed, and refused even to an administrator (a
  // page: the answer check would take an /api route missing from the document for a drift).
  const guarded = routes.find((r) => r.path === '/api/overview')!.router;
  guarded.get('/unroled', (ctx) => {
    ctx.body = 'reached';
  });
  t.same(withoutRole(rt.app), ['GET /unroled'], 'a route without a role is listed');
  const res = await fetch(`${base}/unroled`, { headers: { authorization: `Bearer ${tokens.admin}`, accept: 'application/json' } });
  t.equal(res.status, 403, 'and refused to everyone');
  t.match(await res.json(), { error: 'GET /unroled was mounted without a role (src/console/roles.ts): refused to everyone' });
});

t.test('a route without a role: the compiler refuses it (npm run typecheck), and the listing names it', async (t) => {
  const router = new Router();
  const api = documented(router);
  api.get('/api/with-role', { role: 'viewer', summary: 'has one', answers: { 200: z.object({ ok: z.boolean() }) } }, (ctx) => {
    ctx.body = { ok: true };
  });
  api.page.get('/with-role', { role: 'operator' }, (ctx) => {
    ctx.body = 'a page';
  });
  // @ts-expect-error: `role` is a required property of an /api route: typecheck fails on a route without one
  api.get('/api/no-role', { summary: 'has none', answers: { 200: z.object({ ok: z.boolean() }) } }, (ctx) => {
    ctx.body = { ok: true };
  });
  // @ts-expect-error: and of a page's
  api.page.post('/no-role', {}, (ctx) => {
    ctx.body = 'a form';
  });
  // @ts-expect-error: and it is one of the roles
  api.page.get('/not-a-role', { role: 'owner' }, (ctx) => {
    ctx.body = 'a page';
  });
  // Mounted around the registry: no type stops it, the listing does.
  router.get('/around', (ctx) => {
    ctx.body = 'a page';
  });
  const app = new Koa();
  app.use(router.routes());
  t.same(withoutRole(app), ['GET /api/no-role', 'POST /no-role', 'GET /around'], 'every route mounted without a role, listed');
  t.equal(leastRole(router, 'HEAD', '/with-role'), 'operator', 'HEAD as GET');
  api.get('/api/typed', { role: 'viewer', summary: 'typed', answers: { 200: z.object({ ok: z.boolean() }) } }, (ctx) => {
    // @ts-expect-error: an answer is typed by its schema (z.output): the compiler refuses one that does not match
    ctx.body = { ok: 'yes' };
  });
});

t.test('personal tokens: shown once, hashed, expiring, revocable, from the API and the CLI', async (t) => {
  const tdb = await testDatabase(t);
  const config = testConfig({ OPERATOR_TOKEN: OPERATOR, DATABASE_URL: tdb.url });
  const { server } = await testConsole(t, tdb, config, captureLogger('error').log);
  const base = `http://127.0.0.1:${server.port}`;
  const call = async (token: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const made = await call(OPERATOR, 'POST', '/api/tokens', { name: 'nightly export', role: 'viewer', expires_in_days: 30 });
  t.equal(made.status, 201);
  t.match(made.body, { token: /^cst_/, name: 'nightly export', role: 'viewer', person: 'break-glass (OPERATOR_TOKEN)' });
  const token = made.body.token as string;
  const stored = await tdb.db.selectFrom('api_tokens').selectAll().execute();
  t.notMatch(JSON.stringify(stored), token.slice(4), 'only a digest is stored');
  t.notOk(JSON.stringify((await call(OPERATOR, 'GET', '/api/tokens')).body).includes(token), 'a listing never shows it');
  t.equal((await call(token, 'GET', '/api/overview')).status, 200, 'the token reads');
  t.equal((await call(token, 'PATCH', '/api/channels/default', { buffer_units: '1' })).status, 403, 'a viewer changes nothing');
  t.equal((await call(token, 'POST', '/api/tokens', { name: 'more', role: 'admin' })).status, 403, 'nor makes tokens');

  // The CLI with the token, through the API: works, then stops once the token is revoked.
  /** `commerce-sync tokens ... --url` with `apiToken` as OPERATOR_API_TOKEN. */
  const cliAs =
    (apiToken: string) =>
    async (...args: string[]) => {
      const out: string[] = [];
      const code = await commands.tokens!.run({
        name: 'tokens',
        values: { url: base },
        positionals: args,
        config: testConfig({ DATABASE_URL: tdb.url, OPERATOR_API_TOKEN: apiToken }),
        log: captureLogger('silent').log,
        out: (l) => out.push(l),
      });
      return { code, out: out.join('\n') };
    };
  const cli = cliAs(token);
  const viewerList = await cli('list');
  t.equal(viewerList.code, 1, 'listing tokens needs admin: refused through the API');
  const adminToken = (await call(OPERATOR, 'POST', '/api/tokens', { name: 'ops cli', role: 'admin' })).body.token as string;
  const admin = cliAs(adminToken);
  t.match(await admin('list'), { code: 0, out: /nightly export/ }, 'an admin token lists them from the CLI');
  t.match(await admin('revoke', String(made.body.id)), { code: 0 });
  t.equal((await call(token, 'GET', '/api/overview')).status, 401, 'the revoked token stops working');
  await sql`UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE name = 'ops cli'`.execute(tdb.db);
  t.equal((await admin('list')).code, 1, 'an expired token stops working too');
});

t.test('pages offer only the actions the role may take', async (t) => {
  const tdb = await testDatabase(t);
  const config = testConfig({ OPERATOR_TOKEN: OPERATOR, DATABASE_URL: tdb.url });
  const { server } = await testConsole(t, tdb, config, captureLogger('error').log);
  const shop = await tdb.db
    .insertInto('connections')
    .values({ name: 'shop', base_url: 'http://127.0.0.1:1', auth_kind: 'token' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const delivery = await tdb.db
    .insertInto('webhook_deliveries')
    .values({
      connection_id: shop.id,
      delivery_id: 'd-1',
      event: 'variants.update',
      resource: 'variants',
      action: 'update',
      object_id: 1,
      event_at: new Date(),
      resource_url: null,
      body: '{}',
      state: 'processed',
      error: null,
      job_id: null,
      processed_at: new Date(),
      body_digest: null,
      traceparent: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const page = async (role: Role, path: string) => {
    const { token } = await createToken(tdb.db, cliActor(), { name: `${role} ${path}`, role });
    const res = await fetch(`http://127.0.0.1:${server.port}${path}`, { headers: { authorization: `Bearer ${token}` } });
    t.equal(res.status, 200, `${role} reads ${path}`);
    return res.text();
  };
  const replay = `action="/deliveries/${delivery.id}/replay"`;
  t.notOk((await page('viewer', '/deliveries')).includes(replay), 'a viewer is offered no replay');
  t.ok((await page('operator', '/deliveries')).includes(replay), 'an operator is');
  const operatorConnections = await page('operator', '/connections/shop');
  t.notOk(operatorConnections.includes('action="/connections/token"'), 'an operator is offered no connecting');
  t.notOk(operatorConnections.includes('/disable"'), 'nor disabling');
  t.match(operatorConnections, /Connecting an account needs the admin role/, 'and told why');
  const adminConnections = await page('admin', '/connections/shop');
  t.ok(adminConnections.includes('action="/connections/token"') && adminConnections.includes('/disable"'), 'an admin is offered both');
});
