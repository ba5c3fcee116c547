// Operator access: with OPERATOR_TOKEN set, every route of the app (enumerated from the Koa routers actually
// mounted by the receiver and console roles, not from a hand-written list) refuses a request that carries no
// valid operator credentials. The only open routes are the ones named here, each for a stated reason.
import t from 'tap';
import http from 'node:http';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSandbox } from '@commerce-sync/sandbox';
import { sql } from 'kysely';
import { addTokenConnection } from '../../src/api/connections.ts';
import { testConsole } from '../support/runtime.ts';
import type { Runtime } from '../../src/runtime.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { spawnCli } from '../support/processes.ts';
import { routesOf } from '../support/routes.ts';
import { ClientState } from '../../src/api/client-state.ts';
import type { Teardown } from '../support/teardown.ts';

const OPERATOR = 'operator-token-for-access-test';

// Open on purpose: health probes (load balancers), webhook deliveries (authenticated by their signature), the
// login form and its static assets (stylesheet, script, icon), logout (it only clears the cookie), and sign-in
// through the OpenID provider (its start only redirects there; its callback opens a session only for a code the
// provider vouches for).
const PUBLIC = new Set([
  'GET /healthz',
  'GET /readyz',
  'POST /webhooks/:connection',
  'GET /login',
  'POST /login',
  'POST /logout',
  'GET /auth/oidc/start',
  'GET /auth/oidc/callback',
  'HEAD /auth/oidc/start',
  'HEAD /auth/oidc/callback',
  'GET /assets/console.css',
  'GET /assets/console.js',
  'GET /favicon.ico',
  'HEAD /healthz',
  'HEAD /readyz',
  'HEAD /login',
  'HEAD /assets/console.css',
  'HEAD /assets/console.js',
  'HEAD /favicon.ico',
]);

const sample = (path: string) =>
  path
    .replace(/:connection/g, 'shop')
    .replace(/:queue/g, 'reconcile')
    .replace(/:kind/g, 'ship')
    .replace(/:[a-z_]+/gi, '1');

const KEY = Buffer.alloc(32, 7).toString('base64');

/** A request with a Host header of our choosing (fetch always sends the URL's own). */
function request(
  base: string,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method: opts.method ?? 'GET', headers: opts.headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        text += d;
      });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

async function world(t: Teardown, operatorToken: string, opts: { demo?: Runtime['demo']; config?: Parameters<typeof testConfig>[0] } = {}) {
  const tdb = await testDatabase(t);
  const { log } = captureLogger('error');
  const config = testConfig({
    OPERATOR_TOKEN: operatorToken,
    COMMERCE_CLIENT_SECRET: 'secret',
    DATABASE_URL: tdb.url,
    TOKEN_ENCRYPTION_KEY: KEY,
    ...opts.config,
  });
  const { rt, server } = await testConsole(t, tdb, config, log, { receiver: true, demo: opts.demo });
  const app = rt.app;
  if (!opts.demo)
    await tdb.db.insertInto('connections').values({ name: 'shop', base_url: 'http://127.0.0.1:1', auth_kind: 'token' }).execute();
  return { base: `http://127.0.0.1:${server.port}`, routes: routesOf(app), db: tdb.db, rt, url: tdb.url };
}

