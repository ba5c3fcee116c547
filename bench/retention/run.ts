// Retention: does the database stop growing under steady traffic? One sandbox account whose clock runs
// --day-seconds real seconds to a day (time scale 86400 / day-seconds), a receiver and a worker as separate
// `commerce-sync` processes, merchant activity at --rate operations a real second and channel order imports at
// --pushes a second, for --days simulated days. Every retention window is --keep simulated days.
//
// Time base: every row is stamped by the database clock (now(), real time) and retention compares with it, so the
// windows are set in real time: --keep simulated days = keep x day-seconds real seconds, given to the processes as
// fractions of a day (DELIVERY_RETENTION_DAYS=0.0035 is 5 minutes; JOB_RETENTION_HOURS likewise). Nothing ages
// artificially: the worker's retention run (every minute) and pg-boss's deletion (every minute) do the deleting.
//
// Each simulated day it prints the database size (pg_database_size) and, per table family, rows and MB; at the
// end, whether the tables retention governs level off, and what one day at 10 operations a second adds before
// retention: the growth per operation until 0.95 of the first window (no row is old enough to go before it fills),
// scaled to 864,000 operations. The time scale changes that figure (a faster rate window reads sooner and
// coalesces less), so measure it at the real rate limit too: --day-seconds 86400 --days 0.007 (10 minutes). The mirror (variants, orders, ...) is the account's copy, kept whole by design: it
// grows as the account does (orders placed, variants created), shown beside the rest, never pruned.
// The console's minute samples are taken by this process (sampleOnce, what a console process runs).
//
//   node_modules/.bin/node bench/retention/run.ts [--days 6] [--day-seconds 300] [--keep 1] [--rate 10]
//       [--pushes 0.5] [--variants 500] [--kinds adjust_stock,transfer_stock,...]
//   node_modules/.bin/node bench/retention/run.ts --day-seconds 86400 --days 0.007   # before retention, real time
//
// --kinds limits the merchant activity (sandbox ACTIVITY_KINDS): without place_order and create_* the account
// stops growing and so does the mirror. Set DATABASE_URL to use an existing PostgreSQL (scratch database).
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { sampleOnce } from '../../src/console/gauges.ts';
import { createLogger } from '../../src/log.ts';
import { enqueueOperation } from '../../src/push/enqueue.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { channelFeed } from '../../src/channels/feed.ts';
import { settled, startWorld } from '../freshness/world.ts';

const { values: args } = parseArgs({
  options: {
    days: { type: 'string', default: '6' },
    'day-seconds': { type: 'string', default: '300' },
    keep: { type: 'string', default: '1' },
    rate: { type: 'string', default: '10' },
    pushes: { type: 'string', default: '0.5' },
    variants: { type: 'string', default: '500' },
    kinds: { type: 'string' },
  },
});
const days = Number(args.days);
const daySeconds = Number(args['day-seconds']);
const keep = Number(args.keep);
const rate = Number(args.rate);
const pushes = Number(args.pushes);
const kinds = args.kinds ? args.kinds.split(',') : undefined;
if (!(days > 0 && daySeconds > 0 && keep > 0 && rate > 0 && pushes >= 0))
  throw new Error('--days, --day-seconds, --keep, --rate: positive numbers');
const timeScale = 86_400 / daySeconds;
const keepDays = (keep * daySeconds) / 86_400; // the setting: real days
const log = createLogger('warn', { destination: process.stderr, pretty: false });
const MB = 1_048_576;
const REAL_DAY_OPS = 10 * 86_400;

