// Many accounts on one deployment: N sandbox accounts (each its own budget of 300 requests / 300 s, its own
// webhooks), one connection each, one receiver and one worker process. First every account idles (the cost of
// an idle connection: worker and PostgreSQL CPU divided by N), then each sees a low rate of merchant activity
// (the stock lag per connection). Prints, per N: CPU while idle and while active, p95 stock lag per connection
// (median and worst), the database size.
//
//   node_modules/.bin/node bench/accounts/run.ts [--accounts 10,100,500] [--rate 0.05 | 0.05,0.05,0.01] [--idle-minutes 3]
//       [--minutes 5] [--variants 20] [--profile spec|documented] [--workers 1|1,2] [--fresh-plans] [--cpu-prof DIR] [--pg-sample]
//       [--pg-statements]
//       [--worker-env KEY=VALUE ...] [--baseline REF] [--explain-ms MS]
//
// --workers 1,2 measures each N with one worker process, then starts a second one and measures again (the same
// accounts and database): the work spreads when each worker's CPU about halves.
// Sweep plans: an account's sweeps come less often after each that found nothing (up to
// RECONCILE_MAX_INTERVAL_MINUTES, an hour), so the idle cost of a deployment that has run a while is not the first
// minutes'. After the first sweeps the benchmark sets every plan as an hour of quiet sweeps would have left it (the
// longest interval, due times spread evenly over it); --fresh-plans measures the first minutes instead.
//
// --pg-sample samples pg_stat_activity ten times a second during the active phase and prints the statements
// PostgreSQL was busy with, by share of the samples (a sampling profile of the database).
// --pg-statements loads pg_stat_statements into the database and prints, for the active phase, the statements by
// their total execution time per merchant operation, with their calls per operation (where PostgreSQL's time per
// operation goes; execution time is wall time in the server, so a statement that waited on a lock counts its wait).
// It also prints, per table, the rows inserted, updated and deleted per operation and autovacuum's runs (where
// the rows of an operation go, and what vacuum follows them).
// --baseline REF runs the same arguments first on REF (a worktree of that commit), then on this tree, and prints
// both rows and the ratios (bench/accounts/baseline.ts).
// --explain-ms MS logs the plan of every statement slower than MS (auto_explain with ANALYZE and BUFFERS, triggers
// and nested statements; an embedded server only) and keeps the server's log, named at the end.
// --cpu-prof DIR writes a V8 CPU profile of the worker process into DIR when it stops (open it in Chrome's
// DevTools, or summarise it with bench/accounts/profile.ts).
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { StockLag } from '../freshness/lag.ts';
import { HEAD, rowLine, runWithBaseline, statementsLine } from './baseline.ts';
import { cpuSeconds, percentile, postgresCpuSeconds, settled, startWorld, takeMoves, type World } from '../freshness/world.ts';

const { values: args } = parseArgs({
  options: {
    accounts: { type: 'string', default: '10,100,500' },
    rate: { type: 'string', default: '0.05' },
    'idle-minutes': { type: 'string', default: '3' },
    minutes: { type: 'string', default: '5' },
    variants: { type: 'string', default: '20' },
    profile: { type: 'string' },
    'cpu-prof': { type: 'string' },
    'pg-sample': { type: 'boolean', default: false },
    'pg-statements': { type: 'boolean', default: false },
    workers: { type: 'string', default: '1' },
    'fresh-plans': { type: 'boolean', default: false },
    'worker-env': { type: 'string', multiple: true, default: [] },
    baseline: { type: 'string' },
    'explain-ms': { type: 'string' },
  },
});
if (args.baseline) {
  // Everything but --baseline goes to both runs (bench/accounts/baseline.ts).
  const argv = process.argv.slice(2);
  const at = argv.findIndex((a) => a === '--baseline' || a.startsWith('--baseline='));
  await runWithBaseline(
    args.baseline,
    argv.filter((_, i) => i !== at && !(i === at + 1 && argv[at] === '--baseline')),
  );
  process.exit(0);
}
// --worker-env KEY=VALUE (repeatable): settings of the worker processes, e.g. WORKER_CONCURRENCY=8.
const workerSettings = Object.fromEntries(
  args['worker-env']!.map((kv) => {
    const at = kv.indexOf('=');
    if (at < 1) throw new Error(`--worker-env: KEY=VALUE, not ${JSON.stringify(kv)}`);
    return [kv.slice(0, at), kv.slice(at + 1)];
  }),
);
const workerCounts = args.workers!.split(',').map(Number);
if (workerCounts.some((w) => !Number.isInteger(w) || w < 1) || workerCounts.some((w, i) => i > 0 && w <= workerCounts[i - 1]!))
  throw new Error('--workers: increasing whole numbers, e.g. 1,2');
