// Sync benchmarks against the sandbox at its real rate limit (300 requests per 300 s), under a time scale.
//   node_modules/.bin/node bench/sync/run.ts [burst] [sweep] [loss]      (default: all three)
// Environment: TIME_SCALE (default 100: a 300 s window lasts 3 s), SWEEP_VARIANTS (default 100000),
// BURST_CHANGES (10000), BURST_VARIANTS (2000), DATABASE_URL (default: an embedded PostgreSQL in a temp dir).
// Prints figures and the machine; asserts nothing.
import os from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { sql } from 'kysely';
import { createDb, createPool } from '../../src/db/index.ts';
import { startEmbedded } from '../../src/db/embedded.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/log.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { resources } from '../../src/sync/resources.ts';
import { runSweep } from '../../src/sync/sweep.ts';
import { startLoopOn, type Loop, type LoopOptions } from '../../test/sync/harness.ts';
import { canon } from '../../test/support/mirror.ts';

const TIME_SCALE = Number(process.env.TIME_SCALE ?? 100);
const BURST_CHANGES = Number(process.env.BURST_CHANGES ?? 10_000);
const BURST_VARIANTS = Number(process.env.BURST_VARIANTS ?? 2_000);
const SWEEP_VARIANTS = Number(process.env.SWEEP_VARIANTS ?? 100_000);
const which = new Set(process.argv.slice(2).length ? process.argv.slice(2) : ['burst', 'sweep', 'loss']);
const log = createLogger('warn', { destination: process.stderr, pretty: false });

console.log(
  `machine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`,
);
console.log(`sandbox: rate limit 300 per 300 s, time scale ${TIME_SCALE} (a window lasts ${(300 / TIME_SCALE).toFixed(1)} real s)`);

// One PostgreSQL for the run; a fresh migrated database per scenario.
let adminUrl = process.env.DATABASE_URL ?? '';
let stopPg = async () => {};
let dataDir: string | undefined;
if (!adminUrl) {
  dataDir = await mkdtemp(join(os.tmpdir(), 'cs-bench-sync-'));
  const e = await startEmbedded(dataDir, log, 'postgres');
  adminUrl = e.adminUrl;
  stopPg = e.stop;
}
const urlOf = (name: string) => {
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
};

async function scenario<T>(name: string, opts: LoopOptions, body: (loop: Loop) => Promise<T>): Promise<T> {
  const db = `cs_bench_${name}_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${db}`);
  await migrate(urlOf(db));
  await stopBoss(await startBoss(urlOf(db), log, { supervise: false, schedule: false, max: 2 }), false);
  const pool = createPool(urlOf(db), 20);
  const teardowns: (() => unknown)[] = [];
  try {
    const loop = await startLoopOn({ teardown: (fn) => teardowns.push(fn) }, { url: urlOf(db), pool, db: createDb(pool), name: db }, opts);
    return await body(loop);
  } finally {
    for (const fn of teardowns.reverse()) await fn();
    await pool.end().catch(() => {});
    await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => {});
    await admin.end();
  }
}

async function apiRequests(loop: Loop): Promise<number> {
  return (await loop.admin('GET', 'stats')).requests.total;
}

const sweepNow = (loop: Loop, full: boolean) =>
  runSweep({ db: loop.tdb.db, boss: loop.bosses[0]!, config: loop.config, log: loop.logs.log }, loop.client, { full, wait: true });

async function quiet(loop: Loop): Promise<void> {
  await loop.admin('POST', 'deliveries/flush');
  await loop.until('deliveries delivered', async () => (await loop.admin('GET', 'stats')).deliveries.pending === 0, 600_000);
  await loop.until(
    'the workers idle',
    async () => {
      const r = await sql<{ p: number; j: number }>`SELECT (SELECT count(*)::int FROM pending_fetches) AS p,
      (SELECT count(*)::int FROM pgboss.job WHERE name = 'deliveries' AND state IN ('created', 'active', 'retry')
        AND start_after < now() + interval '3 seconds') + (SELECT count(*)::int FROM drain_pairs WHERE claimed_by IS NOT NULL) AS j`.execute(
        loop.tdb.db,
      );
      return r.rows[0]!.p === 0 && r.rows[0]!.j === 0;
    },
    600_000,
  );
}

