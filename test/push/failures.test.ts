// Transient failures: the job is retried with the same keys while the operation stays sent; after the last
// attempt the operation fails with the error; an operator retry then completes it, once. The job runner is
// driven by hand here (no background worker), so the test decides which attempt is the last.
import t from 'tap';
import { runPushJob } from '../../src/push/worker.ts';
import { getOperation } from '../../src/db/operations.ts';
import { retryOperation } from '../../src/push/store.ts';
import { harness, orderInput, plainVariants } from './harness.ts';

t.test('transient errors: retried, then failed after the last attempt, then retried by an operator', async (t) => {
  const h = await harness(t, { worker: false });
  const [a] = plainVariants(await h.snapshot('variants'));
  const companies = await h.snapshot('companies');
  const op = await h.push('import-order', orderInput(companies[0].id, 'flaky', 'F-1', [{ sku: a.sku, quantity: '1' }]));
  await h.faults({ responses: { error_503: 1, routes: '^POST /orders$' } });
  const job = (retryCount: number) =>
    ({ id: `job-${retryCount}`, name: 'push', data: { operationId: op.id }, retryCount, retryLimit: 2 }) as any;

  await t.rejects(runPushJob(h.rt, job(0)), /503/, 'a transient error is thrown for pg-boss to retry');
  let row = (await getOperation(h.tdb.db, op.id))!;
  t.equal(row.state, 'sent', 'still sent while retries remain');
  t.match(row.reason, /503/);
  t.equal(row.locked_until, null, 'the lease is let go for the retry');
  const retryLog = await h.tdb.db
    .selectFrom('sync_log')
    .select(['outcome'])
    .where('record_id', '=', op.id)
    .where('action', '=', 'push.import-order.retry')
    .execute();
  t.same(
    retryLog.map((l) => l.outcome),
    ['warning'],
  );

  await runPushJob(h.rt, job(2));
  row = (await getOperation(h.tdb.db, op.id))!;
  t.equal(row.state, 'failed', 'the last attempt fails the operation');
  t.match(row.reason, /^gave up after 2 attempts: .*503/);
  t.equal(row.status_code, 503);
  t.equal((await h.snapshot('orders')).filter((o) => o.reference_number === 'F-1').length, 0);

  await h.faults({});
  const again = await retryOperation(h.tdb.db, h.boss, op.id);
  t.equal(again.state, 'queued');
  await runPushJob(h.rt, job(0));
  row = (await getOperation(h.tdb.db, op.id))!;
  t.equal(row.state, 'confirmed', row.reason ?? '');
  t.equal(row.attempts, 3);
  t.equal((await h.snapshot('orders')).filter((o) => o.reference_number === 'F-1').length, 1, 'one order');

  // A finished operation's stray job does nothing.
  await runPushJob(h.rt, job(0));
  t.equal((await getOperation(h.tdb.db, op.id))!.attempts, 3);
});

t.test('a later operation waits for an unfinished earlier one of the same order, and is woken by it', async (t) => {
  const h = await harness(t, { worker: false });
  const [a] = plainVariants(await h.snapshot('variants'));
  const companies = await h.snapshot('companies');
  const imp = await h.push('import-order', orderInput(companies[0].id, 'w', 'W-1', [{ sku: a.sku, quantity: '1' }]));
  const pay = await h.push('pay', { channel: 'w', channel_order_id: 'W-1' });
  const job = (operationId: number) =>
    ({ id: `j-${operationId}`, name: 'push', data: { operationId }, retryCount: 0, retryLimit: 6 }) as any;
  await runPushJob(h.rt, job(pay.id));
  t.equal((await getOperation(h.tdb.db, pay.id))!.state, 'queued', 'the pay waits: the import before it is unfinished');
  await runPushJob(h.rt, job(imp.id));
  t.equal((await getOperation(h.tdb.db, imp.id))!.state, 'confirmed');
  const woken = await h.boss.fetch<{ operationId: number }>('push', { batchSize: 10 });
  t.ok(
    woken?.some((j) => j.data.operationId === pay.id),
    'finishing the import queued a job for the pay',
  );
  await runPushJob(h.rt, job(pay.id));
  const paid = (await getOperation(h.tdb.db, pay.id))!;
  t.equal(paid.state, 'confirmed', paid.reason ?? '');
  t.equal((paid.result as any).order_id, ((await getOperation(h.tdb.db, imp.id))!.result as any).order_id);
});

t.test('a lost answer while packing: the retry packs nothing twice and ships the one fulfillment', async (t) => {
  const h = await harness(t, { worker: false });
  const [a, b] = plainVariants(await h.snapshot('variants'));
  const companies = await h.snapshot('companies');
  const job = (operationId: number, retryCount = 0) =>
    ({ id: `j-${operationId}-${retryCount}`, name: 'push', data: { operationId }, retryCount, retryLimit: 6 }) as any;
  const imp = await h.push(
    'import-order',
    orderInput(companies[0].id, 'l', 'L-1', [
      { sku: a.sku, quantity: '2' },
      { sku: b.sku, quantity: '1' },
    ]),
  );
  await runPushJob(h.rt, job(imp.id));
  const orderId = ((await getOperation(h.tdb.db, imp.id))!.result as any).order_id;
  const ship = await h.push('ship', { order_id: orderId, lines: [{ sku: a.sku, quantity: '2' }], tracking: { number: 'L-T' } });
  await h.faults({ responses: { lose_response: 1, routes: '^POST /fulfillments$' } });
  await t.rejects(runPushJob(h.rt, job(ship.id)), /no answer/);
  t.equal((await h.snapshot('fulfillments')).filter((f) => f.order_id === orderId).length, 1, 'the service packed it; the answer was lost');
  await h.faults({});
  await runPushJob(h.rt, job(ship.id, 1));
  const done = (await getOperation(h.tdb.db, ship.id))!;
  t.equal(done.state, 'confirmed', done.reason ?? '');
  const fs = (await h.snapshot('fulfillments')).filter((f) => f.order_id === orderId);
  t.equal(fs.length, 1, 'one fulfillment');
  t.match(fs[0], { id: (done.result as any).fulfillment_id, status: 'fulfilled', tracking_number: 'L-T' });
});

t.test('void: a shipped order cannot be voided (422 with the field message)', async (t) => {
  const h = await harness(t);
  const [a] = plainVariants(await h.snapshot('variants'));
  const companies = await h.snapshot('companies');
  const imp = await h.run('import-order', orderInput(companies[0].id, 'v', 'V-1', [{ sku: a.sku, quantity: '1' }]));
  t.equal((await h.run('ship', { channel: 'v', channel_order_id: 'V-1' })).state, 'confirmed');
  const voided = await h.run('void', { channel: 'v', channel_order_id: 'V-1' });
  t.equal(voided.state, 'failed');
  t.equal(voided.status_code, 422);
  t.ok(voided.field_errors, 'field messages kept');
  t.not((await h.snapshot('orders')).find((o) => o.id === (imp.result as any).order_id).status, 'void');
});
