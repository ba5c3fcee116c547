// The commands as an operator runs them: a separate process on the test database.
import t from 'tap';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { startSandbox } from '@commerce-sync/sandbox';
import { addTokenConnection } from '../../src/api/connections.ts';
import { SUBSCRIBED_EVENTS } from '../../src/receiver/events.ts';
import { eventsIn } from '../../src/catalog/index.ts';
import { deliver, payload, sign, SECRET, startReceiver } from './harness.ts';
import { ClientState } from '../../src/api/client-state.ts';

const run = promisify(execFile);
const KEY = randomBytes(32).toString('base64');

async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, ['src/cli.ts', ...args], { env: { ...process.env, LOG_LEVEL: 'error', SANDBOX: 'off', ...env } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

t.test('deliveries and webhooks commands', async (t) => {
  const sb = await startSandbox({ variants: 3, clientSecret: SECRET, profile: 'spec' });
  t.teardown(() => sb.close());
  const h = await startReceiver(t, { config: { TOKEN_ENCRYPTION_KEY: KEY } });
  await addTokenConnection(
    { db: h.tdb.db, config: h.rt.config, log: h.logs.log, clients: new ClientState() },
    { baseUrl: sb.url, token: sb.token, name: 'acme' },
  );
  for (let i = 1; i <= 3; i++) await deliver(h.url(), payload(i), { 'x-service-delivery': `cli-${i}` });
  await deliver(h.url(), payload(4, 'payments.create'), { 'x-service-delivery': 'cli-4' });
  const env = { DATABASE_URL: h.tdb.url, TOKEN_ENCRYPTION_KEY: KEY, COMMERCE_CLIENT_SECRET: SECRET, PUBLIC_URL: h.base };

  const json = await cli(['deliveries', '--json', '--limit', '2'], env);
  t.equal(json.code, 0, json.stderr);
  const list = JSON.parse(json.stdout);
  t.equal(list.length, 2, '--limit');
  t.same(Object.keys(list[0]).sort(), ['connection', 'delivery_id', 'event', 'id', 'object_id', 'received_at', 'state']);
  t.match(list[0], { delivery_id: 'cli-4', connection: 'shop', event: 'payments.create', object_id: 4, state: 'unhandled' });
  t.ok(!Number.isNaN(Date.parse(list[0].received_at)));

  const text = await cli(['deliveries', '--connection', 'shop'], env);
  t.equal(text.code, 0);
  t.match(text.stdout, /RECEIVED\s+CONNECTION\s+EVENT/);
  t.equal(text.stdout.trim().split('\n').length, 5, 'header and four deliveries');
  t.equal((await cli(['deliveries', '--connection', 'acme', '--json'], env)).stdout.trim(), '[]');
  t.equal((await cli(['deliveries', '--connection', 'nobody'], env)).code, 1);
  t.equal((await cli(['deliveries', '--limit', 'many'], env)).code, 2);

  // `replay`: the console's Replay button and POST /api/deliveries/:id/replay, from the shell, with the same entry.
  const replayed = await cli(['replay', String(list[0].id)], env);
  t.equal(replayed.code, 0, replayed.stderr);
  t.match(replayed.stdout, new RegExp(`delivery ${list[0].id} is queued again as job [0-9a-f-]{36}`));
  const audited = await h.tdb.db.selectFrom('audit_log').selectAll().orderBy('id', 'desc').limit(1).executeTakeFirstOrThrow();
  t.match(audited, { action: 'deliveries.replay', source: 'cli', connection: 'shop', target: `delivery ${list[0].id}` });
  t.match(await cli(['replay', '999999'], env), { code: 1, stderr: /no delivery 999999/ });
  t.match(await cli(['replay', 'cli-4'], env), { code: 2, stderr: /by its row id \(a number\), not "cli-4"/ });
  t.match(await cli(['replay'], env), { code: 2, stderr: /give a stored delivery: commerce-sync replay ID/ });
  t.match(await cli(['replay', '--dead', 'deliveries-dead', 'x'], env), { code: 2, stderr: /a dead letter id is a UUID/ });

  const synced = await cli(['webhooks', 'sync', '--connection', 'acme'], env);
  t.equal(synced.code, 0, synced.stderr);
  const spec = eventsIn('spec').length;
  t.match(
    synced.stdout,
    new RegExp(
      `acme: ${h.base}/webhooks/acme: 0 kept, ${spec} created, 0 removed, ${SUBSCRIBED_EVENTS.length - spec} refused by the service`,
    ),
  );
  // The operator's sync asks the refused events again at once (a scheduled check would skip them for a day).
  const again = await cli(['webhooks', 'sync', '--connection', 'acme'], env);
  t.equal(again.code, 0, again.stderr);
  t.match(
    again.stdout,
    new RegExp(
      `acme: ${h.base}/webhooks/acme: ${spec} kept, 0 created, 0 removed, ${SUBSCRIBED_EVENTS.length - spec} refused by the service`,
    ),
    '`webhooks sync` asks refused events again',
  );
  const listed = await cli(['webhooks', 'list', '--connection', 'acme', '--json'], env);
  t.equal(listed.code, 0);
  const [entry] = JSON.parse(listed.stdout);
  t.equal(entry.webhooks.filter((w: any) => w.ours).length, spec);
  t.equal((await cli(['webhooks', 'frob'], env)).code, 2);
});

t.test('`receiver` runs the role alone, and a SIGTERM stops it cleanly after committing', async (t) => {
  const h = await startReceiver(t);
  await h.stop(); // only its database is used here
  const { child, exited, port } = await receiverAlone(h.tdb.url, { COMMERCE_CLIENT_SECRET: SECRET, LOG_LEVEL: 'warn' });
  const body = payload(11);
  const res = await fetch(`http://127.0.0.1:${port}/webhooks/shop`, {
    method: 'POST',
    body,
    headers: { 'x-service-signature': sign(body), 'x-service-delivery': 'alone-1' },
  });
  t.equal(res.status, 200);
  t.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
  child.kill('SIGTERM');
  t.equal(await exited, 0);
  t.equal((await h.rows()).filter((r) => r.delivery_id === 'alone-1').length, 1);
});

t.test('receiver alone without a signing secret: /readyz says why it is not ready', async (t) => {
  const h = await startReceiver(t);
  await h.stop();
  const { child, exited, port } = await receiverAlone(h.tdb.url, { COMMERCE_CLIENT_SECRET: '', LOG_LEVEL: 'silent' });
  const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
  t.equal(ready.status, 503, "the role's own readiness check reaches /readyz");
  t.match(JSON.stringify(await ready.json()), /secret/i);
  t.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
  child.kill('SIGTERM');
  t.equal(await exited, 0);
});

/** `commerce-sync receiver` as its own process on a free port; resolves once it listens. */
async function receiverAlone(databaseUrl: string, env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, ['src/cli.ts', 'receiver'], {
    // As testConfig: the fixtures' fixed timestamps are not judged (test/receiver/timestamps.test.ts does that).
    env: { ...process.env, DATABASE_URL: databaseUrl, SANDBOX: 'off', PORT: '0', WEBHOOK_MAX_FUTURE_SECONDS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (c) => reject(new Error(`exited ${c}: ${out}`)));
  });
  return { child, exited, port };
}