/** Records of every mirrored resource that differ from the sandbox snapshot (wrong or missing). */
async function wrongRecords(loop: Loop): Promise<number> {
  let n = 0;
  for (const spec of Object.values(resources)) {
    const snap: any[] = (await loop.admin('GET', `snapshot?resource=${spec.key}`))[spec.key] ?? [];
    const rows = await sql<{
      id: number;
      raw: any;
    }>`SELECT id, raw FROM ${sql.raw(spec.table)} WHERE connection_id = ${loop.connection.id}`.execute(loop.tdb.db);
    const mine = new Map(rows.rows.map((r) => [Number(r.id), r.raw]));
    const key = (r: any) => JSON.stringify(canon(r), (_k, v) => (typeof v === 'number' ? String(v) : v));
    for (const r of snap) if (!mine.has(r.id) || key(mine.get(r.id)) !== key(r)) n++;
  }
  return n;
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

if (which.has('burst')) {
  await scenario('burst', { sandbox: { variants: BURST_VARIANTS, timeScale: TIME_SCALE } }, async (loop) => {
    await sweepNow(loop, true);
    const before = await apiRequests(loop);
    const routesBefore = (await loop.admin('GET', 'stats')).requests.by_route as Record<string, number>;
    const started = Date.now();
    await loop.admin('POST', 'activity', { operations: BURST_CHANGES, kinds: ['adjust_stock'] });
    const lastChange = Date.now();
    // Poll once a second: comparing 2,000 variants is work that would compete with the workers.
    let done = 0;
    for (const end = Date.now() + 900_000; Date.now() < end; await new Promise((r) => setTimeout(r, 1000))) {
      const d = await loop.variantDiff();
      if (d.wrong.length === 0 && d.missing.length === 0) {
        done = Date.now();
        break;
      }
    }
    if (!done) {
      const d = await loop.variantDiff();
      const errors = await sql<{ at: Date; resource: string; error: string }>`SELECT at, resource, error FROM sync_log
        WHERE outcome = 'error' ORDER BY id DESC LIMIT 5`.execute(loop.tdb.db);
      console.log(`  not converged: ${d.wrong.length} wrong (${d.wrong.slice(0, 10).join(', ')}), ${d.missing.length} missing`);
      for (const e of errors.rows) console.log(`  error ${e.at.toISOString()} ${e.resource}: ${e.error}`);
      console.log(`  worker logs: ${JSON.stringify(loop.logs.lines().slice(-5))}`);
      throw new Error('the mirror did not converge in 15 minutes');
    }
    const span = (
      await sql<{ first: Date; last: Date }>`SELECT min(received_at) AS first, max(received_at) AS last FROM webhook_deliveries`.execute(
        loop.tdb.db,
      )
    ).rows[0]!;
    // Stock tiers read first, so the variants can converge while adjustments are still pending: count every read
    // the burst causes, up to the point where nothing is left to read.
    await quiet(loop);
    const requests = (await apiRequests(loop)) - before;
    const distinct = (
      await sql<{ n: number }>`SELECT count(DISTINCT object_id)::int AS n FROM webhook_deliveries WHERE resource = 'variant'`.execute(
        loop.tdb.db,
      )
    ).rows[0]!.n;
    const deliveries = (await sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_deliveries`.execute(loop.tdb.db)).rows[0]!.n;
    const floorReads = Math.ceil(distinct / 250);
    // Every record the deliveries name is read at least once: per resource, ceil(distinct / 250).
    const named = (
      await sql<{ resource: string; n: number }>`SELECT resource, count(DISTINCT object_id)::int AS n FROM webhook_deliveries
        WHERE state = 'processed' GROUP BY resource ORDER BY resource`.execute(loop.tdb.db)
    ).rows;
    const floorAll = named.reduce((sum, r) => sum + Math.ceil(r.n / 250), 0);
    const routesAfter = (await loop.admin('GET', 'stats')).requests.by_route as Record<string, number>;
    const byRoute = Object.entries(routesAfter)
      .map(([r, n]) => [r, n - (routesBefore[r] ?? 0)] as const)
      .filter(([, n]) => n > 0)
      .sort((a, b) => b[1] - a[1]);
    console.log(
      `\nburst: ${BURST_CHANGES} stock changes over ${BURST_VARIANTS} variants (${distinct} distinct variants changed, ${deliveries} deliveries stored)`,
    );
    console.log(
      `  API requests: ${requests} -> ${(requests / BURST_CHANGES).toFixed(4)} per changed record (target <= 0.01; one GET per delivery = 1.0); ` +
        `${(requests / distinct).toFixed(4)} per distinct variant`,
    );
    console.log(`  requests by route: ${byRoute.map(([r, n]) => `${r} ${n}`).join(', ')}`);
    // Each read of the burst: when (after the first change), how many ids it asked for, how many it skipped.
    const reads = (
      await sql<{ resource: string; at: Date; ids: number; skipped: number }>`SELECT resource, at, (detail->>'ids')::int AS ids,
        coalesce((detail->>'skipped')::int, 0) AS skipped FROM sync_log
        WHERE action = 'fetch' AND at >= ${new Date(started)} ORDER BY at`.execute(loop.tdb.db)
    ).rows;
    for (const resource of [...new Set(reads.map((r) => r.resource))])
      console.log(
        `  ${resource} reads (s after the first change: ids read +skipped): ` +
          reads
            .filter((r) => r.resource === resource)
            .map((r) => `${((new Date(r.at).getTime() - started) / 1000).toFixed(1)}:${r.ids}${r.skipped ? `+${r.skipped}` : ''}`)
            .join(' '),
      );
    console.log(
      `  records the deliveries name: ${named.map((r) => `${r.resource} ${r.n}`).join(', ')}; reading each once, 250 a request: ` +
        `${floorAll} requests (${(requests / floorAll).toFixed(2)} x that floor; ${(requests / floorReads).toFixed(2)} x the variants-only floor ${floorReads})`,
    );
    console.log(
      `  changes made in ${secs(lastChange - started)}; time from the last change until the mirror equals the sandbox: ${secs(done - lastChange)} ` +
        `(polled each second)`,
    );
    console.log(
      `  of which delivery: the sandbox delivered and the receiver stored the deliveries over ${secs(new Date(span.last).getTime() - new Date(span.first).getTime())}, ` +
        `the last ${secs(new Date(span.last).getTime() - lastChange)} after the last change; mirror equal ${secs(done - new Date(span.last).getTime())} after the last delivery was stored`,
    );
    console.log(
      `  rate-limit floor: ${floorReads} reads (ceil(${distinct}/250)) at 1 request per sandbox second = ${floorReads} sandbox s = ` +
        `${secs((floorReads * 1000) / TIME_SCALE)} real (0 while the window still has budget); the rest is delivery and database time`,
    );
  });
}

if (which.has('sweep')) {
  await scenario('sweep', { sandbox: { variants: SWEEP_VARIANTS, timeScale: TIME_SCALE }, workers: 1 }, async (loop) => {
    const before = await apiRequests(loop);
    const started = Date.now();
    const r = await sweepNow(loop, true);
    const ms = Date.now() - started;
    const requests = (await apiRequests(loop)) - before;
    const stats = await loop.admin('GET', 'stats');
    const variants = (await sql<{ n: number }>`SELECT count(*)::int AS n FROM variants`.execute(loop.tdb.db)).rows[0]!.n;
    const variantReads = stats.requests.by_route['GET /variants'] ?? 0;
    console.log(
      `\nfull sweep: ${SWEEP_VARIANTS} variants in the sandbox, ${variants} in the mirror after the sweep (${r.records} records of all resources)`,
    );
    console.log(
      `  API requests: ${requests}; GET /variants: ${variantReads} (target ceil(N/250) + constant = ${Math.ceil(SWEEP_VARIANTS / 250)} + c, here c = ` +
        `${variantReads - Math.ceil(SWEEP_VARIANTS / 250)}: the archived pass)`,
    );
    const routes = Object.entries(stats.requests.by_route as Record<string, number>)
      .filter(([r]) => r.startsWith('GET ') && r !== 'GET /variants')
      .sort((a, b) => b[1] - a[1]);
    console.log(
      `  the other ${requests - variantReads} requests read the rest of the account, which the sandbox grows with N: ` +
        routes
          .slice(0, 6)
          .map(([r, n]) => `${r} ${n}`)
          .join(', ') +
        (routes.length > 6 ? `, and ${routes.length - 6} more routes` : ''),
    );
    console.log(
      `  time: ${secs(ms)} real; rate-limit floor ${Math.max(0, requests - 300)} sandbox s beyond the first window = ${secs((Math.max(0, requests - 300) * 1000) / TIME_SCALE)} real`,
    );
    console.log(`  429 answers: ${stats.rate_limited}`);
    // Steady state: the same sweep again finds nothing to write.
    const before2 = await apiRequests(loop);
    const started2 = Date.now();
    const again = await sweepNow(loop, true);
    console.log(
      `  again (steady state): ${(await apiRequests(loop)) - before2} requests, drift ${again.drift}, ${secs(Date.now() - started2)} real ` +
        `(the first sweep also wrote ${r.channelChanges} first channel quantities, their sync-log entries and channel-stock jobs)`,
    );
  });
}

if (which.has('loss')) {
  await scenario('loss', { sandbox: { variants: BURST_VARIANTS, timeScale: TIME_SCALE } }, async (loop) => {
    await sweepNow(loop, true);
    await loop.admin('POST', 'faults', { deliveries: { drop: 0.2, duplicate: 0.05, reorder: 0.05 } });
    const ops = 2000;
    await loop.admin('POST', 'activity', { operations: ops });
    await quiet(loop);
    const wrongBefore = await wrongRecords(loop);
    const started = Date.now();
    const r = await sweepNow(loop, false);
    const ms = Date.now() - started;
    const wrongAfter = await wrongRecords(loop);
    console.log(`\nloss: ${ops} merchant operations (all kinds), deliveries 20% dropped, 5% duplicated, 5% reordered`);
    console.log(
      `  records wrong before the sweep: ${wrongBefore}; after one incremental sweep: ${wrongAfter} (target 0); ` +
        `the sweep changed ${r.drift + r.unannounced + r.explained} records in ${secs(ms)} (drift ${r.drift}, ` +
        `no event ${r.unannounced}, explained ${r.explained}: src/sync/drift.ts)`,
    );
  });
}

await stopPg();
if (dataDir) await rm(dataDir, { recursive: true, force: true });
