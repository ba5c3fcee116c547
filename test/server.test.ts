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
