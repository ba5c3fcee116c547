import t from 'tap';
import http from 'node:http';
import { deliver, payload, sign, startReceiver } from './harness.ts';
import { metrics } from '../../src/metrics.ts';
import { consumeDeliveries } from '../../src/sync/intake.ts';

t.test('a body over WEBHOOK_BODY_LIMIT gets 413 and nothing is stored', async (t) => {
  const h = await startReceiver(t, { config: { WEBHOOK_BODY_LIMIT: 2048 } });
  const big = JSON.stringify({ object_id: 1, event: 'variants.create', pad: 'x'.repeat(4096) });
  const res = await deliver(h.url(), big);
  t.equal(res.status, 413, 'declared length over the limit');
  // Chunked, no Content-Length: the limit is enforced while reading, and reading stops.
  const status = await new Promise<number>((resolve, reject) => {
    const req = http.request(
      h.url(),
      { method: 'POST', headers: { 'x-service-signature': sign(big), 'transfer-encoding': 'chunked' } },
      (r) => {
        r.resume();
        resolve(r.statusCode!);
      },
    );
    req.on('error', reject);
    // 8 KiB: over the limit, yet small enough to sit in socket buffers, so the early answer races no write.
    for (let i = 0; i < 8; i++) req.write('y'.repeat(1024));
    req.end();
  });
  t.equal(status, 413, 'streamed body over the limit');
  t.equal((await h.rows()).length, 0);
  const ok = await deliver(h.url(), payload(1));
  t.equal(ok.status, 200, 'a body under the limit is fine');
});

t.test('valid signature but not the payload the spec describes: 400, recorded as rejected, no job', async (t) => {
  const h = await startReceiver(t);
  const bodies = [
    'not json at all',
    '[1,2,3]',
    'null',
    '{"event":"variants.create"}',
    '{"object_id":"abc","event":"variants.create"}',
    '{"object_id":3,"event":42}',
    '{"object_id":1.5,"event":"variants.create"}',
    Buffer.from([0x7b, 0xff, 0xfe, 0x7d]),
  ];
  for (const b of bodies) {
    const res = await deliver(h.url(), b);
    t.equal(res.status, 400, String(b));
    t.match(await res.json(), { error: String });
  }
  const rows = await h.rows();
  t.equal(rows.length, bodies.length, 'each one recorded');
  t.ok(rows.every((r) => r.state === 'rejected' && r.error && r.job_id === null));
  t.equal((await h.jobs()).length, 0);
  const rejected = await h.tdb.pool.query(`SELECT count(*)::int AS n FROM sync_log WHERE action = 'delivery.rejected'`);
  t.equal(rejected.rows[0].n, bodies.length, 'and in the sync log');
});

t.test('signed, but with text PostgreSQL cannot store: stored as received, rejected with its reason, 400, counted', async (t) => {
  const h = await startReceiver(t);
  const rejected = async () => (await metrics.deliveriesRejected.get()).values.find((v) => v.labels.reason === 'malformed')?.value ?? 0;
  const before = await rejected();
  // JSON escapes of a NUL and of a lone surrogate (valid JSON, valid UTF-8), and a NUL byte itself (not JSON,
  // and JSON.parse's message quotes it).
  const refused: [string, RegExp][] = [
    ['{"object_id":1,"event":"variants.create\\u0000"}', /^event has a NUL byte$/],
    ['{"object_id":2,"event":"variants.create\\ud800"}', /^event has a lone surrogate$/],
    ['{"object_id":3,"event":\u0000}', /^not JSON/],
  ];
  for (const [body, reason] of refused) {
    const res = await deliver(h.url(), body);
    t.equal(res.status, 400, `${JSON.stringify(body)}: 400, not 503`);
    t.match(await res.json(), { error: reason });
  }
  const rows = await h.rows();
  t.equal(rows.length, refused.length, 'each one recorded');
  t.match(
    rows.map((r) => ({ state: r.state, error: r.error, body: r.body, job_id: r.job_id })),
    refused.map(([body, reason], i) => ({
      state: 'rejected',
      error: reason,
      body: i < 2 ? body : body.replace('\u0000', '\uFFFD'),
      job_id: null,
    })),
    'rejected, with the reason; the body as received (a NUL byte as U+FFFD)',
  );
  t.equal((await rejected()) - before, refused.length, 'counted as rejections');
  const lines = h.logs.lines();
  t.equal(
    lines.filter((l) => l.msg === 'delivery refused: malformed payload (recorded as rejected)').length,
    refused.length,
    'logged as rejections',
  );
  t.same(
    lines.filter((l) => (l.level as number) >= 50 || l.msg === 'rejected delivery could not be recorded'),
    [],
    'no error, nothing unrecorded',
  );
  // An optional field the mirror cannot keep is left out, as one of the wrong type is: the delivery is used.
  const res = await deliver(h.url(), '{"object_id":4,"event":"variants.create","resource_url":"http://x/\\u0000"}');
  t.equal(res.status, 200, 'a resource_url with a NUL is ignored');
  t.match((await h.rows()).at(-1), { state: 'queued', object_id: 4, resource_url: null });
});

