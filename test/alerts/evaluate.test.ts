// Each alert condition against a real database: put its cause in place, evaluate, see the alert open with a message
// naming the setting or action; take the cause away, see it resolve. Notices go to a real local HTTP endpoint and
// are verified with the standardwebhooks package: one on opening, one on resolving, none more for a flap.
import t from 'tap';
import { sql } from 'kysely';
import { evaluateAlerts } from '../../src/alerts/evaluate.ts';
import { sendDueNotices } from '../../src/alerts/notify.ts';
import { saveCursor } from '../../src/db/cursors.ts';
import { setConnectionStatus } from '../../src/db/connections.ts';
import { recordOutcome, saveDestination } from '../../src/db/channel-destinations.ts';
import { markPending } from '../../src/db/pending.ts';
import { saveRefusals } from '../../src/db/refusals.ts';
import { logSync } from '../../src/db/synclog.ts';
import { openAlerts } from '../../src/db/alerts.ts';
import { rejectionCounter } from '../../src/receiver/rejections.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { createQueues } from '../../src/queue/queues.ts';
import { eventsIn } from '../../src/catalog/index.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { addConnection, addDelivery, HARNESS_SERVICE_URL } from '../console/harness.ts';
import { alertEndpoint, newSecret } from './harness.ts';

const fast = { timeoutMs: 2000, attempts: 1 };

