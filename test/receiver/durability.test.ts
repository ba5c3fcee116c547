import t from 'tap';
import { createHash } from 'node:crypto';
import { deliver, payload, pgProxy, startReceiver } from './harness.ts';
import { consumeDeliveries } from '../../src/sync/intake.ts';

t.test('the same delivery twice: both 200, one row, in one job', async (t) => {
  const h = await startReceiver(t);
  const body = payload(5);
  const first = await deliver(h.url(), body, { 'x-service-delivery': 'dup-1' });
  const second = await deliver(h.url(), body, { 'x-service-delivery': 'dup-1' });
  t.equal(first.status, 200);
  t.equal(second.status, 200);
  t.same(await second.json(), { ok: true, duplicate: true });
  // And arriving together, in the same batch.
  const together = await Promise.all([1, 2, 3].map(() => deliver(h.url(), payload(6), { 'x-service-delivery': 'dup-2' })));
  t.same(
    together.map((r) => r.status),
    [200, 200, 200],
  );
  t.equal((await h.rows()).length, 2);
  t.same(await h.jobbed(), await h.queued(), 'each stored delivery in exactly one job');
});

t.test('no delivery id: keyed by the sha256 of the body', async (t) => {
  const h = await startReceiver(t);
  const body = payload(8);
  t.equal((await deliver(h.url(), body, { 'x-service-delivery': null })).status, 200);
  t.equal((await deliver(h.url(), body, { 'x-service-delivery': null })).status, 200);
  t.equal((await deliver(h.url(), payload(9), { 'x-service-delivery': null })).status, 200);
  const rows = await h.rows();
  t.equal(rows.length, 2);
  t.equal(rows[0]!.delivery_id, `sha256:${createHash('sha256').update(body).digest('hex')}`);
  t.equal((await h.jobbed()).length, 2);
});

t.test('200 parallel deliveries: 200 rows, each in one job, in fewer transactions', async (t) => {
  const h = await startReceiver(t);
  const res = await Promise.all(
    Array.from({ length: 200 }, (_, i) => deliver(h.url(), payload(1000 + i), { 'x-service-delivery': `p-${i}` })),
  );
  t.same(new Set(res.map((r) => r.status)), new Set([200]));
  const rows = await h.rows();
  t.equal(rows.length, 200);
  t.equal(new Set(rows.map((r) => r.object_id)).size, 200);
  const jobs = await h.jobs();
  t.same(await h.jobbed(), await h.queued(), 'each of the 200 rows in exactly one job');
  t.equal((await h.queued()).length, 200);
  t.ok(
    rows.every((r) => jobs.some((j) => j.id === r.job_id && j.data.jobId === r.job_id)),
    'each row names the job that holds it',
  );
  t.ok(jobs.length < 200, `one job per committed batch at most: ${jobs.length} jobs`);
  await consumeDeliveries(
    h.tdb.db,
    jobs.map((j) => j.data),
  );
  const log = await h.tdb.pool.query(`SELECT count(*)::int AS n FROM sync_log WHERE action = 'delivery.received'`);
  t.equal(log.rows[0].n, 200, 'the handler logs each as received');
  const txns = (await h.tdb.pool.query('SELECT count(DISTINCT xmin::text)::int AS n FROM webhook_deliveries')).rows[0].n;
  t.ok(txns < 200, `group commit: 200 deliveries in ${txns} transactions`);
});

t.test('database unreachable: 503, never 2xx; once it is back nothing is lost', async (t) => {
  let proxy!: Awaited<ReturnType<typeof pgProxy>>;
  const h = await startReceiver(t, { receiverUrl: async (url) => (proxy = await pgProxy(t, url)).url });
  for (let i = 0; i < 5; i++) t.equal((await deliver(h.url(), payload(i), { 'x-service-delivery': `up-${i}` })).status, 200);
  await proxy.cut();
  const down = await Promise.all(
    Array.from({ length: 10 }, (_, i) => deliver(h.url(), payload(100 + i), { 'x-service-delivery': `down-${i}` })),
  );
  t.same(
    down.map((r) => r.status),
    Array(10).fill(503),
    'every delivery refused with 503 while the database is away',
  );
  t.ok(down.every((r) => r.headers.get('retry-after')));
  t.equal((await h.rows()).length, 5, 'nothing half-stored');
  await proxy.restore();
  // The service retries what failed.
  const again = await Promise.all(
    Array.from({ length: 10 }, (_, i) => deliver(h.url(), payload(100 + i), { 'x-service-delivery': `down-${i}` })),
  );
  t.same(
    again.map((r) => r.status),
    Array(10).fill(200),
  );
  t.equal((await h.rows()).length, 15);
  t.same(await h.jobbed(), await h.queued(), 'each in exactly one job');
  t.equal((await h.jobbed()).length, 15);
});