t.test('unknown connection: 404, nothing stored', async (t) => {
  const h = await startReceiver(t);
  const res = await deliver(h.url('nobody'), payload(1));
  t.equal(res.status, 404);
  t.equal((await h.rows()).length, 0);
  t.equal((await deliver(h.url('shop'), payload(1))).status, 200);
});

t.test('disabled connection: 410 (the service then deletes the subscription), nothing stored; enabled again: 200 at once', async (t) => {
  const h = await startReceiver(t);
  t.equal((await deliver(h.url(), payload(1))).status, 200);
  await h.tdb.db
    .insertInto('connections')
    .values({ name: 'off', base_url: 'http://127.0.0.1:1', auth_kind: 'token', status: 'disabled' })
    .execute();
  const res = await deliver(h.url('off'), payload(2));
  t.equal(res.status, 410);
  t.match(await res.json(), { error: /disabled/ });
  t.equal((await h.rows()).length, 1, 'nothing stored for it');
  t.match(h.logs.text(), /connection disabled/);
  await h.tdb.db.updateTable('connections').set({ status: 'active' }).where('name', '=', 'off').execute();
  t.equal((await deliver(h.url('off'), payload(3))).status, 200, 'a cached "disabled" is read again before a 410');
  t.equal((await h.rows()).length, 2);
});

t.test('unsigned requests are refused before the connection is looked up', async (t) => {
  const h = await startReceiver(t);
  const res = await deliver(h.url('nobody'), payload(1), { 'x-service-signature': null });
  t.equal(res.status, 401, 'no way to probe connection names without the secret');
});

t.test('unknown events are stored as unhandled and logged, not rejected, not enqueued', async (t) => {
  const h = await startReceiver(t);
  const res = await deliver(h.url(), payload(77, 'payments.create'), { 'x-service-delivery': 'inv-1' });
  t.equal(res.status, 200);
  const [row] = await h.rows();
  t.match(row, { delivery_id: 'inv-1', state: 'unhandled', resource: 'payment', action: 'create', object_id: 77, job_id: null });
  t.equal((await h.jobs()).length, 0);
  t.match(h.logs.text(), /unhandled/);
});

t.test('stored delivery: row fields, job data; the sync-log entry and its NOTIFY when the handler takes it', async (t) => {
  const h = await startReceiver(t);
  const listener = await h.tdb.pool.connect();
  t.teardown(() => listener.release());
  const notified = new Promise<string | undefined>((resolve) =>
    listener.on('notification', (n) => {
      if (n.channel === 'sync_log') resolve(n.payload);
    }),
  );
  await listener.query('LISTEN sync_log');
  const res = await deliver(h.url(), payload(42, 'fulfillment_returns.create'), { 'x-service-delivery': 'abc-1' });
  t.equal(res.status, 200);
  const [row] = await h.rows();
  t.match(row, {
    delivery_id: 'abc-1',
    event: 'fulfillment_returns.create',
    resource: 'fulfillment_return',
    action: 'create',
    object_id: 42,
    state: 'queued',
  });
  const full = (await h.tdb.pool.query('SELECT event_at, resource_url, received_at FROM webhook_deliveries')).rows[0];
  t.equal(full.event_at.toISOString(), new Date(1_700_000_000_000).toISOString());
  t.match(full.resource_url, /\/variants\/42\.json$/);
  const [job] = await h.jobs();
  t.equal(job!.id, row!.job_id, 'the row names its job');
  t.same(job!.data, { kind: 'batch', connectionId: h.connectionId, jobId: job!.id });
  // The acknowledgement waits only for the row and its job; the entry comes with the handler.
  t.same((await h.tdb.pool.query(`SELECT * FROM sync_log WHERE delivery_id = 'abc-1'`)).rows, []);
  await consumeDeliveries(h.tdb.db, [job!.data]);
  const log = (await h.tdb.pool.query(`SELECT * FROM sync_log WHERE delivery_id = 'abc-1'`)).rows;
  t.match(log, [{ action: 'delivery.received', resource: 'fulfillment_return', record_id: 42, job_id: row!.job_id, outcome: 'ok' }]);
  t.equal(log[0].at.toISOString(), full.received_at.toISOString(), 'dated when it arrived');
  const announced = await Promise.race([notified, new Promise<undefined>((r) => setTimeout(() => r(undefined), 5000))]);
  t.equal(announced, String(log[0].id), 'NOTIFY sync_log with the new entry id, as logSync sends');
});
