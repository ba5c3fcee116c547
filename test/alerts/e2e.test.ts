// What the alerts promise, on the running system: a sandbox over HTTP, the receiver, the sync workers and
// the alert loop (as `start` runs them), a console, the `status` command, and a real HTTP endpoint at
// ALERT_WEBHOOK_URL whose every POST is verified with the standardwebhooks package.
// - A wrong COMMERCE_CLIENT_SECRET: the console, `status` and the alert URL say so within a minute, naming the
//   setting; once the secret is right the alert resolves.
// - A lapsed account, and a failing channel destination (the default channel's, CHANNEL_WEBHOOK_URL, answering 500, then 200): each opens
//   an alert and resolves it, both seen at the endpoint.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { listenLocal } from '../support/http.ts';
import { startAlerts } from '../../src/alerts/role.ts';
import { probeLapsed } from '../../src/api/connections.ts';
import { testConsole } from '../support/runtime.ts';
import { captureLogger } from '../support/log.ts';
import { startLoop, type Loop } from '../sync/harness.ts';
import { alertEndpoint, newSecret } from './harness.ts';
import { ClientState } from '../../src/api/client-state.ts';
import type { Teardown } from '../support/teardown.ts';

const TOKEN = 'alerts-e2e-operator-token-0123456789';
const alertSettings = (url: string, secret: string) => ({
  ALERT_WEBHOOK_URL: url,
  ALERT_WEBHOOK_SECRET: secret,
  ALERT_EVALUATE_SECONDS: 1,
  ALERT_QUIET_SECONDS: 1,
});

/** The alert loop as the worker role runs it, on the loop's database. */
function runAlerts(t: Teardown, loop: Loop) {
  const { log } = captureLogger('error');
  const alerts = startAlerts({
    db: loop.tdb.db,
    config: loop.config,
    log,
    policy: { timeoutMs: 2000, attempts: 2, backoffMs: 200 },
  });
  t.teardown(() => alerts.stop());
  return alerts;
}

