// While a connection's deliveries job waits, new deliveries join it instead of costing another pg-boss job; once
// the handler starts it, nothing joins it any more, and what joined it before is all read.
import t from 'tap';
import { deliver, payload, startReceiver } from './harness.ts';
import { consumeDeliveries } from '../../src/sync/intake.ts';
import type { DeliveryBatch } from '../../src/queue/contracts.ts';
import { replayDelivery } from '../../src/receiver/replay.ts';

t.test('deliveries in separate commits join the job that waits: one job, every row handled', async (t) => {
  const h = await startReceiver(t);
  for (let i = 1; i <= 3; i++) t.equal((await deliver(h.url(), payload(i), { 'x-service-delivery': `w-${i}` })).status, 200);
  const rows = await h.rows();
  const txns = (await h.tdb.pool.query('SELECT count(DISTINCT xmin::text)::int AS n FROM webhook_deliveries')).rows[0].n;
  t.equal(txns, 3, 'three commits');
  const jobs = await h.jobs();
  t.equal(jobs.length, 1, 'one job for three commits');
  t.ok(
    rows.every((r) => r.job_id === jobs[0]!.id),
    'every row names it',
  );
  const r = await consumeDeliveries(h.tdb.db, [jobs[0]!.data]);
  t.equal(r.processed, 3);
  t.same(await h.queued(), [], 'nothing left queued');
});

t.test('once the handler has started a job, new deliveries make a new one', async (t) => {
  const h = await startReceiver(t);
  await deliver(h.url(), payload(1), { 'x-service-delivery': 's-1' });
  const [first] = await h.jobs();
  await consumeDeliveries(h.tdb.db, [first!.data]);
  await deliver(h.url(), payload(2), { 'x-service-delivery': 's-2' });
  const jobs = await h.jobs();
  t.equal(jobs.length, 2);
  const second = jobs.find((j) => j.id !== first!.id)!;
  t.same(
    (await h.rows()).map((r) => [r.delivery_id, r.job_id, r.state]),
    [
      ['s-1', first!.id, 'processed'],
      ['s-2', second.id, 'queued'],
    ],
  );
});

t.test('a job waiting longer than 30 s takes no more rows: the next delivery makes a new job', async (t) => {
  const h = await startReceiver(t);
  await deliver(h.url(), payload(1), { 'x-service-delivery': 'o-1' });
  await h.tdb.pool.query(`UPDATE delivery_waits SET since = now() - interval '31 seconds'`);
  await deliver(h.url(), payload(2), { 'x-service-delivery': 'o-2' });
  const rows = await h.rows();
  t.equal((await h.jobs()).length, 2);
  t.not(rows[0]!.job_id, rows[1]!.job_id);
});

t.test('the handler waits for a receiver transaction that is joining its job, and reads its row', async (t) => {
  const h = await startReceiver(t);
  await deliver(h.url(), payload(1), { 'x-service-delivery': 'b-1' });
  const [job] = await h.jobs();
  const data = job!.data as DeliveryBatch;
  // A receiver transaction part way: it holds the shared lock, has seen the wait row and attached its row, and has
  // not committed yet (what src/db/deliveries.ts insertDeliveries does in one round trip).
  const receiver = await h.tdb.pool.connect();
  t.teardown(() => receiver.release());
  await receiver.query('BEGIN');
  await receiver.query(`SELECT pg_advisory_xact_lock_shared(hashtextextended('deliveries:' || $1::bigint, 0))`, [h.connectionId]);
  await receiver.query(
    `INSERT INTO webhook_deliveries (connection_id, delivery_id, event, resource, action, object_id, body, state, job_id)
     VALUES ($1, 'b-2', 'variants.update', 'variant', 'update', 2, '{}', 'queued', $2)`,
    [h.connectionId, data.jobId],
  );
  let done = false;
  const handled = consumeDeliveries(h.tdb.db, [data]).then((r) => {
    done = true;
    return r;
  });
  await new Promise((r) => setTimeout(r, 300));
  t.notOk(done, 'the handler does not read while a joining transaction is open');
  await receiver.query('COMMIT');
  t.equal((await handled).processed, 2, 'and then reads both rows');
  t.same(await h.queued(), []);
  t.equal(Number((await h.tdb.pool.query('SELECT count(*) AS n FROM delivery_waits')).rows[0].n), 0, 'the wait row is gone');
});

t.test('a row is logged as received once: not again when replayed', async (t) => {
  const h = await startReceiver(t);
  await deliver(h.url(), payload(1), { 'x-service-delivery': 'l-1' });
  const [job] = await h.jobs();
  await consumeDeliveries(h.tdb.db, [job!.data]);
  const { id } = (await h.tdb.pool.query(`SELECT id FROM webhook_deliveries`)).rows[0];
  // An operator's replay: the row waits again, for a job that names it by row id.
  t.ok(await replayDelivery(h.tdb.db, h.boss, Number(id)), 'replayed');
  const replay = (await h.jobs()).find((j) => j.data.kind === 'replay');
  await consumeDeliveries(h.tdb.db, [replay!.data]);
  const log = (await h.tdb.pool.query(`SELECT action FROM sync_log WHERE delivery_id = 'l-1' AND action = 'delivery.received'`)).rows;
  t.equal(log.length, 1, 'one received entry');
  t.equal((await h.rows())[0]!.state, 'processed');
});
