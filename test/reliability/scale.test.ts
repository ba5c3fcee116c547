// Scale-out: two receiver and three worker processes on one PostgreSQL, two connections (two sandboxes, one
// much busier than the other), sustained load under a tight rate limit. The service never answers 429, the
// quiet connection is served while the busy one is still loaded, and both mirrors converge.
import t from 'tap';
import { sql } from 'kysely';
import { watchRegressions } from '../support/mirror.ts';
import {
  ackedProcessed,
  converged,
  drainSandbox,
  duplicateDeliveries,
  startWorld,
  steadyLoad,
  unprocessedAcked,
  until,
  type Shop,
  type World,
} from './harness.ts';

async function pending(world: World, shop: Shop): Promise<number> {
  return (
    await sql<{ n: number }>`SELECT count(*)::int AS n FROM pending_fetches WHERE connection_id = ${shop.connection.id}`.execute(world.db)
  ).rows[0]!.n;
}

async function acked(world: World, shop: Shop): Promise<string[]> {
  const rows = await sql<{
    delivery_id: string;
  }>`SELECT delivery_id FROM webhook_deliveries WHERE connection_id = ${shop.connection.id}`.execute(world.db);
  const mine = new Set(rows.rows.map((r) => r.delivery_id));
  return [...world.proxy.acked].filter((id) => mine.has(id));
}

t.test('2 receivers, 3 workers, 2 connections under sustained load: no 429, no starvation, both mirrors converge', async (t) => {
  // 60 requests per 300 sandbox seconds, 3 real seconds at time scale 100: the budget is what limits. Sweeps
  // may not take the last BUDGET_RESERVE of a window (webhook reads may), so the reserve must stay below it.
  const world = await startWorld(t, { shops: 2, sandbox: { rateLimit: 60 } });
  const env = { BUDGET_RESERVE: 10 };
  const [busy, quiet] = world.shops as [Shop, Shop];
  const regressions = await watchRegressions(world.db);
  const receivers = await Promise.all([world.spawn('receiver', env), world.spawn('receiver', env)]);
  world.setReceivers(receivers);
  const workers = await Promise.all([world.spawn('worker', env), world.spawn('worker', env), world.spawn('worker', env)]);
  const stopBusy = steadyLoad(t, busy, 25);
  const stopQuiet = steadyLoad(t, quiet, 3);
  await until(
    'both connections receiving',
    async () =>
      ((await acked(world, busy)).length >= 150 && (await acked(world, quiet)).length >= 20) ||
      `${(await acked(world, busy)).length} / ${(await acked(world, quiet)).length}`,
    60_000,
    500,
  );

  // The quiet connection catches up completely while the busy one is still under load.
  await stopQuiet();
  await drainSandbox(quiet);
  const quietAcked = new Set(await acked(world, quiet));
  await until(
    'the quiet connection served while the busy one is loaded',
    async () => {
      const u = await unprocessedAcked(world.db, quietAcked);
      const p = await pending(world, quiet);
      return !u.absent.length && !u.notProcessed.length && p === 0 ? true : `${u.notProcessed.length} unprocessed, ${p} pending fetches`;
    },
    40_000,
    250,
  );
  const busyPending = await pending(world, busy);
  t.pass(
    `quiet connection: ${quietAcked.size} deliveries processed and every fetch drained while the busy one still had ${busyPending} pending`,
  );
  await until(
    'the quiet mirror to equal its sandbox without a sweep',
    async () => {
      const d = (await quiet.diffs()).filter((x) => x.resource === 'variants')[0]!;
      return d.wrong.length === 0 || `${d.wrong.length} variants differ`;
    },
    30_000,
    500,
  );
  t.pass('quiet connection: mirrored variants equal the sandbox while the busy one is loaded');

  await stopBusy();
  await drainSandbox(busy);
  await ackedProcessed(world.db, world.proxy.acked);
  t.pass(`${world.proxy.acked.size} deliveries acknowledged through 2 receivers, all processed`);
  t.equal(await duplicateDeliveries(world.db), 0, 'no delivery stored twice');
  await world.reconcile(env);
  await converged(world, 40_000);
  t.pass('both mirrors equal their sandboxes');
  t.same(await regressions(), [], 'no mirror regression');
  for (const shop of world.shops) {
    const s = await shop.admin('GET', 'stats');
    t.equal(s.rate_limited, 0, `${shop.name}: ${s.requests.total} requests, none answered 429`);
  }
  const budgets = await world.db.selectFrom('api_budgets').select(['connection_id', 'accounting_errors']).execute();
  t.same(
    budgets.map((b) => b.accounting_errors),
    [0, 0],
    'no budget accounting error',
  );
  for (const p of [...receivers, ...workers]) t.equal(p.child.exitCode, null, `${p.name} ${p.pid} ran throughout`);
  await Promise.all([...receivers, ...workers].map((p) => p.stop()));
});