/** A console (the real role) over the loop's database, behind an operator token. */
async function consoleOn(t: Teardown, loop: Loop) {
  const { log } = captureLogger('error');
  const config = { ...loop.config, OPERATOR_TOKEN: TOKEN };
  const { rt } = await testConsole(t, loop.tdb, config, log);
  const get = async (path: string) => fetch(`${rt.publicUrl}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return { get };
}

const status = (loop: Loop) =>
  spawnSync(process.execPath, ['src/cli.ts', 'status'], {
    encoding: 'utf8',
    env: { ...process.env, LOG_LEVEL: 'silent', DATABASE_URL: loop.tdb.url },
  });

t.test('a wrong COMMERCE_CLIENT_SECRET: the alert URL, the console and `status` name the setting within a minute', async (t) => {
  const secret = newSecret();
  const ep = await alertEndpoint(t, secret);
  const loop = await startLoop(t, {
    config: { COMMERCE_CLIENT_SECRET: 'not-the-secret-the-service-signs-with', ...alertSettings(ep.url, secret) },
  });
  runAlerts(t, loop);
  const console = await consoleOn(t, loop);
  const started = Date.now();
  await loop.admin('POST', 'activity', { operations: 5 });

  const opened = await ep.waitFor(
    'the signature alert at ALERT_WEBHOOK_URL',
    (n) => n.type === 'alert.opened' && n.data.key === 'signature:shop',
  );
  const seconds = (Date.now() - started) / 1000;
  t.ok(seconds < 60, `the alert URL was told within a minute (${seconds.toFixed(1)} s)`);
  t.match(opened.data.message, /deliveries to shop refused for their signature.*check COMMERCE_CLIENT_SECRET/);
  t.ok(opened.data.count >= 3, `with the count (${opened.data.count})`);
  t.equal(opened.data.severity, 'critical');

  const overview = (await (await console.get('/api/overview')).json()) as { alerts: { message: string }[] };
  t.match(overview.alerts.map((a) => a.message).join('\n'), /COMMERCE_CLIENT_SECRET/, 'GET /api/overview carries it');
  const page = await (await console.get('/')).text();
  t.match(page, /data-alert="signature:shop"/, 'the overview page shows it');
  t.match(page, /check COMMERCE_CLIENT_SECRET/);

  const out = status(loop);
  t.equal(out.status, 1, '`status` exits 1 while the alert is open');
  t.match(out.stdout, /alerts: 1 open\n {2}CRITICAL signature:shop since .*check COMMERCE_CLIENT_SECRET/);

  // The operator puts the right secret in: the service's retries are stored, and the alert resolves.
  // (the receiver reads the setting per delivery, as a restart with the right value would give it)
  (loop.config as { COMMERCE_CLIENT_SECRET: string }).COMMERCE_CLIENT_SECRET = loop.sandbox.clientSecret;
  await loop.admin('POST', 'activity', { operations: 3 });
  await ep.waitFor('the signature alert resolved', (n) => n.type === 'alert.resolved' && n.data.key === 'signature:shop', 90_000);
  t.equal(status(loop).status, 0, '`status` exits 0 again');
  t.same(ep.bad, [], 'every POST verified with the standardwebhooks package');
  t.equal(ep.notices.filter((n) => n.data.key === 'signature:shop').length, 2, 'once on opening, once on resolving');
});

t.test('a lapsed account opens an alert and resolves it, both seen at the endpoint', async (t) => {
  const secret = newSecret();
  const ep = await alertEndpoint(t, secret);
  const loop = await startLoop(t, { config: alertSettings(ep.url, secret) });
  runAlerts(t, loop);
  await loop.admin('POST', 'account', { lapsed: true });
  await loop.client.listWebhooks().catch(() => {});
  const opened = await ep.waitFor('the lapsed alert', (n) => n.type === 'alert.opened' && n.data.key === 'lapsed:shop');
  t.match(opened.data.message, /The account of connection shop has lapsed.*402.*Renew the account's subscription/);
  t.equal(opened.data.connection, 'shop');

  await loop.admin('POST', 'account', { lapsed: false });
  const { log } = captureLogger('error');
  t.same(
    await probeLapsed({ db: loop.tdb.db, config: loop.config, log, clients: new ClientState() }),
    ['shop'],
    'the scheduled probe finds it answering again',
  );
  const resolved = await ep.waitFor('the lapsed alert resolved', (n) => n.type === 'alert.resolved' && n.data.key === 'lapsed:shop');
  t.equal(resolved.data.state, 'resolved');
  t.same(
    ep.notices.filter((n) => n.data.key === 'lapsed:shop').map((n) => n.type),
    ['alert.opened', 'alert.resolved'],
  );
  t.same(ep.bad, []);
});

t.test('a failing channel destination (500, then 200) opens an alert and resolves it, both seen at the endpoint', async (t) => {
  const secret = newSecret();
  const ep = await alertEndpoint(t, secret);
  // The channel's endpoint: 500 until told otherwise.
  let channelStatus = 500;
  let channelPosts = 0;
  const channel = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      channelPosts++;
      res.statusCode = channelStatus;
      res.end();
    });
  });
  const channelUrl = `${await listenLocal(t, channel)}/stock`;
  const loop = await startLoop(t, {
    firstSweep: true,
    config: {
      ...alertSettings(ep.url, secret),
      CHANNEL_WEBHOOK_URL: channelUrl,
      CHANNEL_WEBHOOK_SECRET: newSecret(),
      ALERT_DESTINATION_FAILURES: 2,
    },
  });
  runAlerts(t, loop);
  const opened = await ep.waitFor(
    'the destination alert',
    (n) => n.type === 'alert.opened' && String(n.data.key).startsWith('destination:channel:'),
    120_000,
  );
  t.match(
    opened.data.message,
    /The destination of channel shop\/default \(host 127\.0\.0\.1:\d+\) has failed \d+ POSTs in a row.*answered 500/,
  );
  t.ok(channelPosts >= 2, `the channel endpoint was tried ${channelPosts} times`);

  channelStatus = 200;
  const resolved = await ep.waitFor(
    'the destination alert resolved',
    (n) => n.type === 'alert.resolved' && String(n.data.key).startsWith('destination:channel:'),
    120_000,
  );
  t.equal(resolved.data.state, 'resolved');
  t.same(ep.bad, []);
});
