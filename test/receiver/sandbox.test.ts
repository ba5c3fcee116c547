// End to end with the simulator: real subscriptions made through our API client, real signed deliveries
// over HTTP into the receiver, and the service's 410 rule against a receiver that answers 410.
import t from 'tap';
import http from 'node:http';
import { listenLocal } from '../support/http.ts';
import { clientFor } from '../../src/api/connections.ts';
import { lastWebhookRepairs } from '../../src/db/synclog.ts';
import { checkAllWebhooks, listWebhooks, syncWebhooks } from '../../src/receiver/subscriptions.ts';
import { SUBSCRIBED_EVENTS } from '../../src/receiver/events.ts';
import { eventsIn } from '../../src/catalog/index.ts';
import { syncAllWebhooks } from '../../src/receiver/role.ts';
import { sandboxWorld } from './harness.ts';
import { addConnection } from '../support/db.ts';

t.test('subscriptions are made at PUBLIC_URL/webhooks/NAME and real deliveries are stored and queued', async (t) => {
  const { sb, h, deps, connection, admin, deliverAll } = await sandboxWorld(t);
  const first = await syncWebhooks(deps, connection, h.base);
  t.equal(first.address, `${h.base}/webhooks/acme`);
  t.same(
    [...first.created.map((w) => w.event), ...first.refused.map((r) => r.event)].sort(),
    [...SUBSCRIBED_EVENTS].sort(),
    'every event we handle is subscribed or, when the service does not know it, refused and skipped',
  );
  t.same(first.created.map((w) => w.event).sort(), eventsIn('spec').sort(), "a service of the spec takes the spec's events");
  t.ok(
    first.refused.every((r) => /422/.test(r.reason)),
    'the others it refuses with 422',
  );
  const again = await syncWebhooks(deps, connection, h.base);
  t.equal(again.created.length, 0, 'a second sync changes nothing');
  t.equal(again.refused.length, 0, 'and does not ask again for refused events');
  t.equal(again.kept.length, first.created.length);

  const performed = await admin('activity', { operations: 3, kinds: ['adjust_stock'] });
  t.equal(performed.performed.length, 3);
  await deliverAll();
  const rows = (await h.tdb.pool.query(`SELECT * FROM webhook_deliveries WHERE connection_id = $1 ORDER BY id`, [connection.id])).rows;
  // Three adjustments of one variant within one second make identical bodies: one event, stored once.
  t.ok(rows.length >= 1, `${rows.length} deliveries stored`);
  t.equal(new Set(rows.map((r) => r.body)).size, rows.length, 'each body once');
  for (const r of rows) {
    t.match(r, { event: 'variants.stock_level_update', resource: 'variant', action: 'stock_level_update', state: 'queued' });
    t.match(r.resource_url, /\/variants\/\d+\.json$/);
  }
  const variants = await fetch(`${sb.url}/__sandbox/snapshot?resource=variants`, {
    headers: { authorization: `Bearer ${sb.adminToken}` },
  }).then((r) => r.json() as Promise<{ variants: { id: number }[] }>);
  const ids = new Set(variants.variants.map((v) => v.id));
  t.ok(
    rows.every((r) => ids.has(Number(r.object_id))),
    'each about a variant of the account',
  );
  t.same(
    await h.jobbed(connection.id),
    rows.map((r) => Number(r.id)),
    'each in exactly one job',
  );
});

t.test('sandbox faults: duplicated deliveries are stored once; corrupted signatures get 401 and succeed on retry', async (t) => {
  const { sb, h, deps, connection, admin, deliverAll } = await sandboxWorld(t);
  await syncWebhooks(deps, connection, h.base);
  const count = async () =>
    Number((await h.tdb.pool.query('SELECT count(*) AS n FROM webhook_deliveries WHERE connection_id = $1', [connection.id])).rows[0].n);

  await admin('faults', { deliveries: { duplicate: 1 } });
  await admin('activity', { operations: 4, kinds: ['adjust_stock'] });
  await deliverAll();
  const rows = (await h.tdb.pool.query('SELECT delivery_id FROM webhook_deliveries WHERE connection_id = $1', [connection.id])).rows;
  // Adjustments of one variant in one second make one body: one event (stored once whatever its delivery ids).
  t.ok(rows.length >= 1, `${rows.length} deliveries stored`);
  const sent = await fetch(`${sb.url}/__sandbox/deliveries?limit=100`, { headers: { authorization: `Bearer ${sb.adminToken}` } }).then(
    (r) => r.json() as Promise<any[]>,
  );
  t.ok(sent.filter((a) => a.status === 200).length >= 2 * rows.length, 'the service really sent every delivery twice, both got 200');
  t.equal(new Set(rows.map((r) => r.delivery_id)).size, rows.length, 'each delivery id once');
  t.ok(
    rows.every((r) => !r.delivery_id.startsWith('sha256:')),
    'keyed by X-Service-Delivery',
  );
  t.same(await h.jobbed(connection.id), await h.queued(connection.id), 'each delivery in exactly one job despite the copies');
  t.equal((await h.jobbed(connection.id)).length, rows.length);

  const before = rows.length;
  await admin('faults', { deliveries: { corrupt_signature: 1 } });
  await admin('activity', { operations: 2, kinds: ['adjust_stock'] });
  await admin('deliveries/flush');
  t.equal(await count(), before, 'forged deliveries stored nothing');
  t.match(h.logs.text(), /signature does not verify/);
  await admin('faults', {});
  await deliverAll(); // the service retries the failed ones
  const attempts = await fetch(`${sb.url}/__sandbox/deliveries?limit=100`, { headers: { authorization: `Bearer ${sb.adminToken}` } }).then(
    (r) => r.json() as Promise<{ status: number; attempt: number }[]>,
  );
  t.ok(attempts.filter((a) => a.attempt > 1 && a.status === 200).length >= 2, 'the retries with good signatures are acknowledged');
  // Stored, or known already: a retry whose body equals a stored delivery's (the same variant in the same second) is
  // the same event.
  t.ok((await count()) >= before, 'and nothing stored before was lost');
});