console.log(
  `retention: ${days} simulated days of ${daySeconds} real s (sandbox time scale ${timeScale.toFixed(0)}), ${rate} merchant operations/s` +
    `${kinds ? ` (${kinds.join(', ')})` : ''}, ${pushes} order imports/s, every window ${keep} simulated day (${keepDays.toPrecision(3)} days = ${(keep * daySeconds).toFixed(0)} s real)`,
);
console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(1)} GB, node ${process.version}`);

const retention = {
  DELIVERY_RETENTION_DAYS: String(keepDays),
  DEAD_LETTER_RETENTION_DAYS: String(keepDays),
  SYNC_LOG_RETENTION_DAYS: String(keepDays),
  CHANNEL_CHANGE_RETENTION_DAYS: String(keepDays),
  OPERATION_RETENTION_DAYS: String(keepDays),
  CONSOLE_SAMPLE_RETENTION_DAYS: String(keepDays),
  JOB_RETENTION_HOURS: String(keepDays * 24),
};
const world = await startWorld({
  name: 'retention',
  accounts: 1,
  variants: Number(args.variants),
  sandbox: { timeScale },
  // A time-scaled sandbox stamps deliveries ahead of the real clock: no future check then.
  env: { ...retention, WEBHOOK_MAX_FUTURE_SECONDS: '0' },
  log,
});
const { db } = world;
const account = world.accounts[0]!;
await settled(world);

// Channel order imports: a pg-boss of our own to enqueue them (the worker process runs them).
const boss = await startBoss(world.database.url, log, { supervise: false, schedule: false, max: 2 });
const snapshot = async (resource: string) => (await account.admin('GET', `snapshot?resource=${resource}`))[resource] as any[];
const skus = (await snapshot('variants'))
  .filter((v) => v.sku && v.status === 'active' && !v.composite && v.manage_stock !== false)
  .map((v) => v.sku as string);
const customer = (await snapshot('companies')).find((c) => c.company_type !== 'supplier' && c.status === 'active');

// Families: the tables retention governs, pg-boss's jobs, the mirror (kept whole), and everything else.
const RETAINED = ['webhook_deliveries', 'sync_log', 'channel_quantity_changes', 'push_operations', 'console_samples'] as const;
const MIRROR = [
  'locations',
  'products',
  'variants',
  'stock_levels',
  'compositions',
  'companies',
  'addresses',
  'contacts',
  'currencies',
  'orders',
  'order_line_items',
  'fulfillments',
  'fulfillment_line_items',
  'fulfillment_returns',
  'fulfillment_return_line_items',
  'purchase_orders',
  'purchase_order_line_items',
  'other_records',
  'channel_quantities',
];
const FAMILIES = [...RETAINED, 'pgboss.job', 'channel_orders', 'mirror', 'other'] as const;
type Family = (typeof FAMILIES)[number];

interface Sample {
  day: number;
  at: number;
  ops: number;
  imports: number;
  database: number;
  bytes: Record<Family, number>;
  rows: Record<Family, number>;
  queued: number;
}

async function sample(day: number): Promise<Sample> {
  const tables = (
    await sql<{ schema: string; name: string; bytes: string }>`
    SELECT n.nspname AS schema, c.relname AS name, pg_total_relation_size(c.oid)::text AS bytes
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind = 'r' AND n.nspname IN ('public', 'pgboss')`.execute(db)
  ).rows;
  const bytes = Object.fromEntries(FAMILIES.map((f) => [f, 0])) as Record<Family, number>;
  for (const t of tables) {
    const family: Family =
      t.schema === 'pgboss'
        ? t.name.startsWith('job') && t.name !== 'job_dependency'
          ? 'pgboss.job'
          : 'other'
        : (RETAINED as readonly string[]).includes(t.name) || t.name === 'channel_orders'
          ? (t.name as Family)
          : MIRROR.includes(t.name)
            ? 'mirror'
            : 'other';
    bytes[family] += Number(t.bytes);
  }
  const counts = (
    await sql<Record<string, number>>`SELECT
      (SELECT count(*) FROM webhook_deliveries)::int AS webhook_deliveries,
      (SELECT count(*) FROM sync_log)::int AS sync_log,
      (SELECT count(*) FROM channel_quantity_changes)::int AS channel_quantity_changes,
      (SELECT count(*) FROM push_operations)::int AS push_operations,
      (SELECT count(*) FROM console_samples)::int AS console_samples,
      (SELECT count(*) FROM pgboss.job)::int AS "pgboss.job",
      (SELECT count(*) FROM channel_orders)::int AS channel_orders,
      (SELECT count(*) FROM webhook_deliveries WHERE state = 'queued')::int AS queued,
      pg_database_size(current_database())::float8 AS database`.execute(db)
  ).rows[0]!;
  const mirrorRows = (
    await sql<{ n: number }>`SELECT (${sql.join(
      MIRROR.map((t) => sql`(SELECT count(*) FROM ${sql.table(t)})`),
      sql` + `,
    )})::int AS n`.execute(db)
  ).rows[0]!.n;
  const rows = Object.fromEntries(FAMILIES.map((f) => [f, counts[f] ?? 0])) as Record<Family, number>;
  rows.mirror = mirrorRows;
  rows.other = 0;
  return { day, at: Date.now(), ops: operations, imports, database: Number(counts.database), bytes, rows, queued: counts.queued! };
}

// Steady load: merchant operations every 100 ms, imports on their own clock, console samples every minute.
let stopped = false;
let operations = 0;
let imports = 0;
let failedImports = 0;
const admin = account.admin;
const load = (async () => {
  let due = 0;
  while (!stopped) {
    due += rate / 10;
    const n = Math.floor(due);
    due -= n;
    if (n > 0) {
      const r = await admin('POST', 'activity', { operations: n, ...(kinds ? { kinds } : {}) }).catch(() => ({ performed: [] }));
      operations += (r.performed ?? []).length;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
})();
const importer = (async () => {
  if (!pushes) return;
  let i = 0;
  const started = Date.now();
  while (!stopped) {
    const ref = `R-${process.pid}-${i}`;
    await enqueueOperation({ db, boss }, 'import-order', {
      channel: 'bench',
      channel_order_id: ref,
      customer: { company_id: customer.id },
      currency: 'SGD',
      issued_at: '2026-11-21',
      lines: [{ sku: skus[i % skus.length], quantity: '1' }],
    }).then(
      () => imports++,
      () => failedImports++,
    );
    i++;
    await new Promise((r) => setTimeout(r, Math.max(0, started + (i * 1000) / pushes - Date.now())));
  }
})();
const sampler = setInterval(() => void sampleOnce(db).catch(() => {}), 60_000);
void sampleOnce(db);

const mb = (n: number) => (n / MB).toFixed(1);
const samples: Sample[] = [await sample(0)];
const start = samples[0]!.at;
// "Before retention": until the first window fills (or the run ends), no row has been old enough to go.
const freshSeconds = 0.95 * Math.min(keep, days) * daySeconds;
await new Promise((r) => setTimeout(r, start + freshSeconds * 1000 - Date.now()));
const fresh = await sample(Number((freshSeconds / daySeconds).toFixed(3)));

const cols: Family[] = [
  'webhook_deliveries',
  'sync_log',
  'channel_quantity_changes',
  'push_operations',
  'console_samples',
  'pgboss.job',
  'channel_orders',
  'mirror',
  'other',
];
const short: Record<Family, string> = {
  webhook_deliveries: 'deliveries',
  sync_log: 'sync_log',
  channel_quantity_changes: 'changes',
  push_operations: 'operations',
  console_samples: 'samples',
  'pgboss.job': 'pgboss.job',
  channel_orders: 'chan_orders',
  mirror: 'mirror',
  other: 'other',
};
console.log(`\nper simulated day: database MB, then rows / MB per family (queued: deliveries not yet processed)`);
console.log(`day  ops      database  ${cols.map((c) => short[c].padStart(17)).join('')}  queued`);
const line = (s: Sample) =>
  `${String(s.day).padEnd(4)} ${String(s.ops).padEnd(8)} ${mb(s.database).padStart(8)}  ` +
  cols.map((c) => `${c === 'other' || c === 'mirror' ? '' : String(s.rows[c])} / ${mb(s.bytes[c])}`.padStart(17)).join('') +
  `  ${String(s.queued).padStart(6)}`;
console.log(line(samples[0]!));
const marks = Array.from({ length: Math.floor(days) }, (_, i) => i + 1);
if (days % 1) marks.push(days);
for (const d of marks) {
  await new Promise((r) => setTimeout(r, Math.max(0, start + d * daySeconds * 1000 - Date.now())));
  const s = await sample(d);
  samples.push(s);
  console.log(line(s));
  for (const p of [world.receiver, world.worker])
    if (p.child.exitCode !== null) {
      console.log(`${p.name} exited with ${p.child.exitCode}:\n${p.output().slice(-2000)}`);
      process.exit(1);
    }
}
stopped = true;
clearInterval(sampler);
await load;
await importer;

// Before retention: the growth per merchant operation until then, scaled to a day at 10 operations/s.
const base = samples[0]!;
const opsFresh = fresh.ops - base.ops;
const byOps = REAL_DAY_OPS / opsFresh;
console.log(
  `\nbefore retention: the first ${freshSeconds.toFixed(0)} s real (${fresh.day} simulated day) added (${opsFresh} merchant operations, ${fresh.imports - base.imports} imports), ` +
    `and scaled to one day at 10 operations/s (${REAL_DAY_OPS.toLocaleString('en')} operations, ${(((fresh.imports - base.imports) / opsFresh) * REAL_DAY_OPS).toFixed(0)} imports):`,
);
const defaults: Partial<Record<Family, number>> = {
  webhook_deliveries: 7,
  sync_log: 30,
  channel_quantity_changes: 30,
  push_operations: 90,
  console_samples: 7,
  'pgboss.job': 1,
};
let perDay = 0;
let atDefaults = 0;
// Samples are one a minute per connection whatever the traffic: scaled by time, not operations.
const byTime = 86_400 / freshSeconds;
for (const c of cols) {
  const rows = fresh.rows[c] - base.rows[c];
  const bytes = fresh.bytes[c] - base.bytes[c];
  const scale = c === 'console_samples' ? byTime : byOps;
  perDay += bytes * scale;
  const kept = defaults[c];
  if (kept) atDefaults += bytes * scale * kept;
  console.log(
    `  ${short[c].padEnd(12)} ${c === 'other' ? ''.padStart(10) : String(rows).padStart(10)} rows ${mb(bytes).padStart(7)} MB   ` +
      `-> ${
        c === 'other'
          ? ''.padStart(12)
          : Math.round(rows * scale)
              .toLocaleString('en')
              .padStart(12)
      } rows ${mb(bytes * scale).padStart(9)} MB a day` +
      (kept ? `   x ${kept} days kept by default = ${((bytes * scale * kept) / 2 ** 30).toFixed(1)} GB` : ''),
  );
}
console.log(`  total ${mb(perDay)} MB a day; the retained families at the default windows hold ${(atDefaults / 2 ** 30).toFixed(1)} GB`);
console.log(
  '  (console samples grow with time, not traffic: scaled to a day of real time, not by operations; their first rows\n' +
    '   fill whole pages, so their MB is an upper bound. Time-based work (sweeps, the maintenance schedule) is a small\n' +
    '   part of the rest; scaling by operations counts it as if it were traffic.)',
);

// Level off: from the day the windows have filled (keep + 1), the retained families and pg-boss's jobs.
const governed = (s: Sample) => RETAINED.reduce((n, f) => n + s.bytes[f], 0) + s.bytes['pgboss.job'];
const steady = samples.filter((s) => s.day >= keep + 1);
console.log(`\nretained families + pgboss.job, MB per day: ${samples.map((s) => mb(governed(s))).join(', ')}`);
console.log(`mirror, MB per day (the account's copy, never pruned): ${samples.map((s) => mb(s.bytes.mirror)).join(', ')}`);
console.log(`database, MB per day: ${samples.map((s) => mb(s.database)).join(', ')}`);
console.log(
  `database less the mirror and channel orders, MB per day: ${samples.map((s) => mb(s.database - s.bytes.mirror - s.bytes.channel_orders)).join(', ')}`,
);
if (steady.length >= 2) {
  const first = steady[0]!;
  const last = steady[steady.length - 1]!;
  const peak = Math.max(...steady.map(governed));
  const grew = governed(last) - governed(first);
  const flat = governed(last) <= governed(first) * 1.1 + 2 * MB;
  console.log(
    `from day ${first.day} to day ${last.day}: retained + jobs ${mb(governed(first))} -> ${mb(governed(last))} MB (${grew >= 0 ? '+' : ''}${mb(grew)}, peak ${mb(peak)}): ${flat ? 'LEVELS OFF' : 'STILL GROWING'}; ` +
      `database ${mb(first.database)} -> ${mb(last.database)} MB, of which the mirror ${mb(last.bytes.mirror - first.bytes.mirror)} MB and channel orders ${mb(last.bytes.channel_orders - first.bytes.channel_orders)} MB (the account's new records)`,
  );
} else console.log(`run more than ${keep + 1} days to see the level`);

const feed = await channelFeed(db, { since: 0, limit: 1 });
console.log(
  'expired' in feed
    ? `GET /api/channel-stock?since=0 now answers 410: changes up to ${feed.kept_after} were deleted`
    : 'GET /api/channel-stock?since=0 still has the whole history (nothing pruned)',
);
const stats = await admin('GET', 'stats');
console.log(
  `sandbox: ${operations} merchant operations, ${imports} imports queued (${failedImports} refused), ${stats.requests.total} API requests, ${stats.rate_limited} answered 429`,
);
const states = await sql<{
  state: string;
  n: number;
}>`SELECT state, count(*)::int AS n FROM push_operations GROUP BY state ORDER BY state`.execute(db);
console.log(`push operations now: ${states.rows.map((r) => `${r.n} ${r.state}`).join(', ') || 'none'}`);
const reasons = await sql<{
  reason: string;
  n: number;
}>`SELECT left(regexp_replace(reason, ' \\[X-Request-ID [^]]*\\]', ''), 160) AS reason, count(*)::int AS n FROM push_operations
  WHERE state = 'failed' GROUP BY 1 ORDER BY 2 DESC LIMIT 3`.execute(db);
for (const r of reasons.rows) console.log(`  failed ${r.n}: ${r.reason}`);

await stopBoss(boss, false);
await world.close();