t.test('every condition opens an alert naming what to do, and resolves by itself once its cause is gone', async (t) => {
  const { db, url } = await testDatabase(t);
  const { log } = captureLogger('warn');
  const secret = newSecret();
  const ep = await alertEndpoint(t, secret);
  const config = testConfig({ ALERT_WEBHOOK_URL: ep.url, ALERT_WEBHOOK_SECRET: secret, ALERT_QUIET_SECONDS: 0, ALERT_DRIFT_THRESHOLD: 10 });
  const boss = await startBoss(url, log, { supervise: false, schedule: false, max: 2 });
  t.teardown(() => stopBoss(boss, false));
  await createQueues(boss);
  const shop = await addConnection(db, 'shop');
  const other = await addConnection(db, 'other');

  // The causes.
  const counter = rejectionCounter(db, log);
  for (let i = 0; i < 4; i++) counter.add('shop', 'signature');
  counter.add('not-a-connection', 'signature');
  await counter.flush();
  await setConnectionStatus(db, other, 'lapsed', '402 Payment Required');
  const deadJob = await boss.send('reconcile-dead', { connectionId: shop, full: false });
  await saveCursor(db, shop, 'variant', null, false, 25);
  const specEvent = eventsIn('spec')[0]!;
  await saveRefusals(db, shop, HARNESS_SERVICE_URL, [{ event: specEvent, reason: 'address must use https' }]);
  await logSync(db, {
    connectionId: shop,
    action: 'webhooks.repaired',
    outcome: 'warning',
    detail: { created: ['variant.update'], removed: [] },
  });
  await markPending(db, [{ connectionId: shop, resource: 'variant', id: 7 }]);
  await sql`UPDATE pending_fetches SET first_marked_at = now() - interval '10 minutes'`.execute(db);
  await sql`INSERT INTO api_budgets (connection_id, request_limit, remaining, reset_at, reset_known) VALUES (${shop}, 300, 2, now() + interval '4 minutes', true)`.execute(
    db,
  );
  const webshop = (
    await sql<{ id: number }>`INSERT INTO channels (connection_id, name) VALUES (${shop}, 'webshop') RETURNING id`.execute(db)
  ).rows[0]!.id;
  await saveDestination(db, webshop, { url: 'https://shop.example:8443/stock', secrets: 'x', startAfter: 0 });
  for (let i = 0; i < 3; i++) await recordOutcome(db, webshop, 'shop.example:8443', { ok: false, status: 500, error: 'answered 500' });

  const first = await evaluateAlerts({ db, config, log });
  t.ok(first, 'evaluated');
  t.same(first!.failed, [], 'no check failed');
  const open = new Map((await openAlerts(db)).map((a) => [a.key, a]));
  t.same(
    [...open.keys()].sort(),
    [
      'budget:shop',
      'dead-letters:reconcile-dead',
      `destination:channel:${webshop}`,
      'drift:shop',
      'lapsed:other',
      'signature:shop',
      'webhooks:shop',
    ],
    'one alert per condition and subject',
  );
  const msg = (k: string) => open.get(k)!.message;
  t.match(msg('signature:shop'), /4 deliveries to shop refused for their signature.*check COMMERCE_CLIENT_SECRET/);
  t.equal(Number(open.get('signature:shop')!.count), 4);
  t.equal(open.get('signature:shop')!.severity, 'critical');
  t.match(msg('lapsed:other'), /lapsed \(402 Payment Required\).*Renew/);
  t.match(msg('dead-letters:reconcile-dead'), /1 job in reconcile-dead failed every retry.*Dead letters page/);
  t.match(
    msg('drift:shop'),
    /25 changes that an event should have announced and no delivery did.*ALERT_DRIFT_THRESHOLD is 10.*not counted/,
  );
  t.match(
    msg('webhooks:shop'),
    new RegExp(`deleted 1 subscription.*PUBLIC_URL.*refuses to subscribe shop to ${specEvent.replace('.', '\\.')}`),
  );
  t.match(msg('budget:shop'), /Stock reads of shop have waited \d+ s for API budget \(2 of 300 requests left/);
  t.match(
    msg(`destination:channel:${webshop}`),
    /destination of channel shop\/webshop \(host shop\.example:8443\) has failed 3 POSTs in a row.*answered 500/,
  );
  // A piece of the secret as text: base64 has '+' and '/', which a RegExp of it would read as syntax.
  t.notOk(
    [...open.values()]
      .map((a) => a.message)
      .join(' ')
      .includes(secret.slice(6, 20)),
    'no secret in any message',
  );

  // Evaluating again changes nothing: still one alert per key.
  const again = await evaluateAlerts({ db, config, log });
  t.same([again!.opened, again!.resolved], [[], []]);
  t.equal((await openAlerts(db)).length, 7);

  // One notice each on opening, signed, verified by the standardwebhooks package.
  t.equal(await sendDueNotices({ db, config, log, policy: fast }), 7);
  t.equal(await sendDueNotices({ db, config, log, policy: fast }), 0, 'nothing is sent twice');
  t.same(ep.bad, []);
  t.equal(ep.notices.length, 7);
  const sig = ep.notices.find((n) => n.data.key === 'signature:shop')!;
  t.equal(sig.type, 'alert.opened');
  t.match(sig.data.message, /COMMERCE_CLIENT_SECRET/);
  t.equal(sig.data.connection, 'shop');
  t.match(sig.id, /^alert-\d+-opened$/);

  // The causes go away.
  await addDelivery(db, shop, { state: 'processed' });
  await setConnectionStatus(db, other, 'active', null);
  await boss.deleteJob('reconcile-dead', deadJob!);
  await saveCursor(db, shop, 'variant', null, false, 3);
  await sql`DELETE FROM webhook_refusals`.execute(db);
  await sql`DELETE FROM sync_log WHERE action = 'webhooks.repaired'`.execute(db);
  await sql`DELETE FROM pending_fetches`.execute(db);
  await recordOutcome(db, webshop, 'shop.example:8443', { ok: true, status: 200, error: null });
  const resolved = await evaluateAlerts({ db, config, log });
  t.same(resolved!.resolved.sort(), [...open.keys()].sort(), 'every alert resolved');
  t.equal((await openAlerts(db)).length, 0);
  t.equal(await sendDueNotices({ db, config, log, policy: fast }), 7);
  t.same(
    ep.notices
      .filter((n) => n.type === 'alert.resolved')
      .map((n) => n.data.key)
      .sort(),
    [...open.keys()].sort(),
    'one resolution notice each',
  );
  t.equal(ep.notices.length, 14);
});

t.test('a flapping condition reopens its alert within the quiet period and sends nothing more', async (t) => {
  const { db } = await testDatabase(t);
  const { log } = captureLogger('warn');
  const secret = newSecret();
  const ep = await alertEndpoint(t, secret);
  const config = testConfig({ ALERT_WEBHOOK_URL: ep.url, ALERT_WEBHOOK_SECRET: secret, ALERT_QUIET_SECONDS: 2 });
  const shop = await addConnection(db, 'shop');
  const round = async () => {
    await evaluateAlerts({ db, config, log });
    await sendDueNotices({ db, config, log, policy: fast });
  };
  await setConnectionStatus(db, shop, 'lapsed', 'payment');
  await round();
  const id = (await openAlerts(db))[0]!.id;
  for (let i = 0; i < 5; i++) {
    await setConnectionStatus(db, shop, 'active', null);
    await round();
    await setConnectionStatus(db, shop, 'lapsed', 'payment');
    await round();
  }
  const open = await openAlerts(db);
  t.equal(open.length, 1);
  t.equal(open[0]!.id, id, 'the same alert, reopened');
  t.equal(open[0]!.reopened, 5);
  t.same(
    ep.notices.map((n) => n.type),
    ['alert.opened'],
    'five flaps: one opening, no resolution, no new opening',
  );
  await setConnectionStatus(db, shop, 'active', null);
  await round();
  t.equal(ep.notices.length, 1, 'the resolution waits out the quiet period');
  await new Promise((r) => setTimeout(r, 2200));
  await round();
  await round();
  t.same(
    ep.notices.map((n) => n.type),
    ['alert.opened', 'alert.resolved'],
  );
  t.same(ep.bad, []);
});

t.test('a failing URL is retried with backoff, the same webhook-id each time; two senders never send one notice twice', async (t) => {
  const { db } = await testDatabase(t);
  const { log } = captureLogger('error');
  const secret = newSecret();
  const ep = await alertEndpoint(t, secret);
  const config = testConfig({ ALERT_WEBHOOK_URL: ep.url, ALERT_WEBHOOK_SECRET: secret, ALERT_QUIET_SECONDS: 0 });
  for (const name of ['a', 'b', 'c', 'd']) {
    const id = await addConnection(db, name);
    await setConnectionStatus(db, id, 'unauthorized', '401');
  }
  await evaluateAlerts({ db, config, log });
  ep.status = 503;
  t.equal(await sendDueNotices({ db, config, log, policy: fast }), 0);
  const failed = (await openAlerts(db)).filter((a) => a.notify_error);
  t.equal(failed.length, 1, 'a failing URL stops the round after one failure');
  t.equal(failed[0]!.notify_error, 'answered 503');
  const wait = await sql<{
    s: number;
  }>`SELECT extract(epoch FROM notify_next_at - now())::float8 AS s FROM alerts WHERE notify_error IS NOT NULL`.execute(db);
  t.ok(wait.rows[0]!.s > 20 && wait.rows[0]!.s <= 30, `retried after about 30 s (${wait.rows[0]!.s})`);
  t.equal(await sendDueNotices({ db, config, log, policy: fast }), 0);
  t.equal(ep.posts, 2, 'the others were tried next round, the failed one waits its backoff');
  ep.status = 200;
  await sql`UPDATE alerts SET notify_next_at = now()`.execute(db);
  const sent = await Promise.all([
    sendDueNotices({ db, config, log, policy: fast }),
    sendDueNotices({ db, config, log, policy: fast }),
    sendDueNotices({ db, config, log, policy: fast }),
  ]);
  t.equal(
    sent.reduce((a, b) => a + b, 0),
    4,
    'three senders at once sent the four notices once',
  );
  t.same(ep.notices.map((n) => n.data.key).sort(), ['unauthorized:a', 'unauthorized:b', 'unauthorized:c', 'unauthorized:d']);
  t.same(new Set(ep.notices.map((n) => n.id)).size, 4);
  for (const a of await openAlerts(db)) t.equal(a.notify_error, null);
});

t.test('a check that fails leaves its alerts open; at most one open alert per key; Slack format', async (t) => {
  const { db } = await testDatabase(t);
  const { log } = captureLogger('error');
  const config = testConfig({ ALERT_QUIET_SECONDS: 0 });
  const shop = await addConnection(db, 'shop');
  await setConnectionStatus(db, shop, 'lapsed', null);
  const { connectionStatus } = await import('../../src/alerts/conditions.ts');
  await evaluateAlerts({ db, config, log }, { checks: [connectionStatus] });
  await setConnectionStatus(db, shop, 'active', null);
  const broken = { conditions: ['lapsed', 'unauthorized'], run: async () => Promise.reject(new Error('boom')) };
  const r = await evaluateAlerts({ db, config, log }, { checks: [broken] });
  t.same(r!.failed, [{ conditions: ['lapsed', 'unauthorized'], error: 'boom' }]);
  t.equal((await openAlerts(db)).length, 1, 'not resolved by a check that did not run');
  await t.rejects(
    sql`INSERT INTO alerts (key, condition, severity, message) VALUES ('lapsed:shop', 'lapsed', 'critical', 'again')`.execute(db),
    /alerts_open_key/,
    'a second open alert for a key is refused by the partial unique index',
  );
  const { slackMessage } = await import('../../src/alerts/notify.ts');
  const a = (await openAlerts(db))[0]!;
  t.match(slackMessage({ kind: 'opened', alert: { ...a, message: 'x < y & z' } }).text, /^:rotating_light: .*\[shop\]: x &lt; y &amp; z$/);
});