t.test("sync removes our stale subscriptions and leaves everybody else's alone", async (t) => {
  const { h, deps, connection } = await sandboxWorld(t);
  const client = await clientFor(deps, connection);
  const foreign = await client.createWebhook({ address: 'https://someone-else.example/hooks', event: 'order.create' });
  const ghost = await client.createWebhook({ address: `${h.base}/webhooks/deleted-connection`, event: 'order.create' });
  // A second connection to the same account has subscriptions of its own.
  await addConnection(deps.db, 'acme-eu');
  const sibling = await client.createWebhook({ address: `${h.base}/webhooks/acme-eu`, event: 'order.create' });
  const mine = await client.createWebhook({ address: `${h.base}/webhooks/acme`, event: 'order.create' });
  const dup = await client.createWebhook({ address: `${h.base}/webhooks/acme`, event: 'order.create' });
  const r = await syncWebhooks(deps, connection, h.base);
  const removed = r.removed.map((w) => w.id);
  t.ok(removed.includes(ghost.id), 'ours, naming a connection that no longer exists');
  t.notOk(removed.includes(sibling.id), "another connection's, kept");
  t.equal(removed.filter((id) => id === mine.id || id === dup.id).length, 1, 'one of two duplicates');
  t.equal(removed.length, 2);
  const listed = await listWebhooks(deps, connection, h.base);
  t.ok(
    listed.some((w) => w.id === foreign.id && !w.ours),
    'foreign subscription kept and marked not ours',
  );
  t.equal(listed.filter((w) => w.ours).length, eventsIn('spec').length + 1, "this connection's, and the other's");
});

t.test('the role syncs every active connection after listen', async (t) => {
  const { h, deps, connection } = await sandboxWorld(t);
  await syncAllWebhooks(h.rt);
  const listed = await listWebhooks(deps, connection, h.base);
  t.equal(listed.filter((w) => w.ours && w.address === `${h.base}/webhooks/acme`).length, eventsIn('spec').length);
});

t.test('a receiver answering 410 gets its subscription deleted by the service', async (t) => {
  const { sb, deps, connection, admin } = await sandboxWorld(t);
  let hits = 0;
  const gone = http.createServer((req, res) => {
    hits++;
    req.resume();
    res.writeHead(410).end();
  });
  const goneBase = await listenLocal(t, gone);
  await syncWebhooks(deps, connection, goneBase);
  const before = await listWebhooks(deps, connection, goneBase);
  t.equal(before.filter((w) => w.event === 'variant.stock_level_update').length, 1);
  await admin('activity', { operations: 1, kinds: ['adjust_stock'] });
  await admin('deliveries/flush');
  t.ok(hits >= 1, 'the delivery reached the 410 receiver');
  const after = await listWebhooks(deps, connection, goneBase);
  t.equal(after.filter((w) => w.event === 'variant.stock_level_update').length, 0, 'subscription deleted after 410');
  t.equal(after.length, eventsIn('spec').length - 1, 'the others are untouched');
  const log = await fetch(`${sb.url}/__sandbox/deliveries?limit=5`, { headers: { authorization: `Bearer ${sb.adminToken}` } }).then(
    (r) => r.json() as Promise<any[]>,
  );
  t.ok(log.some((a) => a.status === 410));
});

t.test('the scheduled check recreates subscriptions the service deleted, at the stored address, and logs the repair', async (t) => {
  const { h, deps, connection } = await sandboxWorld(t);
  await syncWebhooks(deps, connection, h.base);
  const client = await clientFor(deps, connection);
  const victim = (await listWebhooks(deps, connection, h.base)).find((w) => w.event === 'order.create')!;
  await client.deleteWebhook(victim.id); // as the service does after 3 days of failed deliveries
  t.equal(await lastWebhookRepairs(h.tdb.db).then((m) => m.get(connection.id)), undefined, 'no repair yet');

  // A worker does not know the receiver's URL: the check uses the address stored at the last sync.
  const [r] = await checkAllWebhooks({ ...deps, config: { ...deps.config, PUBLIC_URL: 'http://elsewhere.example' } });
  t.same(
    r!.created.map((w) => w.event),
    ['order.create'],
    'the deleted subscription is back',
  );
  t.equal(r!.address, `${h.base}/webhooks/acme`);
  const listed = await listWebhooks(deps, connection, h.base);
  t.equal(listed.filter((w) => w.ours && w.address === `${h.base}/webhooks/acme`).length, eventsIn('spec').length);
  const repair = (await lastWebhookRepairs(h.tdb.db)).get(connection.id);
  t.match(repair?.detail, { created: ['order.create'], address: `${h.base}/webhooks/acme` }, 'the repair is in the sync log');

  const [again] = await checkAllWebhooks(deps);
  t.equal(again!.created.length + again!.removed.length, 0, 'nothing to repair the next time');
});