const counts = args.accounts!.split(',').map(Number);
// One rate for every N, or one per N (--accounts 500,5000 --rate 0.05,0.01).
const rates = args.rate!.split(',').map(Number);
if (rates.length !== 1 && rates.length !== counts.length) throw new Error('--rate: one value, or one per --accounts value');
const rateOf = (n: number) => rates[rates.length === 1 ? 0 : counts.indexOf(n)]!;
const idleMinutes = Number(args['idle-minutes']),
  minutes = Number(args.minutes);
const log = createLogger('warn', { destination: process.stderr, pretty: false });
const sec = (ms: number) => (Number.isFinite(ms) ? (ms / 1000).toFixed(1) : '-');

console.log(
  `accounts: ${counts.join(', ')} connections, ${rates.join(', ')} operations/s each for ${minutes} min after ${idleMinutes} min idle, ` +
    `${args.variants} variants each, 300 requests / 300 s per account${args.profile ? `, profile ${args.profile}` : ''}` +
    (args['worker-env']!.length ? `, worker ${args['worker-env']!.join(' ')}` : ''),
);
console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(1)} GB, node ${process.version}`);

/**
 * CPU % of one core used by the worker, the receiver and PostgreSQL over `ms` of wall time while `during` runs; and
 * by this process (the sandboxes and the load), which shares the two cores: beside the rest it tells whether the
 * machine itself was the limit.
 */
async function measureCpu(
  world: World,
  during: Promise<void>,
): Promise<{ worker: number; receiver: number; pg: number | null; bench: number; ms: number }> {
  const t0 = Date.now();
  const b0 = process.cpuUsage();
  const workers = () => [world.worker, ...world.moreWorkers].reduce((sum, w) => sum + cpuSeconds(w.pid), 0);
  const w0 = workers(),
    r0 = cpuSeconds(world.receiver.pid),
    p0 = postgresCpuSeconds(world.database.postmaster);
  await during;
  const ms = Date.now() - t0;
  const w1 = workers(),
    r1 = cpuSeconds(world.receiver.pid),
    p1 = postgresCpuSeconds(world.database.postmaster);
  const b1 = process.cpuUsage(b0);
  const pct = (a: number, b: number) => (100 * (b - a)) / (ms / 1000);
  const bench = pct(0, (b1.user + b1.system) / 1e6);
  return { worker: pct(w0, w1), receiver: pct(r0, r1), pg: p0 === null || p1 === null ? null : pct(p0, p1), bench, ms };
}

const rows: string[][] = [];
const idleTotals: [number, number][] = [];
const config = loadConfig({ DATABASE_URL: 'postgres://unused', LOG_LEVEL: 'silent' });

/** Every plan as an hour of quiet sweeps leaves it: the longest interval, due times spread evenly over it. */
async function steadyPlans(world: World): Promise<void> {
  const max = config.RECONCILE_MAX_INTERVAL_MINUTES;
  await sql`INSERT INTO sweep_plans (connection_id, interval_minutes, due_at, quiet_sweeps)
    SELECT id, ${max}, now() + random() * make_interval(mins => ${max}), 4 FROM connections WHERE status = 'active'
    ON CONFLICT (connection_id) DO UPDATE SET interval_minutes = excluded.interval_minutes, due_at = excluded.due_at,
      quiet_sweeps = excluded.quiet_sweeps, requested_at = now() - interval '1 second', swept_at = now()`.execute(world.db);
}

/**
 * CPU seconds of PostgreSQL's processes by kind: backends by application_name (pg-boss's are 'pgboss', ours have
 * none), the others by backend_type; `total` includes processes that exited (autovacuum workers, closed connections).
 */
async function postgresCpuByKind(world: World): Promise<{ total: number; pids: Map<number, { kind: string; cpu: number }> }> {
  const r = await sql<{ pid: number; kind: string }>`SELECT pid, CASE WHEN backend_type = 'client backend'
      THEN 'backend ' || coalesce(nullif(application_name, ''), '(ours)') ELSE backend_type END AS kind
    FROM pg_stat_activity WHERE pid <> pg_backend_pid()`.execute(world.db);
  return {
    total: postgresCpuSeconds(world.database.postmaster) ?? 0,
    pids: new Map(r.rows.map((x) => [x.pid, { kind: x.kind, cpu: cpuSeconds(x.pid) }])),
  };
}

/** Rows written per table so far, and autovacuum's and autoanalyze's runs (pg_stat_user_tables, pgboss included). */
async function tableWrites(world: World): Promise<Map<string, number[]>> {
  const r = await sql<{ t: string; v: string[] }>`SELECT schemaname || '.' || relname AS t,
      ARRAY[n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del, autovacuum_count, autoanalyze_count]::text[] AS v
    FROM pg_stat_user_tables`.execute(world.db);
  return new Map(r.rows.map((x) => [x.t, x.v.map(Number)]));
}

/**
 * Where the rows of a merchant operation go: per table, rows inserted, updated (of them HOT) and deleted per
 * operation, and the autovacuum and autoanalyze runs of the phase. The tables writing most first.
 */
async function printTableWrites(world: World, label: string, operations: number, before: Map<string, number[]>): Promise<void> {
  // The statistics reach the shared counters within a second of each transaction's end.
  await new Promise((r) => setTimeout(r, 1500));
  const after = await tableWrites(world);
  // Row versions written: inserted, updated and deleted.
  const written = (d: number[]) => d[0]! + d[1]! + d[3]!;
  const rows = [...after]
    .map(([t, v]) => [t, v.map((x, i) => x - (before.get(t)?.[i] ?? 0))] as const)
    .filter(([, d]) => d.some((x) => x > 0))
    .sort((a, b) => written(b[1]) - written(a[1]));
  const per = (x: number) => (x / Math.max(operations, 1)).toFixed(2).padStart(6);
  const total = rows.reduce((s, [, d]) => s + written(d), 0);
  console.log(
    `  ${label}: rows written per operation, ${per(total).trim()} in all (inserted, updated, of them HOT, deleted; autovacuum and autoanalyze runs in the phase):`,
  );
  for (const [t, d] of rows.slice(0, 20))
    console.log(
      `    ${per(d[0]!)} ${per(d[1]!)} ${per(d[2]!)} ${per(d[3]!)}  ${String(d[4]).padStart(3)} ${String(d[5]).padStart(3)}  ${t}`,
    );
}

/**
 * The active phase's statements by total execution and planning time per merchant operation, and PostgreSQL's CPU
 * by kind of process (--pg-statements).
 */
async function printStatements(
  world: World,
  label: string,
  operations: number,
  cpu0: Awaited<ReturnType<typeof postgresCpuByKind>>,
  unit = 'operation',
): Promise<void> {
  const per = (n: number) => (operations ? n / operations : 0);
  const cpu1 = await postgresCpuByKind(world);
  const byKind = new Map<string, number>();
  // A process alive at both ends counts its difference; one started meanwhile all of its CPU.
  for (const [pid, { kind, cpu }] of cpu1.pids) byKind.set(kind, (byKind.get(kind) ?? 0) + cpu - (cpu0.pids.get(pid)?.cpu ?? 0));
  const live = [...byKind.values()].reduce((s, x) => s + x, 0);
  byKind.set('exited meanwhile (autovacuum workers, closed connections)', cpu1.total - cpu0.total - live);
  console.log(
    `  ${label}: PostgreSQL CPU ms per ${unit} by process: ${[...byKind]
      .sort((a, b) => b[1] - a[1])
      .map(([k, s]) => `${k} ${per(s * 1000).toFixed(2)}`)
      .join(', ')}`,
  );
  const r = await sql<{ query: string; calls: string; ms: number; plan: number }>`SELECT query, calls::text, total_exec_time AS ms,
      total_plan_time AS plan FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
    ORDER BY total_exec_time + total_plan_time DESC`.execute(world.db);
  const sum = (f: (x: (typeof r.rows)[number]) => number) => r.rows.reduce((s, x) => s + f(x), 0);
  console.log(
    statementsLine(label, unit, {
      execMs: per(sum((x) => x.ms)),
      planMs: per(sum((x) => x.plan)),
      statements: r.rows.length,
      calls: per(sum((x) => Number(x.calls))),
    }),
  );
  const line = (x: (typeof r.rows)[number]) =>
    console.log(
      `    ${per(x.ms).toFixed(3).padStart(7)} ${per(x.plan).toFixed(3).padStart(6)} ${per(Number(x.calls)).toFixed(2).padStart(6)} ` +
        `${(x.ms / Number(x.calls)).toFixed(3).padStart(7)}  ${x.query.replace(/\s+/g, ' ').trim().slice(0, 140)}`,
    );
  const largest = r.rows.slice(0, 30);
  largest.forEach(line);
  // Each statement costs its round trip and protocol besides its execution: the most frequent of the rest too.
  const frequent = r.rows
    .slice(30)
    .filter((x) => per(Number(x.calls)) >= 0.5)
    .sort((a, b) => Number(b.calls) - Number(a.calls));
  if (frequent.length) {
    console.log(`  ${label}: and of the rest, those run at least every other operation (same columns):`);
    frequent.forEach(line);
  }
}

/**
 * One measure of a running world: idle, then merchant activity; a row of the table. `cursors`: per connection, the
 * last stock move taken, kept across the measures of a world: a second measure that started from the first move
 * again timed the first measure's moves from when they happened to the mirror's latest write of their row, minutes
 * later (the "two-worker tail" of earlier runs, docs/sync.md).
 */
async function measure(world: World, n: number, workers: number, cursors: Map<number, number>): Promise<void> {
  const label = `${n} connections, ${workers} worker${workers > 1 ? 's' : ''}`;
  const stats0 = await Promise.all(world.accounts.map((a) => a.admin('GET', 'stats')));

  // With --pg-statements the idle phase's statements too, per connection and minute: what an idle connection costs.
  const idleCpu0 = args['pg-statements'] ? await postgresCpuByKind(world) : null;
  if (idleCpu0) await sql`SELECT pg_stat_statements_reset()`.execute(world.db);
  const idle = await measureCpu(world, new Promise((r) => setTimeout(r, idleMinutes * 60_000)));
  if (idleCpu0) await printStatements(world, `${label}, idle`, n * idleMinutes, idleCpu0, 'connection-minute');
  const perConnection = (idle.worker + (idle.pg ?? 0)) / n;
  if (workers === workerCounts[0]) idleTotals.push([n, idle.worker + (idle.pg ?? 0)]);
  const intervals = await sql<{ minutes: number; n: number }>`SELECT interval_minutes AS minutes, count(*)::int AS n
    FROM sweep_plans GROUP BY 1 ORDER BY 1`.execute(world.db);
  console.log(
    `  ${label}: sweep intervals after the idle phase (minutes: connections): ${intervals.rows.map((r) => `${r.minutes}: ${r.n}`).join(', ')}`,
  );

  const dbBytes = async () =>
    Number((await sql<{ b: string }>`SELECT pg_database_size(current_database())::text AS b`.execute(world.db)).rows[0]!.b);
  const sizeBefore = await dbBytes();
  // Activity: one operation at a time on a random account, at n * rate per second overall.
  const lag = new StockLag();
  let stopped = false;
  let operations = 0;
  const busy = new Set<number>();
  const inflight = new Set<Promise<void>>();
  const load = (async () => {
    let due = 0;
    while (!stopped) {
      due += (n * rateOf(n)) / 10;
      while (due >= 1 && !stopped) {
        due -= 1;
        // Up to 32 operations at once (5,000 accounts at 0.01/s is 50 a second), never two on one account (its
        // moves are read from a cursor after each).
        const a = world.accounts[Math.floor(Math.random() * n)]!;
        if (busy.has(a.connectionId)) continue;
        busy.add(a.connectionId);
        const op = (async () => {
          await a.admin('POST', 'activity', { operations: 1 }).then(
            () => operations++,
            () => {},
          );
          lag.add(a.connectionId, await takeMoves(a, cursors));
        })().finally(() => {
          busy.delete(a.connectionId);
          inflight.delete(op);
        });
        inflight.add(op);
        if (inflight.size >= 32) await Promise.race(inflight);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    await Promise.all(inflight);
  })();
  const checker = (async () => {
    while (!stopped) {
      await lag.check(world.db);
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  const activeFrom = Date.now();
  const pgSamples = new Map<string, number>();
  let pgTotal = 0;
  const sampler = (async () => {
    if (!args['pg-sample']) return;
    while (!stopped) {
      const r = await sql<{ query: string }>`SELECT query FROM pg_stat_activity
        WHERE state = 'active' AND pid <> pg_backend_pid() AND datname = current_database()`.execute(world.db);
      pgTotal++;
      for (const { query } of r.rows) {
        const key = query.replace(/\s+/g, ' ').trim().slice(0, 140);
        pgSamples.set(key, (pgSamples.get(key) ?? 0) + 1);
      }
      await new Promise((res) => setTimeout(res, 100));
    }
  })();
  const cpu0 = args['pg-statements'] ? await postgresCpuByKind(world) : null;
  if (cpu0) await sql`SELECT pg_stat_statements_reset()`.execute(world.db);
  const tables0 = cpu0 ? await tableWrites(world) : null;
  const active = await measureCpu(world, new Promise((r) => setTimeout(r, minutes * 60_000)));
  stopped = true;
  if (cpu0) await printStatements(world, label, operations, cpu0);
  if (tables0) await printTableWrites(world, label, operations, tables0);
  await load;
  await checker;
  await sampler;
  if (pgTotal) {
    console.log(`  ${label}: PostgreSQL busy with (active backends per sample, ${pgTotal} samples):`);
    for (const [q, c] of [...pgSamples].sort((a, b) => b[1] - a[1]).slice(0, 25))
      console.log(`    ${(c / pgTotal).toFixed(3).padStart(6)}  ${q}`);
  }
  for (const end = Date.now() + 120_000; lag.open && Date.now() < end; ) {
    await lag.check(world.db);
    await new Promise((r) => setTimeout(r, 500));
  }

  // What else ran while the merchants worked: sweeps (each reads every resource of its account) compete with the
  // deliveries and drains for PostgreSQL; and how long deliveries waited for the deliveries job.
  const during = await sql<{ sweeps: number; p95: number | null; max: number | null }>`SELECT
      (SELECT count(*)::int FROM sync_log WHERE action LIKE 'sweep%' AND at >= ${new Date(activeFrom)}) AS sweeps,
      (SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at)) FROM webhook_deliveries
        WHERE received_at >= ${new Date(activeFrom)} AND processed_at IS NOT NULL) AS p95,
      (SELECT max(extract(epoch FROM processed_at - received_at)) FROM webhook_deliveries
        WHERE received_at >= ${new Date(activeFrom)} AND processed_at IS NOT NULL) AS max`.execute(world.db);
  const d = during.rows[0]!;
  console.log(
    `  ${label}: while active: ${d.sweeps} sweeps; deliveries handled after receipt p95 ${Number(d.p95 ?? 0).toFixed(1)} s, max ${Number(d.max ?? 0).toFixed(1)} s`,
  );

  // Webhook attempts the sandboxes saw fail (a failed delivery is retried a minute later, the documented service's
  // after about half a minute: a move whose only delivery failed waits that long), and what the receiver logged.
  const failed = new Map<number, { status: number | string; at: string; event: string; object_id: number; attempt: number }[]>();
  const statuses = new Map<string, number>();
  for (const a of world.accounts) {
    const attempts = (await a.admin('GET', 'deliveries?limit=2000')) as {
      status: number | string;
      at: string;
      event: string;
      object_id: number;
      attempt: number;
    }[];
    const bad = attempts.filter((x) => !(typeof x.status === 'number' && x.status >= 200 && x.status < 300));
    if (bad.length) failed.set(a.connectionId, bad);
    for (const x of bad) statuses.set(String(x.status), (statuses.get(String(x.status)) ?? 0) + 1);
  }
  console.log(
    `  ${label}: webhook attempts not answered 2xx (the sandboxes' last 2,000 each): ${[...statuses].map(([k, n]) => `${k}: ${n}`).join(', ') || 'none'}`,
  );
  const warnings = world.receiver
    .output()
    .split('\n')
    .filter((l) => /"level":(40|50|60)/.test(l));
  if (warnings.length) console.log(`  receiver warnings: ${warnings.length}, e.g. ${warnings.slice(0, 3).join(' | ').slice(0, 600)}`);

  // The slowest moves and the variant reads of their connection around them: whether reads were missing or
  // came without the move.
  for (const m of lag.slowest(3)) {
    const [connection, variant] = m.key.split(':').map(Number);
    const reads = await sql<{ at: Date; duration_ms: number | null; detail: { ids?: number } }>`SELECT at, duration_ms, detail FROM sync_log
      WHERE connection_id = ${connection} AND resource = 'variant' AND action = 'fetch'
        AND at BETWEEN ${new Date(m.at - 5_000)} AND ${new Date(m.at + m.lag + 5_000)} ORDER BY at`.execute(world.db);
    // Where the time went: the deliveries of the connection in the window (received, handled, s after the move) and
    // its variant reads (started and written), so a late delivery, a late drain or a slow read shows.
    const around = { from: new Date(m.at - 5_000), to: new Date(m.at + m.lag + 5_000) };
    const deliveries = await sql<{ event: string; object_id: string; received_at: Date; processed_at: Date | null }>`
      SELECT event, object_id, received_at, processed_at FROM webhook_deliveries
      WHERE connection_id = ${connection} AND received_at BETWEEN ${around.from} AND ${around.to} ORDER BY received_at`.execute(world.db);
    const after = (d: Date | null) => (d ? sec(d.getTime() - m.at) : '-');
    console.log(
      `  slow move: connection ${connection} variant ${variant}, ${m.cause}, ${sec(m.lag)} s; variant reads of that connection ` +
        `(s after the move, started-written: ids): ${
          reads.rows
            .map((r) => `${sec(r.at.getTime() - (r.duration_ms ?? 0) - m.at)}-${sec(r.at.getTime() - m.at)}:${r.detail?.ids ?? '?'}`)
            .join(' ') || 'none'
        }`,
    );
    console.log(
      `    deliveries (event object: received / handled, s after the move): ${
        deliveries.rows.map((d) => `${d.event} ${d.object_id}: ${after(d.received_at)} / ${after(d.processed_at)}`).join('; ') || 'none'
      }`,
    );
    const bad = (failed.get(connection) ?? []).filter((x) => Math.abs(Date.parse(x.at) - m.at) < m.lag + 5_000);
    if (bad.length)
      console.log(
        `    failed webhook attempts: ${bad.map((x) => `${x.event} ${x.object_id} attempt ${x.attempt}: ${x.status} at ${sec(Date.parse(x.at) - m.at)} s`).join('; ')}`,
      );
  }
  const p95s = [...lag.lags.values()]
    .map((l) =>
      percentile(
        [...l].sort((a, b) => a - b),
        95,
      ),
    )
    .sort((a, b) => a - b);
  const stats1 = await Promise.all(world.accounts.map((a) => a.admin('GET', 'stats')));
  const limited = stats1.reduce((s, x, i) => s + x.rate_limited - stats0[i]!.rate_limited, 0);
  const size = await dbBytes();
  // CPU per operation: a core's % is 10 ms of CPU per second, divided by operations per second.
  const opsPerSecond = operations / (active.ms / 1000);
  const perOp = (pct: number | null) => (pct === null || !opsPerSecond ? '-' : ((pct * 10) / opsPerSecond).toFixed(1));
  rows.push([
    String(n),
    String(workers),
    idle.worker.toFixed(1),
    idle.pg?.toFixed(1) ?? '-',
    perConnection.toFixed(4),
    active.worker.toFixed(1),
    active.receiver.toFixed(1),
    active.pg?.toFixed(1) ?? '-',
    active.bench.toFixed(1),
    opsPerSecond.toFixed(1),
    perOp(active.pg),
    perOp(active.worker),
    String(lag.times.length),
    sec(percentile(p95s, 50)),
    sec(p95s.at(-1) ?? NaN),
    sec(percentile(lag.all(), 95)),
    String(lag.open),
    String(limited),
    (size / 2 ** 20).toFixed(0),
    operations ? ((size - sizeBefore) / operations / 1024).toFixed(1) : '-',
  ]);
  console.log(rowLine(label, rows.at(-1)!));
  console.log(`  ${label}: ${logProblems(world)}`);
  // For a CPU profile: the active phase is the last this many seconds of the worker's life.
  if (args['cpu-prof'])
    console.log(`  ${label}: active phase began ${((Date.now() - activeFrom) / 1000).toFixed(0)} s before the worker stops`);
}

