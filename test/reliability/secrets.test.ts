// Secrets: a full `commerce-sync start` in demo mode, at LOG_LEVEL=trace, with merchant activity, console and
// API use and refused requests, never writes the access token, the client secret, the sandbox admin token, the
// operator token or the encryption key to its output; the database never holds a token in plain text. And the
// production roles never run the sandbox: with a real connection configured, nothing answers /__sandbox/. No
// page or JSON route (every GET route mounted, walked with real data behind it) shows a token or its ciphertext.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { addOAuthConnection, addTokenConnection, clientFor } from '../../src/api/connections.ts';
import { enqueueOperation } from '../../src/push/enqueue.ts';
import { runSweep } from '../../src/sync/sweep.ts';
import type { Db } from '../../src/db/index.ts';
import { startSandbox } from '@commerce-sync/sandbox';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { spawnCli, until } from '../support/processes.ts';
import { routesOf } from '../support/routes.ts';
import { CLIENT_SECRET, consoleServer, sendDelivery } from '../console/harness.ts';
import { ClientState } from '../../src/api/client-state.ts';
import { setDestination } from '../../src/channels/destinations.ts';

const KEY = Buffer.alloc(32, 0x5a).toString('base64');
const OPERATOR = 'operator-secret-f00d-f00d-f00d';

/** Every row of every table (ours and pg-boss's) as text, for a search of the whole database. */
async function wholeDatabase(db: Db): Promise<string> {
  const tables = await sql<{ s: string; t: string }>`SELECT table_schema AS s, table_name AS t FROM information_schema.tables
    WHERE table_schema IN ('public', 'pgboss') AND table_type = 'BASE TABLE'`.execute(db);
  let all = '';
  for (const { s, t: name } of tables.rows) {
    const rows = await sql<{ row: string }>`SELECT x::text AS row FROM ${sql.table(`${s}.${name}`)} x`.execute(db);
    all += `${rows.rows.map((r) => r.row).join('\n')}\n`;
  }
  return all;
}

t.test('a demo run at trace level logs no secret; the database holds no plain token', async (t) => {
  const tdb = await testDatabase(t);
  const dataDir = await mkdtemp(join(tmpdir(), 'cs-secrets-'));
  const app = await spawnCli(
    t,
    'start',
    ['start'],
    {
      DATABASE_URL: tdb.url,
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: 0,
      LOG_LEVEL: 'trace',
      TOKEN_ENCRYPTION_KEY: KEY,
      OPERATOR_TOKEN: OPERATOR,
      SANDBOX_ACTIVITY: 20,
      SANDBOX_VARIANTS: 40,
    },
    { readyTimeoutMs: 60_000 },
  );
  const secrets = {
    'access token': (await readFile(join(dataDir, 'demo-sandbox-token'), 'utf8')).trim(),
    'client secret': (await readFile(join(dataDir, 'demo-client-secret'), 'utf8')).trim(),
    'sandbox admin token': (await readFile(join(dataDir, 'demo-sandbox-admin-token'), 'utf8')).trim(),
    'operator token': OPERATOR,
    'encryption key': KEY,
    'encryption key (hex)': Buffer.from(KEY, 'base64').toString('hex'),
    'database password': decodeURIComponent(new URL(tdb.url).password),
  };
  const auth = { authorization: `Bearer ${OPERATOR}` };
  // Activity flows through webhooks into the mirror.
  await until(
    'deliveries processed',
    async () =>
      (await sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE state = 'processed'`.execute(tdb.db)).rows[0]!.n >=
      20,
    45_000,
    250,
  );
  // Console and API use, with right and wrong credentials; a forged and a genuine delivery.
  for (const path of ['/', '/logs', '/deliveries', '/variants', '/api/overview', '/api/logs', '/metrics', '/api/operations']) {
    await (await fetch(app.url + path, { headers: auth })).arrayBuffer();
    await (await fetch(app.url + path, { headers: { authorization: 'Bearer nope' } })).arrayBuffer();
  }
  await (
    await fetch(`${app.url}/login`, {
      method: 'POST',
      body: `token=${OPERATOR}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      redirect: 'manual',
    })
  ).arrayBuffer();
  const body = JSON.stringify({
    object_id: 1,
    event: 'variants.update',
    timestamp: Math.floor(Date.now() / 1000),
    resource_url: 'http://x/variants/1.json',
  });
  await (
    await fetch(`${app.url}/webhooks/demo`, {
      method: 'POST',
      body,
      headers: { 'x-service-signature': 'forged', 'content-type': 'application/json' },
    })
  ).arrayBuffer();
  const signature = createHmac('sha256', secrets['client secret']).update(body).digest('base64');
  await (
    await fetch(`${app.url}/webhooks/demo`, {
      method: 'POST',
      body,
      headers: { 'x-service-signature': signature, 'content-type': 'application/json' },
    })
  ).arrayBuffer();
  await new Promise((r) => setTimeout(r, 2000));
  await app.stop();

  const output = app.output();
  const lines = output.split('\n').length;
  t.ok(/"level":20/.test(output) && /api request/.test(output), `a debug/trace-level run with real API traffic (${lines} lines of output)`);
  for (const [what, value] of Object.entries(secrets)) {
    t.ok(value.length >= 8, `${what} is known to the test`);
    const at = output.indexOf(value);
    t.equal(at, -1, `the ${what} appears nowhere in the output`, at >= 0 ? { context: output.slice(Math.max(0, at - 300), at + 100) } : {});
  }
  const stored = await wholeDatabase(tdb.db);
  t.ok(stored.length > 10_000, `the whole database, ${stored.length} characters of rows`);
  for (const what of ['access token', 'client secret', 'sandbox admin token', 'operator token', 'encryption key'] as const) {
    t.equal(stored.indexOf(secrets[what]), -1, `the ${what} is not in the database in plain text`);
  }
  const conn = await tdb.db.selectFrom('connections').select(['access_token_enc']).executeTakeFirstOrThrow();
  t.ok(conn.access_token_enc && conn.access_token_enc !== secrets['access token'], 'the connection holds the token encrypted');
});