t.test('with OPERATOR_TOKEN set, every non-public route refuses missing and wrong credentials', async (t) => {
  // Hundreds of wrong tokens from one address: the failure throttle would answer 429 long before the end.
  const { base, routes } = await world(t, OPERATOR, { config: { OPERATOR_LOGIN_FAILURES: 1_000_000 } });
  t.ok(routes.length > 25, `${routes.length} routes found on the routers`);
  const guarded = routes.filter((r) => !PUBLIC.has(`${r.method} ${r.path}`));
  t.ok(
    guarded.some((r) => r.path.startsWith('/api/operations')) && guarded.some((r) => r.path === '/metrics'),
    'push, stock and console routes are among them',
  );
  const wrong: Record<string, string>[] = [
    {},
    { authorization: 'Bearer wrong-token' },
    { authorization: `Bearer ${OPERATOR}x` },
    { authorization: `Basic ${Buffer.from('admin:wrong').toString('base64')}` },
    { authorization: `Basic ${Buffer.from(OPERATOR).toString('base64')}` },
    { cookie: 'cs_operator=wrong' },
    { authorization: 'Bearer ' },
  ];
  const admitted: string[] = [];
  for (const r of guarded) {
    for (const headers of wrong) {
      const res = await fetch(base + sample(r.path), {
        method: r.method,
        headers: { accept: 'application/json', ...headers },
        redirect: 'manual',
        body: r.method === 'POST' || r.method === 'PUT' ? '{}' : undefined,
      });
      await res.arrayBuffer();
      if (res.status !== 401) admitted.push(`${r.method} ${r.path} with ${JSON.stringify(headers)}: ${res.status}`);
    }
  }
  t.same(admitted, [], `all ${guarded.length} guarded routes answer 401 to ${wrong.length} kinds of missing or wrong credentials`);

  // The same requests with the token get through the guard (so the 401s above are the guard's doing).
  const refusedWithToken: string[] = [];
  for (const r of guarded.filter((x) => x.method === 'GET' && x.path !== '/api/tail')) {
    const res = await fetch(base + sample(r.path), {
      headers: { authorization: `Bearer ${OPERATOR}`, accept: 'application/json' },
      redirect: 'manual',
    });
    await res.arrayBuffer();
    if (res.status === 401 || res.status === 403) refusedWithToken.push(`${r.path}: ${res.status}`);
  }
  t.same(refusedWithToken, [], 'with the operator token the GET routes are let through');

  const open = routes.filter((r) => PUBLIC.has(`${r.method} ${r.path}`)).map((r) => `${r.method} ${r.path}`);
  t.ok(open.includes('POST /webhooks/:connection'), `open routes: ${[...new Set(open)].join(', ')}`);
  const unsigned = await fetch(`${base}/webhooks/shop`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
  t.equal(unsigned.status, 401, 'the webhook route is open to the service only: an unsigned delivery gets 401');
});

t.test('with no OPERATOR_TOKEN outside demo mode, the console and API are closed', async (t) => {
  const { base, routes } = await world(t, '');
  const admitted: string[] = [];
  for (const r of routes.filter((x) => !PUBLIC.has(`${x.method} ${x.path}`))) {
    const res = await fetch(base + sample(r.path), {
      method: r.method,
      headers: { accept: 'application/json', authorization: 'Bearer anything' },
      redirect: 'manual',
      body: r.method === 'POST' ? '{}' : undefined,
    });
    await res.arrayBuffer();
    if (res.status !== 401) admitted.push(`${r.method} ${r.path}: ${res.status}`);
  }
  t.same(admitted, [], 'every guarded route answers 401');
});

t.test('open demo mode lasts only while the sandbox is the only connection; it cannot connect accounts', async (t) => {
  const sandbox = await startSandbox({ variants: 3 });
  const real = await startSandbox({ variants: 3, token: 'real-account-token' });
  t.teardown(() => Promise.all([sandbox.close(), real.close()]));
  const { base, db, rt } = await world(t, '', { demo: { baseUrl: sandbox.url } });
  const deps = { db, config: rt.config, log: rt.log, clients: new ClientState() };
  await addTokenConnection(deps, { baseUrl: sandbox.url, token: sandbox.token, name: 'demo' });

  t.equal((await fetch(`${base}/api/overview`)).status, 200, 'the sandbox alone: open on localhost');
  const page = await (await fetch(`${base}/connections`)).text();
  t.match(page, /Demo mode:/);
  t.notMatch(page, /<button>Connect with a token<\/button>/, 'the token form is not usable in demo mode');
  t.match(page, /<button disabled>Connect with a token<\/button>/, 'its button is disabled');
  t.match(page, /<button disabled>Connect with OAuth<\/button>/, 'and so is the OAuth one');
  t.match(page, /set OPERATOR_TOKEN to connect/i, 'the page says why');

  // A page on this machine (or anyone reaching loopback) cannot connect an account through the open console.
  const connect = await fetch(`${base}/connections/token`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ base_url: real.url, token: real.token, name: 'real' }).toString(),
  });
  t.equal(connect.status, 403, 'connecting from the open demo console is refused');
  const oauth = await fetch(`${base}/connections/oauth`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ base_url: real.url }).toString(),
  });
  t.equal(oauth.status, 403, 'and so is starting OAuth');
  t.same(
    (await db.selectFrom('connections').select('name').execute()).map((c) => c.name),
    ['demo'],
    'nothing was connected',
  );

  // A real account connected another way (the CLI's connect): the console closes at once, no restart.
  await addTokenConnection(deps, { baseUrl: real.url, token: real.token, name: 'real' });
  const after = await fetch(`${base}/api/overview`);
  t.equal(after.status, 401, 'with a real account beside the sandbox the console is closed');
  t.match(await after.json(), { error: /set OPERATOR_TOKEN/ });
  const html = await fetch(`${base}/`, { headers: { accept: 'text/html' } });
  t.equal(html.status, 401);
  t.notMatch(await html.text(), /Demo mode:/, 'and no longer calls itself a demo');
});