// What the processes logged as warnings and errors so far (LOG_LEVEL warn), and of them the pool's timeouts: a
// set-up that ran out of database connections says so here.
function logProblems(world: World): string {
  const lines = [world.receiver, world.worker, ...world.moreWorkers].flatMap((p) => p.output().split('\n'));
  const count = (re: RegExp) => lines.filter((l) => re.test(l)).length;
  // The distinct messages, most frequent first: what to look at.
  const messages = new Map<string, number>();
  for (const l of lines.filter((l) => /"level":(40|50|60)/.test(l))) {
    const msg = /"msg":"((?:[^"\\]|\\.)*)"/.exec(l)?.[1] ?? l.slice(0, 80);
    messages.set(msg, (messages.get(msg) ?? 0) + 1);
  }
  const top = [...messages].sort((a, b) => b[1] - a[1]).slice(0, 3);
  return (
    `logs so far: ${count(/"level":40/)} warnings, ${count(/"level":(50|60)/)} errors, ` +
    `${count(/timeout exceeded when trying to connect/i)} pool timeouts${top.map(([m, n]) => `; ${n} x ${m}`).join('')}`
  );
}

for (const n of counts) {
  const t0 = Date.now();
  const world = await startWorld({
    name: `accounts${n}`,
    accounts: n,
    variants: Number(args.variants),
    profile: args.profile,
    statements: args['pg-statements'],
    explainMs: args['explain-ms'] === undefined ? undefined : Number(args['explain-ms']),
    workerEnv: {
      ...workerSettings,
      ...(args['cpu-prof'] ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${args['cpu-prof']}` } : {}),
    },
    log,
  });
  await settled(world, 3_600_000);
  console.log(`  ${n} connections: set up and first sweeps done in ${sec(Date.now() - t0)} s; ${logProblems(world)}`);
  if (!args['fresh-plans']) await steadyPlans(world);
  // Moves of the set-up are not the measure's.
  const cursors = new Map<number, number>();
  for (let i = 0; i < world.accounts.length; i += 100)
    await Promise.all(world.accounts.slice(i, i + 100).map((a) => takeMoves(a, cursors)));
  for (const workers of workerCounts) {
    while (1 + world.moreWorkers.length < workers) await world.addWorker();
    await measure(world, n, workers, cursors);
  }
  await world.close();
}

console.log(
  '\nCPU in % of one core (worker processes together, and PostgreSQL); idle % per conn = (worker + PostgreSQL) / connections while idle;',
);
console.log(
  'pg ms/op, worker ms/op: CPU milliseconds per merchant operation while active (idle work included); KB/op: database growth per operation.',
);
const widths = HEAD.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
console.log(HEAD.map((h, i) => h.padStart(widths[i]!)).join('  '));
for (const r of rows) console.log(r.map((c, i) => c.padStart(widths[i]!)).join('  '));
// What one more idle connection costs, without the fixed cost of a running worker and database.
for (let i = 1; i < idleTotals.length; i++) {
  const [[n0, c0], [n1, c1]] = [idleTotals[i - 1]!, idleTotals[i]!];
  console.log(`idle cost of one more connection, ${n0} -> ${n1}: ${((c1 - c0) / (n1 - n0)).toFixed(4)} % of one core`);
}
