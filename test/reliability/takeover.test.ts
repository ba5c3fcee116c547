// A worker killed in the middle of a push: its job must be taken over by another worker soon, and the order
// created once. pg-boss gives a job held by a dead worker back only when it expires (expireInSeconds, 15 min
// for push) unless the queue has a heartbeat; this test shows how long the takeover takes.
import t from 'tap';
import { enqueueOperation } from '../../src/push/enqueue.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { captureLogger } from '../support/log.ts';
import { startWorld, until } from './harness.ts';

t.test('kill -9 of the worker during a push: another worker finishes it once', async (t) => {
  const world = await startWorld(t);
  const [shop] = world.shops;
  await world.reconcile();
  const worker = await world.spawn('worker');
  const boss = await startBoss(world.databaseUrl, captureLogger('silent').log, { supervise: false, schedule: false, max: 2 });
  t.teardown(() => stopBoss(boss, false));
  const variant = (await shop!.snapshot('variants')).find(
    (v) => v.sku && v.status === 'active' && !v.composite && v.manage_stock !== false,
  )!;
  const company = (await shop!.snapshot('companies')).find((c) => c.status === 'active')!;
  const currency = (await shop!.snapshot('currencies'))[0]!.iso;
  // The service is slow to create orders: the worker is caught with the request in flight.
  await shop!.admin('POST', 'faults', { responses: { latency_ms: 3000, routes: '^POST /orders' } });
  const op = await enqueueOperation({ db: world.db, boss }, 'import-order', {
    channel: 'takeover',
    channel_order_id: 'T-1',
    customer: { company_id: company.id },
    currency,
    issued_at: '2026-11-21',
    lines: [{ sku: variant.sku, quantity: '1' }],
  });
  await until(
    'the operation to be sent',
    async () =>
      (await world.db.selectFrom('push_operations').select('state').where('id', '=', op.id).executeTakeFirstOrThrow()).state === 'sent',
    20_000,
    50,
  );
  await new Promise((r) => setTimeout(r, 700));
  worker.kill('SIGKILL');
  await worker.exited;
  await shop!.admin('POST', 'faults', {});
  const started = Date.now();
  const second = await world.spawn('worker');
  const done = await until(
    'the push to be finished by the other worker',
    async () => {
      const row = await world.db
        .selectFrom('push_operations')
        .select(['state', 'reason'])
        .where('id', '=', op.id)
        .executeTakeFirstOrThrow();
      return row.state === 'confirmed' || row.state === 'failed' || `still ${row.state}`;
    },
    60_000,
    250,
  ).then(
    () => true,
    (err: Error) => {
      t.comment(err.message);
      return false;
    },
  );
  // Without heartbeats the job waited for its expiry (15 min for a push); with them, about half a minute.
  t.ok(done, `the operation was taken over within a minute (${Math.round((Date.now() - started) / 1000)} s)`);
  const orders = (await shop!.snapshot('orders')).filter((o) => o.reference_number === 'T-1');
  t.ok(orders.length <= 1, `the order exists at most once (${orders.length})`);
  if (done) t.equal(orders.length, 1, 'and exactly once once confirmed');
  await second.stop();
});