t.test('production roles with a real connection run no sandbox: nothing answers /__sandbox/', async (t) => {
  const tdb = await testDatabase(t);
  const account = await startSandbox({ variants: 5, token: 'real-account-token', adminToken: 'real-admin-token' });
  t.teardown(() => account.close());
  const config = testConfig({ DATABASE_URL: tdb.url, TOKEN_ENCRYPTION_KEY: KEY });
  await addTokenConnection(
    { db: tdb.db, config, log: captureLogger('silent').log, clients: new ClientState() },
    { baseUrl: account.url, token: account.token, name: 'shop' },
  );
  const dataDir = await mkdtemp(join(tmpdir(), 'cs-nosandbox-'));
  // SANDBOX is left at its default (auto), as in production.
  const env = {
    DATABASE_URL: tdb.url,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: 0,
    WORKER_PORT: 0,
    LOG_LEVEL: 'info',
    TOKEN_ENCRYPTION_KEY: KEY,
    COMMERCE_CLIENT_SECRET: 'real-secret',
    OPERATOR_TOKEN: OPERATOR,
  };
  const roles = await Promise.all([
    spawnCli(t, 'receiver', ['receiver'], env),
    spawnCli(t, 'worker', ['worker'], env),
    spawnCli(t, 'console', ['start'], { ...env, ROLES: 'console' }),
    spawnCli(t, 'start', ['start'], env),
    spawnCli(t, 'start (COMMERCE_BASE_URL)', ['start'], { ...env, COMMERCE_BASE_URL: account.url, COMMERCE_TOKEN: account.token }),
  ]);
  const listening = execFileSync('ss', ['-Hltnp'], { encoding: 'utf8' });
  for (const p of roles) {
    for (const auth of [{}, { authorization: `Bearer ${account.adminToken}` }, { authorization: 'Bearer sandbox-admin' }]) {
      const res = await fetch(`${p.url}/__sandbox/stats`, { headers: auth });
      await res.arrayBuffer();
      t.ok(res.status === 404 || res.status === 401, `${p.name}: /__sandbox/stats answers ${res.status}`);
    }
    const ports = listening.split('\n').filter((l) => l.includes(`pid=${p.pid},`));
    t.equal(ports.length, 1, `${p.name} listens on exactly one port (its own), no sandbox port`, { ports });
    t.notMatch(p.output(), /demo sandbox running|"role":"sandbox"/, `${p.name} started no sandbox`);
  }
  await Promise.all(roles.map((p) => p.stop()));
});

