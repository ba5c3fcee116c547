// Crash and restart under steady delivery load: kill -9 the receiver, a worker and the PostgreSQL server in
// turn, restart each, and check that every delivery acknowledged with a 2xx was stored and processed, that
// nothing happened twice (no delivery stored twice, no mirror record moved back to an older version), and
// that after one full sweep the mirror equals the sandbox.
import t from 'tap';
import { ACTIVITY_KINDS } from '@commerce-sync/sandbox';
import { enqueueOperation } from '../../src/push/enqueue.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { ownPostgres } from '../support/embedded.ts';
import { captureLogger } from '../support/log.ts';
import { watchRegressions } from '../support/mirror.ts';
import { ackedProcessed, converged, drainSandbox, duplicateDeliveries, startWorld, steadyLoad, until } from './harness.ts';

const { log } = captureLogger('warn');

t.test('kill -9 of receiver, worker and PostgreSQL under load: nothing acknowledged is lost, nothing happens twice', async (t) => {
  const t0 = Date.now();
  const phase = (what: string) => t.comment(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);
  // Processes reach PostgreSQL at one fixed address, as they would a managed database.
  const pg = await ownPostgres(t, log, 'reliability', { retry: { attempts: 20, delayMs: 500 }, proxied: true });
  const { url, db } = pg;

  const world = await startWorld(t, { database: { url, db } });
  const [shop] = world.shops;
  const regressions = await watchRegressions(db);

  const receiver = await world.spawn('receiver');
  world.setReceivers([receiver]);
  const workers = [await world.spawn('worker'), await world.spawn('worker')];
  phase('processes started');
  // A first sweep, so pushes find SKUs in the mirror.
  await world.reconcile();

  phase('first sweep done');
  // Outbound operations are pushed all through the kills: channel orders and stock counts.
  const boss = await startBoss(url, log, { supervise: false, schedule: false, max: 2 });
  t.teardown(() => stopBoss(boss, false));
  const variants = (await shop!.snapshot('variants')).filter(
    (v) => v.sku && v.status === 'active' && !v.composite && v.manage_stock !== false,
  );
  const company = (await shop!.snapshot('companies')).find((c) => c.status === 'active')!;
  const currency = (await shop!.snapshot('currencies'))[0]!.iso;
  const location = (await shop!.snapshot('locations'))[0]!.id;
  const pushed: number[] = [];
  const push = async (phase: string, n: number) => {
    for (let i = 0; i < n; i++) {
      const v = variants[(pushed.length * 7) % variants.length]!;
      pushed.push(
        (
          await enqueueOperation({ db, boss }, 'import-order', {
            channel: 'crash',
            channel_order_id: `${phase}-${i}`,
            customer: { company_id: company.id },
            currency,
            issued_at: '2026-11-21',
            lines: [{ sku: v.sku, quantity: '1' }],
          })
        ).id,
      );
      pushed.push(
        (
          await enqueueOperation({ db, boss }, 'stock-count', {
            counts: [{ sku: v.sku, location_id: location, quantity: String(100 + pushed.length) }],
            notes: `crash-${phase}-${i}`,
          })
        ).id,
      );
    }
  };
  // No archived variants or disabled products meanwhile: an import naming one is rightly refused by the service,
  // which would make the count of confirmed imports depend on the activity's dice rather than on the crashes.
  const stopLoad = steadyLoad(
    t,
    shop!,
    12,
    ACTIVITY_KINDS.filter((k) => k !== 'archive_variant' && k !== 'toggle_product'),
  );
  const ackedAtLeast = (n: number, what: string) =>
    until(what, () => (world.proxy.acked.size >= n ? true : `${world.proxy.acked.size} acknowledged`), 40_000);

  await ackedAtLeast(30, 'deliveries flowing');
  await push('receiver', 3);

  phase('deliveries flowing');
  // 1. The receiver, mid-stream. Deliveries sent meanwhile fail (502) and the service retries them.
  receiver.kill('SIGKILL');
  await receiver.exited;
  await new Promise((r) => setTimeout(r, 1000));
  const receiver2 = await world.spawn('receiver');
  world.setReceivers([receiver2]);
  await ackedAtLeast(world.proxy.acked.size + 25, 'deliveries after the receiver restart');

  phase('receiver restarted');
  // 2. A worker, while it holds jobs.
  await push('worker', 3);
  workers[0]!.kill('SIGKILL');
  await workers[0]!.exited;
  workers[0] = await world.spawn('worker');
  await ackedAtLeast(world.proxy.acked.size + 25, 'deliveries after the worker restart');

  phase('worker restarted');
  // 3. PostgreSQL itself: SIGKILL on the postmaster, every connection gone; then a restart (crash recovery).
  pg.kill();
  await new Promise((r) => setTimeout(r, 1500));
  await pg.restart();
  await ackedAtLeast(world.proxy.acked.size + 25, 'deliveries after the PostgreSQL restart');
  await push('after', 2);

  phase('PostgreSQL restarted');
  await stopLoad();
  await drainSandbox(shop!);
  for (const p of [receiver2, ...workers])
    t.equal(p.child.exitCode, null, `${p.name} ${p.pid} survived the database restart`, { output: p.output().slice(-3000) });

  // Every delivery that got a 2xx is stored and processed.
  await ackedProcessed(db, world.proxy.acked, { timeoutMs: 90_000 });
  t.pass(
    `${world.proxy.acked.size} deliveries acknowledged, all stored and processed; answers seen: ${JSON.stringify(Object.fromEntries(world.proxy.statuses))}`,
  );
  t.ok(world.proxy.statuses.get('502'), 'some deliveries did fail while a process was down (the kills hit real traffic)');
  t.equal(await duplicateDeliveries(db), 0, 'no delivery stored twice');

  phase('all acknowledged deliveries processed');
  // One full sweep, and the mirror equals the sandbox.
  await world.reconcile();
  await converged(world, 30_000);
  t.pass('mirror equals the sandbox after one sweep');
  t.same(await regressions(), [], 'no mirror record ever moved back to an older updated_at');

  phase('converged');
  // Every push done exactly once: one order per channel order, one adjustment per counted location.
  const settled = await until(
    'every push operation settled',
    async () => {
      const ops = await db.selectFrom('push_operations').select(['id', 'state']).where('id', 'in', pushed).execute();
      const open = ops.filter((o) => o.state !== 'confirmed' && o.state !== 'failed');
      return open.length ? `${open.length} of ${ops.length} still ${[...new Set(open.map((o) => o.state))].join('/')}` : true;
    },
    60_000,
    500,
  ).then(
    () => true,
    (err: Error) => {
      t.comment(err.message);
      return false;
    },
  );
  t.ok(
    settled,
    'every push operation confirmed or failed within a minute of the load ending',
    settled
      ? {}
      : {
          todo: 'BUG: a push job held by the killed worker waits for its pg-boss expiry (15 min): the queues have no heartbeat (see report)',
        },
  );
  const ops = await db
    .selectFrom('push_operations')
    .select(['id', 'kind', 'state', 'reason', 'result', 'input'])
    .where('id', 'in', pushed)
    .execute();
  t.same(
    ops.filter((o) => o.state === 'failed').map((o) => `${o.kind} ${o.id}: ${o.reason}`),
    [],
    'no push failed',
  );
  const orders = (await shop!.snapshot('orders')).filter(
    (o) => typeof o.reference_number === 'string' && /^(receiver|worker|after)-\d+$/.test(o.reference_number),
  );
  const perReference = new Map<string, number>();
  for (const o of orders) perReference.set(o.reference_number, (perReference.get(o.reference_number) ?? 0) + 1);
  t.same(
    [...perReference].filter(([, n]) => n > 1),
    [],
    `no channel order imported twice (${orders.length} orders)`,
  );
  t.equal(
    perReference.size,
    ops.filter((o) => o.kind === 'import-order' && o.state === 'confirmed').length,
    'one order per confirmed import',
  );
  const adjustments = (await shop!.snapshot('stock_adjustments')).filter(
    (a) => typeof a.notes === 'string' && a.notes.startsWith('crash-'),
  );
  const perNote = new Map<string, number>();
  for (const a of adjustments) perNote.set(a.notes, (perNote.get(a.notes) ?? 0) + 1);
  t.same(
    [...perNote].filter(([, n]) => n > 1),
    [],
    `no stock count adjusted twice (${adjustments.length} adjustments)`,
  );
  for (const p of [receiver2, ...workers]) await p.stop();
});