t.test('SANDBOX=on beside a real account: the console of `start` is closed', async (t) => {
  const tdb = await testDatabase(t);
  const real = await startSandbox({ variants: 3, token: 'real-account-token' });
  t.teardown(() => real.close());
  const app = await spawnCli(
    t,
    'start',
    ['start'],
    {
      DATABASE_URL: tdb.url,
      DATA_DIR: await mkdtemp(join(tmpdir(), 'cs-access-')),
      TOKEN_ENCRYPTION_KEY: KEY,
      HOST: '127.0.0.1',
      PORT: 0,
      LOG_LEVEL: 'warn',
      SANDBOX: 'on',
      SANDBOX_ACTIVITY: 0,
      SANDBOX_VARIANTS: 3,
      COMMERCE_BASE_URL: real.url,
      COMMERCE_TOKEN: real.token,
    },
    { readyTimeoutMs: 60_000 },
  );
  const names = (await tdb.db.selectFrom('connections').select('name').orderBy('name').execute()).map((c) => c.name);
  t.equal(names.length, 2, `the sandbox and the real account are both connected (${names.join(', ')})`);
  const res = await fetch(`${app.url}/api/overview`);
  t.equal(res.status, 401, 'no operator token and a real account: closed, sandbox or not');
  await res.arrayBuffer();
  await app.stop();
});