t.test('no page or JSON route renders a token or its ciphertext', async (t) => {
  const a = await startSandbox({ variants: 6, locations: 2, token: 'shop-access-token-must-stay-secret' });
  const b = await startSandbox({ variants: 2, token: 'oauth-access-token-must-stay-secret' });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  const OP = 'operator-token-for-the-route-walk';
  const { base, db, rt, boss } = await consoleServer(t, {
    token: OP,
    receiver: true,
    config: { TOKEN_ENCRYPTION_KEY: KEY, DATA_DIR: await mkdtemp(join(tmpdir(), 'cs-walk-')) },
  });
  const deps = { db, config: rt.config, log: rt.log, clients: new ClientState() };
  const shop = await addTokenConnection(deps, { baseUrl: a.url, token: a.token, name: 'shop' });
  const refresh = 'oauth-refresh-token-must-stay-secret';
  await addOAuthConnection(deps, {
    baseUrl: b.url,
    tokens: { access_token: b.token, refresh_token: refresh, expires_in: 3600 },
    name: 'oauthy',
  });
  // Something behind every route: a mirror, an operation, a delivery.
  await runSweep({ db, boss, config: rt.config, log: rt.log }, await clientFor(deps, shop), { full: true, wait: true });
  const first = async (table: 'orders' | 'variants') =>
    (await db.selectFrom(table).select('id').where('connection_id', '=', shop.id).orderBy('id').executeTakeFirstOrThrow()).id;
  const orderId = await first('orders');
  const variantId = await first('variants');
  const operation = await enqueueOperation({ db, boss }, 'ship', { order_id: orderId }, 'shop');
  t.equal((await sendDelivery(base, 'shop', { event: 'variants.update', object_id: variantId }, 'walk-1')).status, 200);
  const deliveryId = (await db.selectFrom('webhook_deliveries').select('id').executeTakeFirstOrThrow()).id;
  // Each connection's default channel with a destination: its signing secret and a token in its URL's query.
  await sql`INSERT INTO channels (connection_id, name) SELECT id, 'default' FROM connections ON CONFLICT DO NOTHING`.execute(db);
  const hookSecret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
  for (const ch of await db.selectFrom('channels').select('id').where('name', '=', 'default').execute())
    await setDestination(
      db,
      rt.clients.key(rt.config),
      Number(ch.id),
      {
        url: 'http://127.0.0.1:9/hook?token=hook-url-token-must-stay-secret',
        secret: hookSecret,
      },
      ['127.0.0.1'],
    );

  const stored = await db.selectFrom('connections').select(['name', 'access_token_enc', 'refresh_token_enc']).execute();
  const secrets: Record<string, string> = {
    'shop access token': a.token,
    'oauth access token': b.token,
    'oauth refresh token': refresh,
    'client secret': CLIENT_SECRET,
    'operator token': OP,
    'encryption key': KEY,
    'destination secret': hookSecret,
    'destination URL token': 'hook-url-token-must-stay-secret',
  };
  for (const c of stored) {
    for (const column of ['access_token_enc', 'refresh_token_enc'] as const) {
      const v = c[column];
      if (!v) continue;
      secrets[`${c.name} ${column}`] = v;
      // A part of it is as bad as all of it (the base64 after the version prefix, in pieces).
      const body = v.slice(v.indexOf(':') + 1);
      for (let i = 0; i + 24 <= body.length; i += 24) secrets[`${c.name} ${column} [${i}..]`] = body.slice(i, i + 24);
    }
  }
  for (const d of await db.selectFrom('channel_destinations').select(['channel_id', 'secrets']).execute()) {
    const body = d.secrets.slice(d.secrets.indexOf(':') + 1);
    for (let i = 0; i + 24 <= body.length; i += 24) secrets[`destination ${d.channel_id} secrets [${i}..]`] = body.slice(i, i + 24);
  }
  t.ok(Object.keys(secrets).length > 10, `${Object.keys(secrets).length} secrets and pieces of ciphertext to look for`);

  // A channel order (held, not imported yet), for its page and its API.
  const shopId = (await db.selectFrom('connections').select('id').where('name', '=', 'shop').executeTakeFirstOrThrow()).id;
  const defaultChannel = await db
    .selectFrom('channels')
    .select('id')
    .where('connection_id', '=', shopId)
    .where('name', '=', 'default')
    .executeTakeFirstOrThrow();
  await sql`INSERT INTO channel_holds (connection_id, channel, channel_order_id, source, lines, expires_at)
    VALUES (${shopId}, 'default', 'W-9', 'api', '[]', now() + interval '1 hour')`.execute(db);
  const fill = (path: string, connection: string): string[] => {
    if (path === '/channels/:id/orders/:order') return [`/channels/${defaultChannel.id}/orders/W-9`];
    if (path === '/api/channels/:name/orders/:order') return ['/api/channels/default/orders/W-9?connection=shop'];
    if (path === '/api/orders/:connection/:id' || path === '/orders/:connection/:id')
      return [path.replace(':connection', 'shop').replace(':id', String(orderId))];
    if (path.includes(':connection/:id')) return [path.replace(':connection', 'shop').replace(':id', String(variantId))];
    if (path.includes('deliveries/:id')) return [path.replace(':id', String(deliveryId))];
    if (path.includes('operations/:id')) return [path.replace(':id', String(operation.id))];
    if (path.startsWith('/api/channels/:name')) return [`${path.replace(':name', 'default')}?connection=${connection}`];
    if (path.includes(':name')) return [path.replace(':name', connection)];
    if (path.includes(':connection')) return [path.replace(':connection', connection)];
    return path.startsWith('/connections/oauth') ? [path] : [path, `${path}?connection=${connection}`];
  };
  // 400 without their parameters: a list needing connection= (asked with it too), the callback needing state.
  const NEED_PARAMETERS = new Set(['/api/variants', '/api/orders', '/connections/oauth/callback']);
  // Sign-in's routes render no data (and answer 404 with no OpenID provider set).
  const gets = routesOf(rt.app).filter((r) => r.method === 'GET' && r.path !== '/api/tail' && !r.path.startsWith('/auth/oidc/'));
  const paths = [...new Set(gets.flatMap((r) => [...fill(r.path, 'shop'), ...fill(r.path, 'oauthy')]))];
  t.ok(paths.length > 40, `${paths.length} paths from ${gets.length} GET routes`);
  const found: string[] = [];
  const failed: string[] = [];
  let bytes = 0;
  for (const path of paths) {
    for (const accept of ['application/json', 'text/html']) {
      const res = await fetch(base + path, { headers: { authorization: `Bearer ${OP}`, accept } });
      const text = await res.text();
      bytes += text.length;
      if (res.status !== 200 && !(res.status === 400 && NEED_PARAMETERS.has(path))) failed.push(`${path} (${accept}): ${res.status}`);
      for (const [what, value] of Object.entries(secrets)) if (text.includes(value)) found.push(`${path} (${accept}): ${what}`);
    }
  }
  // The live tail too, while a delivery is written.
  const tail = await fetch(`${base}/api/tail?after=0`, { headers: { authorization: `Bearer ${OP}` } });
  await sendDelivery(base, 'shop', { event: 'variants.update', object_id: variantId }, 'walk-2');
  const reader = tail.body!.getReader();
  let streamed = '';
  const until = Date.now() + 1500;
  while (Date.now() < until && !streamed.includes('walk-2')) {
    const chunk = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), 300))]);
    if (chunk && !chunk.done) streamed += new TextDecoder().decode(chunk.value);
  }
  await reader.cancel().catch(() => {});
  t.match(streamed, /event: log/, 'the tail streamed entries');
  for (const [what, value] of Object.entries(secrets)) if (streamed.includes(value)) found.push(`/api/tail: ${what}`);
  t.same(failed, [], 'every path answered (so its body was really searched)');
  t.same(found, [], `no secret in ${bytes} characters of pages and JSON`);
});
