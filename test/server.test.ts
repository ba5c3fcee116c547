import t from 'tap';
import { createApp, listen } from '../src/server.ts';
import { createDb, createPool } from '../src/db/index.ts';
import { testDatabase, emptyDatabase } from './support/db.ts';
import { captureLogger } from './support/log.ts';

t.test('/healthz answers while the process lives; /readyz when the database is migrated', async (t) => {
  const { pool } = await testDatabase(t);
  const { app } = createApp(pool, captureLogger().log);
  const server = await listen(app, 0, '127.0.0.1');
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${server.port}`;
  const health = await fetch(`${base}/healthz`);
  t.equal(health.status, 200);
  t.same(await health.json(), { ok: true });
  const ready = await fetch(`${base}/readyz`);
  t.equal(ready.status, 200);
});

t.test('/readyz is 503 with a reason when migrations are missing', async (t) => {
  const { url } = await emptyDatabase(t);
  const pool = createPool(url);
  t.teardown(() => createDb(pool).destroy());
  const { app } = createApp(pool, captureLogger().log);
  const server = await listen(app, 0, '127.0.0.1');
  t.teardown(() => server.close());
  const res = await fetch(`http://127.0.0.1:${server.port}/readyz`);
  t.equal(res.status, 503);
  t.match(await res.json(), { ok: false, reasons: [/migrations not applied: 0001_initial\.sql/] });
});

t.test('/readyz is 503 when the database is unreachable; /healthz still 200', async (t) => {
  const pool = createPool('postgres://postgres@127.0.0.1:1/none');
  t.teardown(() => pool.end());
  const { app } = createApp(pool, captureLogger().log);
  const server = await listen(app, 0, '127.0.0.1');
  t.teardown(() => server.close());
  const res = await fetch(`http://127.0.0.1:${server.port}/readyz`);
  t.equal(res.status, 503);
  t.match(await res.json(), { reasons: [/database unreachable/] });
  t.equal((await fetch(`http://127.0.0.1:${server.port}/healthz`)).status, 200);
});

t.test('a request trickling its body is cut after the request timeout', async (t) => {
  const { pool } = await testDatabase(t);
  const { app, router } = createApp(pool, captureLogger().log);
  router.post('/sink', async (ctx) => {
    for await (const _ of ctx.req) {
      /* read it all */
    }
    ctx.body = 'ok';
  });
  const server = await listen(app, 0, '127.0.0.1', { requestTimeoutMs: 1000 });
  t.teardown(() => server.close(100));
  const { connect } = await import('node:net');
  const socket = connect(server.port, '127.0.0.1');
  socket.write('POST /sink HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{');
  // One more byte a second: never finishes on its own.
  const drip = setInterval(() => socket.write(' '), 1000);
  t.teardown(() => clearInterval(drip));
  let answer = '';
  socket.on('data', (d) => {
    answer += d;
  });
  const closed = await Promise.race([
    new Promise<'closed'>((r) => socket.once('close', () => r('closed'))),
    new Promise<'open'>((r) => setTimeout(() => r('open'), 15_000).unref()),
  ]);
  t.equal(closed, 'closed', 'the server closed the slow request');
  t.match(answer, /^HTTP\/1\.1 408/, 'with 408 Request Timeout');
});
