// One busy account must not starve another: account A answers slowly and keeps the workers busy with its
// drains and a full sweep; a stock change in account B still reaches the mirror while A is at it.
import t from 'tap';
import { sql } from 'kysely';
import { addTokenConnection } from '../../src/api/connections.ts';
import { syncWebhooks } from '../../src/receiver/subscriptions.ts';
import { startSandbox } from '@commerce-sync/sandbox';
import { requestSweep } from '../../src/queue/contracts.ts';
import { startLoop } from './harness.ts';
import { ClientState } from '../../src/api/client-state.ts';

t.test('a slow, busy connection leaves worker slots to the others', async (t) => {
  const loop = await startLoop(t, { sandbox: { variants: 200 }, config: { WORKER_CONCURRENCY: 4 }, firstSweep: true });
  const b = await startSandbox({ variants: 30, timeScale: 100 });
  t.teardown(() => b.close());
  const deps = { db: loop.tdb.db, config: loop.config, log: loop.logs.log, clients: new ClientState() };
  const other = await addTokenConnection(deps, { baseUrl: b.url, token: b.token, name: 'other' });
  await syncWebhooks(deps, other, loop.publicUrl);
  await loop.until(
    'the first sweep of A',
    async () =>
      (
        await sql<{ n: number }>`SELECT count(*)::int AS n FROM sync_log WHERE action IN ('sweep.initial', 'sweep.full')`.execute(
          loop.tdb.db,
        )
      ).rows[0]!.n >= 1,
  );

  // A answers every request after 3 s, and has a stream of changes and a full sweep to do.
  await loop.admin('POST', 'faults', { responses: { latency_ms: 3000 } });
  await requestSweep(loop.bosses[0]!, loop.connection.id, true);
  for (let i = 0; i < 5; i++) {
    await loop.admin('POST', 'activity', { operations: 20, kinds: ['adjust_stock', 'place_order', 'update_variant'] });
    await new Promise((r) => setTimeout(r, 300));
  }
  await loop.until(
    'A to be busy',
    async () =>
      (
        await sql<{
          n: number;
        }>`SELECT count(*)::int AS n FROM drain_pairs WHERE claimed_by IS NOT NULL AND connection_id = ${loop.connection.id}`.execute(
          loop.tdb.db,
        )
      ).rows[0]!.n >= 1,
  );

  const started = Date.now();
  const res = await fetch(`${b.url}/__sandbox/activity`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${b.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ operations: 3, kinds: ['adjust_stock'] }),
  });
  t.equal(res.status, 200);
  try {
    await loop.until(
      "B's change in the mirror",
      async () => (await loop.tdb.db.selectFrom('variants').select('id').where('connection_id', '=', other.id).execute()).length >= 1,
    );
  } catch (err) {
    const d = await sql`SELECT id, state, resource, object_id FROM webhook_deliveries WHERE connection_id = ${other.id}`.execute(
      loop.tdb.db,
    );
    const j =
      await sql`SELECT name, state, data, group_id, start_after, created_on, started_on FROM pgboss.job WHERE name = 'deliveries' AND state <> 'completed' ORDER BY created_on`.execute(
        loop.tdb.db,
      );
    const dp = await sql`SELECT * FROM drain_pairs`.execute(loop.tdb.db);
    const p = await sql`SELECT connection_id, resource, count(*) FROM pending_fetches GROUP BY 1, 2`.execute(loop.tdb.db);
    console.error(JSON.stringify({ d: d.rows, j: j.rows, p: p.rows, dp: dp.rows }, null, 1));
    console.error(
      JSON.stringify(
        await (await fetch(`${b.url}/__sandbox/deliveries?limit=20`, { headers: { Authorization: `Bearer ${b.adminToken}` } })).json(),
      ),
    );
    console.error(
      JSON.stringify(await (await fetch(`${b.url}/__sandbox/stats`, { headers: { Authorization: `Bearer ${b.adminToken}` } })).json()),
    );
    throw err;
  }
  const tookMs = Date.now() - started;
  const aBusy = await sql<{ pending: number; jobs: number; sweeping: number }>`SELECT
      (SELECT count(*)::int FROM pending_fetches WHERE connection_id = ${loop.connection.id}) AS pending,
      (SELECT count(*)::int FROM drain_pairs WHERE claimed_by IS NOT NULL AND connection_id = ${loop.connection.id}) AS jobs,
      (SELECT count(*)::int FROM pgboss.job WHERE name = 'reconcile' AND state = 'active') AS sweeping`.execute(loop.tdb.db);
  const busy = aBusy.rows[0]!;
  t.ok(
    busy.pending + busy.jobs + busy.sweeping > 0,
    `A still had work in flight when B's change landed (${JSON.stringify(busy)}, after ${tookMs} ms)`,
  );
});

t.test('webhook reads keep flowing while a sweep of the same connection runs in the same worker', async (t) => {
  const loop = await startLoop(t, { sandbox: { variants: 1500 } });
  await loop.admin('POST', 'faults', { responses: { latency_ms: 40 } });
  await requestSweep(loop.bosses[0]!, loop.connection.id, true);
  await loop.until(
    'the sweep under way',
    async () =>
      (
        await sql<{ n: number }>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'reconcile' AND state = 'active'`.execute(
          loop.tdb.db,
        )
      ).rows[0]!.n === 1,
  );
  const seen = new Set<number>();
  for (let round = 0; round < 8; round++) {
    const { performed } = await loop.admin('POST', 'activity', { operations: 5, kinds: ['adjust_stock'] });
    await loop.admin('POST', 'deliveries/flush');
    for (const p of performed) seen.add(p.id);
    await new Promise((r) => setTimeout(r, 150));
  }
  await loop.until(
    'every delivery read back',
    async () => {
      const p = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pending_fetches`.execute(loop.tdb.db);
      const d = await sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE state = 'queued'`.execute(loop.tdb.db);
      return p.rows[0]!.n === 0 && d.rows[0]!.n === 0;
    },
    40_000,
  );
  const fetched = await sql<{ n: number }>`SELECT count(*)::int AS n FROM sync_log WHERE action = 'fetch' AND outcome = 'ok'`.execute(
    loop.tdb.db,
  );
  t.ok(fetched.rows[0]!.n > 0, `drains read ${fetched.rows[0]!.n} batches while the sweep ran`);
});