t.test('DNS rebinding: console routes answer only to loopback names and the PUBLIC_URL host', async (t) => {
  const sandbox = await startSandbox({ variants: 2 });
  t.teardown(() => sandbox.close());
  // Open demo: the one mode where being on loopback is the credential, so a rebound name would get it.
  const demo = await world(t, '', { demo: { baseUrl: sandbox.url } });
  const port = new URL(demo.base).port;
  const rebound = { host: `rebind.evil.example:${port}` };
  const overview = await request(demo.base, '/api/overview', { headers: rebound });
  t.equal(overview.status, 403, 'a page on a rebound name cannot read the open console');
  t.match(overview.text, /Host/);
  const page = await request(demo.base, '/', { headers: { ...rebound, accept: 'text/html' } });
  t.equal(page.status, 403, 'nor its pages');
  t.notMatch(page.text, /Demo mode/);
  // Same origin as far as the old check could tell: Origin and Host agree, both the attacker's name.
  const post = await request(demo.base, '/api/deliveries/1/replay', {
    method: 'POST',
    headers: { ...rebound, origin: `http://rebind.evil.example:${port}`, 'content-type': 'application/json' },
    body: '{}',
  });
  t.equal(post.status, 403, 'nor post to it with a matching Origin');
  const forwarded = await request(demo.base, '/api/overview', {
    headers: { host: `127.0.0.1:${port}`, 'x-forwarded-host': 'rebind.evil.example' },
  });
  t.equal(forwarded.status, 403, 'a forwarded host is held to the same rule');
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `app.localhost:${port}`, '127.0.0.1']) {
    t.equal((await request(demo.base, '/api/overview', { headers: { host } })).status, 200, `Host ${host} is loopback: open demo`);
  }
  const login = await request(demo.base, '/login', { headers: rebound });
  t.equal(login.status, 403, 'the login form too');

  // With a token and PUBLIC_URL: its host, or loopback.
  const OP = 'operator-token-for-host-test-0123456789';
  const prod = await world(t, OP, { config: { PUBLIC_URL: 'https://console.example.com' } });
  const at = (host: string, headers: Record<string, string> = {}) => request(prod.base, '/login', { headers: { host, ...headers } });
  t.equal((await at('console.example.com')).status, 200, 'PUBLIC_URL host');
  t.equal((await at('CONSOLE.example.com:443')).status, 200, 'its host in another case, with a port');
  t.equal((await at('console.example.com.evil.example')).status, 403, 'a name that only starts like it');
  t.equal((await at('other.example')).status, 403, 'another name');
  // A request carrying the token is judged by the token: no browser sends it to a rebound name by itself,
  // and Prometheus or a script may address the console by an internal name.
  const scraped = await request(prod.base, '/metrics', { headers: { host: 'sync-1.internal:3000', authorization: `Bearer ${OP}` } });
  t.equal(scraped.status, 200, 'with the operator token in the request, any Host');
  const wrong = await request(prod.base, '/metrics', { headers: { host: 'sync-1.internal:3000', authorization: 'Bearer wrong' } });
  t.equal(wrong.status, 401, 'and a wrong token is still refused');

  // The receiver checks no Host: the service posts from outside, through whatever name a tunnel or load
  // balancer has, and a delivery carries its own credential (the signature), nothing a rebound page could use.
  const delivery = await request(prod.base, '/webhooks/shop', {
    method: 'POST',
    headers: { host: 'tunnel.example', 'content-type': 'application/json' },
    body: '{}',
  });
  t.equal(delivery.status, 401, 'a delivery under any Host is judged by its signature');
});

const cookieOf = (res: { headers: http.IncomingHttpHeaders }) => {
  const set = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith('cs_operator='));
  return set ? { value: set.slice(0, set.indexOf(';')), attributes: set } : null;
};
const loginAs = (base: string, token: string, headers: Record<string, string> = {}) =>
  request(base, '/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams({ token, next: '/' }).toString(),
  });

