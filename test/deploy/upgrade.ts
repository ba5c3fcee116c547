// The rolling upgrade of docs/upgrades.md, under traffic: the previous release's receiver and worker take deliveries
// from two sandboxes with steady merchant activity and queued push operations, the new release's `migrate` runs under
// them, a new receiver and worker start, the load balancer moves to the new receiver and the old processes get
// SIGTERM. Then every delivery acknowledged before, during and after is stored once and processed, no answer the
// service saw was a 5xx, every push is confirmed once at the service, and a sweep finds the mirror equal to it.
// The previous release is the newest `v*` tag before HEAD (UPGRADE_FROM=<git ref> names another, UPGRADE_REPO the
// repository when this tree is an export); the new one is this tree. Run by `npm run test:deploy` (not by `npm test`: it takes a minute or two of both cores).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import t from 'tap';
import { ACTIVITY_KINDS } from '@commerce-sync/sandbox';
import { createDb, createPool } from '../../src/db/index.ts';
import { enqueueOperation } from '../../src/push/enqueue.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import {
  ackedProcessed,
  converged,
  drainSandbox,
  duplicateDeliveries,
  startWorld,
  steadyLoad,
  until,
  type Shop,
} from '../reliability/harness.ts';
import { emptyDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { watchRegressions } from '../support/mirror.ts';
import { spawnCli } from '../support/processes.ts';

const root = new URL('../../', import.meta.url).pathname;
// The repository the releases are tagged in: this tree, unless it is an export of one (scripts/release.sh).
const repo = process.env.UPGRADE_REPO ?? root;
const git = (...args: string[]) => spawnSync('git', args, { cwd: repo, encoding: 'utf8' });
const { log } = captureLogger('warn');

/** The newest release tag before HEAD (HEAD's own tag, if any, is the new release). */
function previousRelease(): string {
  const atHead = new Set(git('tag', '--points-at', 'HEAD', '--list', 'v*').stdout.split('\n').filter(Boolean));
  const tags = git('tag', '--merged', 'HEAD', '--list', 'v*', '--sort=-v:refname').stdout.split('\n').filter(Boolean);
  const tag = tags.find((tag) => !atHead.has(tag));
  if (!tag) throw new Error('no release tag before HEAD: name the previous release with UPGRADE_FROM=<git ref>');
  return tag;
}

/** The release's tree at `ref` in a folder of its own, with node_modules (this checkout's when the lock file is the same). */
function checkout(ref: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'cs-upgrade-from-'));
  const archive = spawnSync('sh', ['-c', `git -C "${repo}" archive "${ref}" | tar -x -C "${dir}"`], { encoding: 'utf8' });
  if (archive.status !== 0) throw new Error(`git archive ${ref}: ${archive.stderr}`);
  const sameLock = readFileSync(join(dir, 'package-lock.json'), 'utf8') === readFileSync(join(root, 'package-lock.json'), 'utf8');
  if (sameLock) symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  else {
    const ci = spawnSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], { cwd: dir, encoding: 'utf8' });
    if (ci.status !== 0) throw new Error(`npm ci for ${ref}: ${ci.stderr}`);
  }
  return dir;
}

interface Old {
  name: string;
  url: string;
  output(): string;
  exited: Promise<number>;
  stop(): Promise<number>;
}