t.test('database blocked past the ack timeout: 503; the late commit is kept and the retry is a duplicate', async (t) => {
  const h = await startReceiver(t, { config: { WEBHOOK_ACK_TIMEOUT_MS: 1000 } });
  // On a busy machine even the first delivery may miss 1 s; the service would retry it, so do we.
  let warm = 0;
  for (let i = 0; i < 5 && warm !== 200; i++) warm = (await deliver(h.url(), payload(1), { 'x-service-delivery': 'warm' })).status;
  t.equal(warm, 200);
  const locker = await h.tdb.pool.connect();
  await locker.query('BEGIN; LOCK TABLE webhook_deliveries IN EXCLUSIVE MODE');
  const blocked = await Promise.all(
    Array.from({ length: 5 }, (_, i) => deliver(h.url(), payload(10 + i), { 'x-service-delivery': `slow-${i}` })),
  );
  t.same(
    blocked.map((r) => r.status),
    Array(5).fill(503),
    'no 2xx before the commit',
  );
  await locker.query('COMMIT');
  locker.release();
  const again = await Promise.all(
    Array.from({ length: 5 }, (_, i) => deliver(h.url(), payload(10 + i), { 'x-service-delivery': `slow-${i}` })),
  );
  t.same(
    again.map((r) => r.status),
    Array(5).fill(200),
  );
  t.equal((await h.rows()).length, 6, 'each delivery once');
  t.same(await h.jobbed(), await h.queued(), 'each in exactly one job');
  t.equal((await h.jobbed()).length, 6, 'each job once');
});

t.test('graceful shutdown: deliveries in flight are committed and answered 200, then the port closes', async (t) => {
  const h = await startReceiver(t);
  t.equal((await deliver(h.url(), payload(1), { 'x-service-delivery': 'warm' })).status, 200);
  const locker = await h.tdb.pool.connect();
  await locker.query('BEGIN; LOCK TABLE webhook_deliveries IN EXCLUSIVE MODE');
  let arrived = 0;
  h.server.http.on('request', () => {
    arrived++;
  });
  const inflight = Promise.all(Array.from({ length: 20 }, (_, i) => deliver(h.url(), payload(10 + i), { 'x-service-delivery': `f-${i}` })));
  // Wait until all 20 reached the server and the receiver's insert waits behind the lock: in flight.
  for (let i = 0; i < 1000; i++) {
    const { rows } = await h.tdb.pool.query(
      // The insert's text, or its prepared statement's name once the connection has prepared it.
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'
        AND (query LIKE '%INSERT INTO webhook_deliveries%' OR query LIKE '%cs_receive_rows%' OR query LIKE '%cs_receive_jobs%')`,
    );
    if (rows[0].n > 0 && arrived >= 20) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  t.equal(arrived, 20, 'all in flight before shutdown starts');
  const stopping = h.stop();
  await new Promise((r) => setTimeout(r, 50));
  await locker.query('COMMIT');
  locker.release();
  const res = await inflight;
  await stopping;
  t.same(
    res.map((r) => r.status),
    Array(20).fill(200),
    'answered after their commit',
  );
  t.equal((await h.rows()).length, 21);
  t.same(await h.jobbed(), await h.queued(), 'each in exactly one job');
  t.equal((await h.jobbed()).length, 21);
  await t.rejects(deliver(h.url(), payload(99)), 'no longer accepting');
});

t.test('an absurdly long delivery id is keyed by its hash and does not poison its batch', async (t) => {
  const h = await startReceiver(t);
  const long = 'x'.repeat(6000);
  const res = await Promise.all([
    deliver(h.url(), payload(1), { 'x-service-delivery': long }),
    deliver(h.url(), payload(2), { 'x-service-delivery': 'normal' }),
  ]);
  t.same(
    res.map((r) => r.status),
    [200, 200],
  );
  t.equal((await deliver(h.url(), payload(1), { 'x-service-delivery': long })).status, 200, 'a retry of it is a duplicate');
  const rows = await h.rows();
  t.equal(rows.length, 2);
  t.match(rows.map((r) => r.delivery_id).sort(), ['normal', /^sha256-id:[0-9a-f]{64}$/]);
});

t.test('an item the database refuses fails alone, not its batch neighbours', async (t) => {
  // One commit slot and a long wait, so the two share a batch.
  const h = await startReceiver(t, { config: { WEBHOOK_BATCH_WAIT_MS: 200, WEBHOOK_COMMIT_CONCURRENCY: 1 } });
  await h.tdb.db.insertInto('connections').values({ name: 'gone', base_url: 'http://127.0.0.1:1', auth_kind: 'token' }).execute();
  t.equal((await deliver(h.url('gone'), payload(1))).status, 200, 'the receiver now knows (caches) connection gone');
  await h.tdb.db.deleteFrom('connections').where('name', '=', 'gone').execute();
  // Still cached: its insert violates the foreign key, in the same batch as a good delivery.
  const [bad, good] = await Promise.all([
    deliver(h.url('gone'), payload(2)),
    deliver(h.url('shop'), payload(3), { 'x-service-delivery': 'neighbour' }),
  ]);
  t.equal(bad.status, 503, 'refused, so the service retries it (and gets 404 once the cache expires)');
  t.equal(good.status, 200);
  t.same(
    (await h.rows()).map((r) => r.delivery_id),
    ['neighbour'],
  );
  t.match(h.logs.text(), /storing its deliveries one by one/, 'it was the same batch');
});