t.test('sessions: a login opens a server-side session that expires, and logout or a new token ends', async (t) => {
  const OP = 'operator-token-for-session-tests';
  const { base, db, rt } = await world(t, OP, { config: { OPERATOR_SESSION_HOURS: 8 } });
  const first = await loginAs(base, OP);
  t.equal(first.status, 302, 'the login form lets the operator in');
  const cookie = cookieOf(first)!;
  t.ok(cookie, 'and sets the session cookie');
  t.match(cookie.attributes, /HttpOnly/i);
  t.match(cookie.attributes, /SameSite=Strict/i);
  t.match(cookie.attributes, /Max-Age=28800|expires=/i, 'which expires with the session (OPERATOR_SESSION_HOURS)');
  t.notMatch(cookie.attributes, /;\s*secure/i, 'not Secure on loopback over http (the browser would drop it)');
  const second = cookieOf(await loginAs(base, OP))!;
  t.not(second.value, cookie.value, 'each login is its own session (not a fixed value derived from the token)');
  t.equal((await request(base, '/api/overview', { headers: { cookie: cookie.value } })).status, 200, 'the session lets requests in');

  const out = await request(base, '/logout', { method: 'POST', headers: { cookie: cookie.value } });
  t.equal(out.status, 302);
  t.equal(
    (await request(base, '/api/overview', { headers: { cookie: cookie.value } })).status,
    401,
    'after logout the cookie is worthless',
  );
  t.equal((await request(base, '/api/overview', { headers: { cookie: second.value } })).status, 200, 'the other session lives on');

  await sql`UPDATE console_sessions SET expires_at = now() - interval '1 second'`.execute(db);
  t.equal((await request(base, '/api/overview', { headers: { cookie: second.value } })).status, 401, 'an expired session lets nothing in');

  const third = cookieOf(await loginAs(base, OP))!;
  t.equal((await request(base, '/api/overview', { headers: { cookie: third.value } })).status, 200);
  Object.assign(rt.config, { OPERATOR_TOKEN: 'a-new-operator-token-after-rotation' }); // as a restart with a new one
  t.equal(
    (await request(base, '/api/overview', { headers: { cookie: third.value } })).status,
    401,
    'a new OPERATOR_TOKEN ends every session',
  );
  const stored = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM console_sessions WHERE id = ${third.value.slice('cs_operator='.length)}`.execute(db);
  t.equal(stored.rows[0]!.n, 0, 'the database keeps a digest of the cookie, not the cookie');
});

t.test('the session cookie is Secure outside loopback', async (t) => {
  const OP = 'operator-token-for-secure-cookie-test';
  const { base } = await world(t, OP, { config: { PUBLIC_URL: 'https://console.example.com' } });
  const remote = cookieOf(await loginAs(base, OP, { host: 'console.example.com' }))!;
  t.match(remote.attributes, /;\s*secure/i, 'reached by its public name (a proxy that did not say https): Secure');
  const forwarded = cookieOf(await loginAs(base, OP, { 'x-forwarded-proto': 'https' }))!;
  t.match(forwarded.attributes, /;\s*secure/i, 'behind an https proxy on loopback: Secure');
  const local = cookieOf(await loginAs(base, OP))!;
  t.notMatch(local.attributes, /;\s*secure/i, 'on http://127.0.0.1: not Secure');
});

t.test('wrong operator tokens are throttled per client address; the right token never is', async (t) => {
  const OP = 'operator-token-for-throttle-test';
  const { base } = await world(t, OP, { config: { OPERATOR_LOGIN_FAILURES: 5 } });
  for (let i = 0; i < 5; i++) t.equal((await loginAs(base, `guess-${i}`)).status, 401, `wrong guess ${i + 1}: 401`);
  const blocked = await loginAs(base, 'guess-6');
  t.equal(blocked.status, 429, 'the sixth wrong token from the address: 429');
  t.ok(Number(blocked.headers['retry-after']) > 0, `Retry-After ${blocked.headers['retry-after']} s`);
  const header = await request(base, '/api/overview', { headers: { authorization: 'Bearer guess-7' } });
  t.equal(header.status, 429, 'a wrong Authorization header is throttled the same way');
  // A stranger's wrong tokens must not shut out Prometheus or a channel creating holds from the same address.
  const right = await loginAs(base, OP);
  t.equal(right.status, 302, 'the right token still logs in');
  t.ok(cookieOf(right), 'a session');
  t.equal((await request(base, '/api/overview', { headers: { authorization: `Bearer ${OP}` } })).status, 200, 'and works as a header');
});

t.test('behind a trusted proxy, failures are counted by the client address the proxy reports', async (t) => {
  const OP = 'operator-token-for-proxy-throttle-test';
  const { base, db } = await world(t, OP, { config: { OPERATOR_LOGIN_FAILURES: 3, TRUST_PROXY: 1 } });
  // The client may write anything left of the proxy's entry: only the last one counts.
  const from = (ip: string) => ({ authorization: 'Bearer wrong', 'x-forwarded-for': `6.6.6.6, ${ip}` });
  for (let i = 0; i < 3; i++) t.equal((await request(base, '/api/overview', { headers: from('203.0.113.7') })).status, 401);
  t.equal((await request(base, '/api/overview', { headers: from('203.0.113.7') })).status, 429, 'that client is throttled');
  t.equal(
    (await request(base, '/api/overview', { headers: from('198.51.100.9') })).status,
    401,
    'another client behind the same proxy is not',
  );
  const counted = await db.selectFrom('login_failures').select(['address']).execute();
  t.same(
    [...new Set(counted.map((r) => r.address))].sort(),
    ['198.51.100.9', '203.0.113.7'],
    'kept in PostgreSQL, shared by every process',
  );
});