/** `commerce-sync <args>` of the previous release; resolves once it listens (or at once when `listens` is false). */
async function spawnOld(dir: string, args: string[], env: Record<string, string | number>, listens = true): Promise<Old> {
  const node = existsSync(join(dir, 'node_modules/.bin/node')) ? join(dir, 'node_modules/.bin/node') : process.execPath;
  const child = spawn(node, [join(dir, 'src/cli.ts'), ...args], {
    cwd: dir,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_NO_WARNINGS: '1',
      ...Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)])),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    out += d;
  });
  let code: number | null = null;
  const exited = new Promise<number>((resolve) =>
    child.on('exit', (c, signal) => resolve((code = c ?? (signal === 'SIGKILL' ? 137 : 143)))),
  );
  t.teardown(() => {
    if (code === null) child.kill('SIGKILL');
  });
  const name = `old ${args[0]}`;
  if (listens) await until(`${name} to listen`, () => (code !== null ? `exited: ${out}` : /listening on http:\/\//.test(out)), 60_000);
  return {
    name,
    url: /listening on (http:\/\/[^\s)]+)/.exec(out)?.[1]?.replace(/\/$/, '') ?? '',
    output: () => out,
    exited,
    async stop() {
      if (code === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const c = await exited;
      clearTimeout(timer);
      return c;
    },
  };
}

t.test('a rolling upgrade under traffic loses nothing, answers no 5xx and does nothing twice', async (t) => {
  const from = process.env.UPGRADE_FROM ?? previousRelease();
  const t0 = Date.now();
  const phase = (what: string) => t.comment(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);
  const dir = checkout(from);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const version = await spawnOld(dir, ['--version'], {}, false);
  await version.exited;
  const said = version.output().trim();
  phase(`from ${from}: ${/^commerce-sync \d/.test(said) ? said : 'no --version in it'} (${dir})`);

  // The database as the previous release made it: its own migrate.
  const { url } = await emptyDatabase(t);
  const migrateOld = await spawnOld(dir, ['migrate'], { DATABASE_URL: url, LOG_LEVEL: 'warn' }, false);
  t.equal(await migrateOld.exited, 0, `${from}'s migrate made the database`, { output: migrateOld.output() });
  const pool = createPool(url, 10);
  const db = createDb(pool);
  t.teardown(() => db.destroy());

  const world = await startWorld(t, { shops: 2, database: { url, db } });
  const regressions = await watchRegressions(db);
  const env = world.env();
  const oldReceiver = await spawnOld(dir, ['receiver'], env);
  const oldWorker = await spawnOld(dir, ['worker'], env);
  world.proxy.targets.splice(0, world.proxy.targets.length, oldReceiver.url);
  const sweep = await spawnOld(dir, ['reconcile', '--full'], env, false);
  t.equal(await sweep.exited, 0, 'a first sweep by the previous release', { output: sweep.output() });
  phase(`${from}'s receiver and worker running, first sweep done`);

  // Pushes queued all through the upgrade: channel orders and stock counts, each to happen exactly once.
  const boss = await startBoss(url, log, { supervise: false, schedule: false, max: 2 });
  t.teardown(() => stopBoss(boss, false));
  const pushed: number[] = [];
  const push = async (shop: Shop, phase: string, n: number) => {
    const variants = (await shop.snapshot('variants')).filter(
      (v) => v.sku && v.status === 'active' && !v.composite && v.manage_stock !== false,
    );
    const company = (await shop.snapshot('companies')).find((c) => c.status === 'active')!;
    const currency = (await shop.snapshot('currencies'))[0]!.iso;
    const location = (await shop.snapshot('locations'))[0]!.id;
    for (let i = 0; i < n; i++) {
      const v = variants[(pushed.length * 7) % variants.length]!;
      pushed.push(
        (
          await enqueueOperation(
            { db, boss },
            'import-order',
            {
              channel: 'upgrade',
              channel_order_id: `${phase}-${i}`,
              customer: { company_id: company.id },
              currency,
              issued_at: '2026-11-21',
              lines: [{ sku: v.sku, quantity: '1' }],
            },
            shop.name,
          )
        ).id,
      );
      pushed.push(
        (
          await enqueueOperation(
            { db, boss },
            'stock-count',
            {
              counts: [{ sku: v.sku, location_id: location, quantity: String(100 + pushed.length) }],
              notes: `upgrade-${phase}-${i}`,
            },
            shop.name,
          )
        ).id,
      );
    }
  };
  const pushAll = async (phase: string, n: number) => {
    for (const shop of world.shops) await push(shop, `${shop.name}-${phase}`, n);
  };
  // No archived variants or disabled products meanwhile: an import naming one is rightly refused by the service.
  const kinds = ACTIVITY_KINDS.filter((k) => k !== 'archive_variant' && k !== 'toggle_product');
  const stops = world.shops.map((shop) => steadyLoad(t, shop, 5, kinds));
  const ackedAtLeast = (n: number, what: string) =>
    until(what, () => (world.proxy.acked.size >= n ? true : `${world.proxy.acked.size} acknowledged`), 60_000);

  await ackedAtLeast(40, 'deliveries flowing to the previous release');
  await pushAll('before', 2);
  phase(`${world.proxy.acked.size} acknowledged by ${from}`);

  // 1. The new release's migrate, under the old processes.
  const migrate = await spawnCli(t, 'migrate', ['migrate'], env, { ready: null });
  t.equal(await migrate.exited, 0, "the new release's migrate ran under the previous release's processes", { output: migrate.output() });
  await ackedAtLeast(world.proxy.acked.size + 20, 'deliveries after the migration');
  await pushAll('migrated', 2);
  phase('new migrate done');

  // 2. New processes beside the old; the load balancer sends to both.
  const receiver = await world.spawn('receiver');
  const worker = await world.spawn('worker');
  world.proxy.targets.splice(0, world.proxy.targets.length, oldReceiver.url, receiver.url);
  await ackedAtLeast(world.proxy.acked.size + 20, 'deliveries to old and new receivers');
  await pushAll('side-by-side', 2);
  phase('old and new side by side');

  // 3. The old receiver leaves the load balancer, then gets SIGTERM; the old worker gets SIGTERM while jobs run.
  world.setReceivers([receiver]);
  await new Promise((r) => setTimeout(r, 500));
  const [receiverCode, workerCode] = await Promise.all([oldReceiver.stop(), oldWorker.stop()]);
  t.equal(receiverCode, 0, `${from}'s receiver exited cleanly on SIGTERM`, { output: oldReceiver.output().slice(-2000) });
  t.equal(workerCode, 0, `${from}'s worker exited cleanly on SIGTERM`, { output: oldWorker.output().slice(-2000) });
  await pushAll('after', 2);
  await ackedAtLeast(world.proxy.acked.size + 30, 'deliveries to the new release alone');
  phase('old processes stopped');

  for (const stop of stops) await stop();
  for (const shop of world.shops) await drainSandbox(shop);
  await ackedProcessed(db, world.proxy.acked, { timeoutMs: 120_000 });
  const statuses = Object.fromEntries(world.proxy.statuses);
  t.pass(`${world.proxy.acked.size} deliveries acknowledged, all stored and processed; answers seen: ${JSON.stringify(statuses)}`);
  t.same(
    Object.keys(statuses).filter((s) => Number(s) >= 500),
    [],
    'no answer the service saw was a 5xx',
  );
  t.equal(await duplicateDeliveries(db), 0, 'no delivery stored twice');
  phase('every acknowledged delivery processed');

  await until(
    'every push operation settled',
    async () => {
      const ops = await db.selectFrom('push_operations').select(['id', 'state']).where('id', 'in', pushed).execute();
      const open = ops.filter((o) => o.state !== 'confirmed' && o.state !== 'failed');
      return open.length ? `${open.length} of ${ops.length} still ${[...new Set(open.map((o) => o.state))].join('/')}` : true;
    },
    90_000,
    500,
  );
  const ops = await db.selectFrom('push_operations').select(['id', 'kind', 'state', 'reason']).where('id', 'in', pushed).execute();
  t.equal(ops.length, pushed.length, 'every push operation is there');
  t.same(
    ops.filter((o) => o.state !== 'confirmed').map((o) => `${o.kind} ${o.id} ${o.state}: ${o.reason}`),
    [],
    `all ${ops.length} push operations confirmed`,
  );
  for (const shop of world.shops) {
    const orders = (await shop.snapshot('orders')).filter(
      (o) => typeof o.reference_number === 'string' && o.reference_number.startsWith(`${shop.name}-`),
    );
    const perReference = new Map<string, number>();
    for (const o of orders) perReference.set(o.reference_number, (perReference.get(o.reference_number) ?? 0) + 1);
    t.same(
      [...perReference].filter(([, n]) => n > 1),
      [],
      `${shop.name}: no channel order imported twice (${orders.length})`,
    );
    const adjustments = (await shop.snapshot('stock_adjustments')).filter(
      (a) => typeof a.notes === 'string' && a.notes.startsWith(`upgrade-${shop.name}-`),
    );
    const perNote = new Map<string, number>();
    for (const a of adjustments) perNote.set(a.notes, (perNote.get(a.notes) ?? 0) + 1);
    t.same(
      [...perNote].filter(([, n]) => n > 1),
      [],
      `${shop.name}: no stock count adjusted twice (${adjustments.length})`,
    );
    t.equal(
      perReference.size,
      ops.filter((o) => o.kind === 'import-order').length / world.shops.length,
      `${shop.name}: one order per import`,
    );
  }
  const failed = await sql<{
    name: string;
    n: number;
  }>`SELECT name, count(*)::int AS n FROM pgboss.job WHERE state = 'failed' GROUP BY name`.execute(db);
  t.same(failed.rows, [], 'no job failed for good (none in a dead letter)');

  await world.reconcile();
  await converged(world, 60_000);
  t.pass('one sweep after the upgrade finds the mirror equal to each sandbox');
  t.same(await regressions(), [], 'no mirror record ever moved back to an older updated_at');
  phase('converged');
  await receiver.stop();
  await worker.stop();
});
