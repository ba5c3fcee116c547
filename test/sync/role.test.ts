// The worker role as `start` mounts it: its schedules (none per connection), a reconcile job run by the queue, a
// failing drain backing off with its error in the sync log; and `commerce-sync reconcile` as a process.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sql } from 'kysely';
import { addTokenConnection } from '../../src/api/connections.ts';
import { startSandbox } from '@commerce-sync/sandbox';
import { mount } from '../../src/worker/role.ts';
import { markPending } from '../../src/db/pending.ts';
import { everyMinutes } from '../../src/sync/schedules.ts';
import { testConfig } from '../support/config.ts';
import { addConnection, testDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { runNode } from '../support/processes.ts';
import { TEST_KEY } from './harness.ts';
import { ClientState } from '../../src/api/client-state.ts';
import { maintenanceQueue } from '../../src/queue/contracts.ts';
import { reconcileQueue, requestSweep } from '../../src/queue/contracts.ts';
import { testRuntime } from '../support/runtime.ts';

const until = async (what: string, fn: () => Promise<boolean>, ms = 30_000) => {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

t.test('mount: housekeeping schedules (none per connection), a queued sweep runs, a failing drain backs off', async (t) => {
  const sandbox = await startSandbox({ variants: 10, timeScale: 100 });
  t.teardown(() => sandbox.close());
  const tdb = await testDatabase(t);
  const logs = captureLogger('warn');
  const config = testConfig({
    DATA_DIR: await mkdtemp(join(tmpdir(), 'cs-role-')),
    TOKEN_ENCRYPTION_KEY: TEST_KEY,
    DATABASE_URL: tdb.url,
    RECONCILE_INTERVAL_MINUTES: 7,
    API_MAX_ATTEMPTS: 1,
    FULL_SWEEP_CRON: '30 2 * * *',
  });
  const shop = await addTokenConnection(
    { db: tdb.db, config, log: logs.log, clients: new ClientState() },
    { baseUrl: sandbox.url, token: sandbox.token, name: 'shop' },
  );
  const broken = await addConnection(tdb.db, 'broken');
  await tdb.db
    .insertInto('connections')
    .values({ name: 'off', base_url: 'http://127.0.0.1:1', auth_kind: 'token', status: 'lapsed' })
    .execute();
  const rt = await testRuntime(t, tdb, config, logs.log, { boss: { supervise: true, schedule: false, max: 4 } });
  const boss = rt.boss;
  await mount(rt);
  const channelled = await sql<{ name: string }>`SELECT DISTINCT n.name FROM connections n JOIN channels c ON c.connection_id = n.id
    ORDER BY 1`.execute(tdb.db);
  t.same(
    channelled.rows.map((r) => r.name),
    ['broken', 'shop'],
    "the start's rules check (one statement over every connection) made each active connection its default channel",
  );

  t.same(await boss.getSchedules(reconcileQueue.name), [], 'no schedule per connection: the sweeps task asks for them');
  const housekeeping = new Map((await boss.getSchedules(maintenanceQueue.name)).map((s) => [s.key, s.cron]));
  t.same([...housekeeping.keys()].sort(), [
    'full-sweeps',
    'holds',
    'order-watch',
    'pending',
    'probe-lapsed',
    'retention',
    'schedules',
    'sweeps',
    'webhooks',
  ]);
  t.equal(housekeeping.get('full-sweeps'), '30 2 * * *', 'full sweeps of every connection on FULL_SWEEP_CRON');
  t.equal(housekeeping.get('sweeps'), '* * * * *', 'due incremental sweeps looked for every minute');
  t.equal(everyMinutes(120), '0 */2 * * *');
  const initial = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'reconcile' AND singleton_key LIKE 'initial-%'`.execute(tdb.db);
  t.equal(initial.rows[0]!.n, 2, 'each never-swept active connection gets a first full sweep');

  await requestSweep(boss, shop.id, true);
  await until(
    'the queued full sweep',
    async () =>
      (
        await sql<{
          n: number;
        }>`SELECT count(*)::int AS n FROM sync_log WHERE action IN ('sweep.initial', 'sweep.full') AND connection_id = ${shop.id}`.execute(
          tdb.db,
        )
      ).rows[0]!.n >= 1,
  );
  t.equal(
    (await tdb.db.selectFrom('variants').select('id').where('connection_id', '=', shop.id).execute()).length,
    (
      (await (
        await fetch(`${sandbox.url}/__sandbox/snapshot?resource=variants`, { headers: { Authorization: `Bearer ${sandbox.adminToken}` } })
      ).json()) as any
    ).variants.length,
  );

  // A drain of a connection whose service does not answer fails: its pair waits 2, 4, 8 ... s before the next
  // try, and the sync log keeps the error.
  await markPending(tdb.db, [{ connectionId: broken.id, resource: 'variant', id: 1 }]);
  await until(
    'the failed drain',
    async () =>
      (
        await sql<{ n: number }>`SELECT count(*)::int AS n FROM drain_pairs
          WHERE connection_id = ${broken.id} AND failures >= 1 AND claimed_by IS NULL`.execute(tdb.db)
      ).rows[0]!.n === 1,
  );
  const pair = await sql<{ wait: number; due: boolean }>`SELECT extract(epoch FROM next_at - now())::float8 AS wait,
      marked_seq > drained_seq AS due FROM drain_pairs WHERE connection_id = ${broken.id}`.execute(tdb.db);
  t.ok(pair.rows[0]!.due && pair.rows[0]!.wait > 0, 'the pair is still due, after a backoff');
  const failed = await sql<{ error: string }>`SELECT error FROM sync_log
    WHERE connection_id = ${broken.id} AND action = 'fetch' AND outcome = 'error'`.execute(tdb.db);
  t.match(failed.rows[0]?.error, /127\.0\.0\.1:1|no answer|ECONNREFUSED/, 'the sync log keeps the error');
  const left = await tdb.db
    .selectFrom('pending_fetches')
    .select(['claimed_until'])
    .where('connection_id', '=', broken.id)
    .executeTakeFirstOrThrow();
  t.equal(left.claimed_until, null, 'its claim is given back for the next try');
});

t.test('commerce-sync reconcile --full --connection shop, then an incremental one', async (t) => {
  const sandbox = await startSandbox({ variants: 12, timeScale: 100 });
  t.teardown(() => sandbox.close());
  const tdb = await testDatabase(t);
  const dataDir = await mkdtemp(join(tmpdir(), 'cs-cli-'));
  const env = { ...process.env, DATABASE_URL: tdb.url, TOKEN_ENCRYPTION_KEY: TEST_KEY, DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
  await addTokenConnection(
    {
      db: tdb.db,
      config: testConfig({ DATA_DIR: dataDir, TOKEN_ENCRYPTION_KEY: TEST_KEY }),
      log: captureLogger().log,
      clients: new ClientState(),
    },
    { baseUrl: sandbox.url, token: sandbox.token, name: 'shop' },
  );
  const run = async (args: string[]) => {
    const p = await runNode(['src/cli.ts', 'reconcile', ...args], env);
    return { code: p.code ?? 1, out: p.both };
  };
  const full = await run(['--full', '--connection', 'shop']);
  t.equal(full.code, 0, full.out);
  t.match(full.out, /shop: full sweep read \d+ records .*initial load of the mirror/);
  t.match(full.out, /variant +records 12 {2}loaded 12/);
  t.match(full.out, /variant\s+records 12/);
  const inc = await run([]);
  t.equal(inc.code, 0, inc.out);
  t.match(inc.out, /shop: incremental sweep .* drift 0, no event 0, explained 0;/, 'nothing changed since: no drift');
  t.equal((await run(['--connection', 'nobody'])).code, 2, 'an unknown connection is a usage error');
});
