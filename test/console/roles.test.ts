// Roles on every route: each guarded route of the running console (read from its routers, not from a list) is in
// the role table, and a personal token of each role is refused (403, naming the role needed) exactly where its
// role is below the route's; tokens are shown once, stored hashed, expire, and stop working when revoked, from the
// API and from the CLI (`--url` with OPERATOR_API_TOKEN).
import { sql } from 'kysely';
import t from 'tap';
import { cliActor } from '../../src/audit.ts';
import { ROLES, ROUTE_ROLES, allows, leastRole } from '../../src/console/roles.ts';
import { commands } from '../../src/console/tokens-cli.ts';
import { createToken } from '../../src/console/tokens.ts';
import type { Role } from '../../src/db/schema.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { routesOf } from '../support/routes.ts';
import { testConsole } from '../support/runtime.ts';

const OPERATOR = 'operator-token-for-roles-test-0123456789';
// Open on purpose (test/reliability/access.test.ts says why), and the live tail, a stream that never ends.
const PUBLIC = /^(GET|HEAD|POST) \/(healthz|readyz|webhooks\/|login|logout|assets\/|auth\/oidc\/)/;

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
  const missing = routes.filter((r) => !leastRole(r.method, r.path)).map((r) => `${r.method} ${r.path}`);
  t.same(missing, [], 'every guarded route is in the role table (src/console/roles.ts)');
  const stale = [...ROUTE_ROLES.keys()].filter((k) => !routes.some((r) => `${r.method} ${r.path}` === k));
  t.same(stale, [], 'and the table names no route that does not exist');

  const tokens = {} as Record<Role, string>;
  for (const role of ROLES) tokens[role] = (await createToken(tdb.db, cliActor(), { name: `${role} script`, role })).token;
  const wrong: string[] = [];
  for (const r of routes.filter((x) => x.path !== '/api/tail' && x.path !== '/tail')) {
    const need = leastRole(r.method, r.path)!;
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
