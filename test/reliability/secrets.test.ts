// Secrets: a full `commerce-sync start` in demo mode, at LOG_LEVEL=trace, with merchant activity, console and
// API use and refused requests, never writes the access token, the client secret, the sandbox admin token, the
// operator token or the encryption key to its output; the database never holds a token in plain text. And the
// production roles never run the sandbox: with a real connection configured, nothing answers /__sandbox/.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { addTokenConnection } from '../../src/api/connections.ts';
import type { Db } from '../../src/db/index.ts';
import { startSandbox } from '@commerce-sync/sandbox';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { spawnCli, until } from '../support/processes.ts';

const KEY = Buffer.alloc(32, 0x5a).toString('base64');
const OPERATOR = 'operator-secret-f00d';

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
  const body = JSON.stringify({ object_id: 1, event: 'variants.update', timestamp: 1, resource_url: 'http://x/variants/1.json' });
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
    { db: tdb.db, config, log: captureLogger('silent').log },
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
