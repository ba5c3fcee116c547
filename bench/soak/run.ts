// Soak: a receiver and a worker process (real `commerce-sync receiver|worker`) against an embedded PostgreSQL,
// fed by the sandbox at a steady rate of merchant operations for --minutes. Every --interval seconds it prints
// each process's memory (RSS, heap after GC), the queue depths and the lag; at the end, whether they stayed
// flat (mean of the last third against the first third), then drains, sweeps and compares mirror and sandbox.
//
//   node_modules/.bin/node bench/soak/run.ts [--minutes 30] [--rate 5] [--interval 60] [--time-scale 1]
//
// Set DATABASE_URL to use an existing PostgreSQL (a database it may fill) instead of an embedded one.
import { cpus, totalmem, tmpdir } from 'node:os';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { addTokenConnection } from '../../src/api/connections.ts';
import { loadConfig } from '../../src/config.ts';
import { createDb, createPool } from '../../src/db/index.ts';
import { startEmbedded } from '../../src/db/embedded.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/log.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { startSandbox } from '@commerce-sync/sandbox';
import { startDeliveryProxy } from '../../test/support/delivery-proxy.ts';
import { clean, describeDiff, mirrorDiff, MIRRORED } from '../../test/support/mirror.ts';
import { memoryOf, memoryProbe, spawnCli, until, type CliProcess } from '../../test/support/processes.ts';
import { ClientState } from '../../src/api/client-state.ts';

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    rate: { type: 'string', default: '5' },
    interval: { type: 'string', default: '60' },
    'time-scale': { type: 'string', default: '1' },
    variants: { type: 'string', default: '500' },
    'log-level': { type: 'string', default: 'warn' },
    logs: { type: 'string' },
  },
});
const minutes = Number(args.minutes),
  rate = Number(args.rate),
  interval = Number(args.interval),
  timeScale = Number(args['time-scale']);
const log = createLogger('warn', { destination: process.stderr, pretty: false });
const mb = (n: number) => (n / 1048576).toFixed(1);

console.log(`soak: ${minutes} min at ${rate} merchant operations/s, sample every ${interval} s, sandbox time scale ${timeScale}`);
console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(1)} GB, node ${process.version}`);

const dir = await mkdtemp(join(tmpdir(), 'cs-soak-'));
const embedded = process.env.DATABASE_URL ? null : await startEmbedded(dir, log, 'soak');
const url = process.env.DATABASE_URL ?? embedded!.url;
await migrate(url);
await stopBoss(await startBoss(url, log, { supervise: false, schedule: false, max: 2 }), false);
const db = createDb(createPool(url, 4));

const SECRET = 'soak-client-secret';
const KEY = Buffer.alloc(32, 4).toString('base64');
const config = loadConfig({
  DATABASE_URL: url,
  DATA_DIR: dir,
  TOKEN_ENCRYPTION_KEY: KEY,
  COMMERCE_CLIENT_SECRET: SECRET,
  LOG_LEVEL: 'silent',
});
const sandbox = await startSandbox({
  variants: Number(args.variants),
  locations: 3,
  timeScale,
  clientSecret: SECRET,
  token: 'soak-token',
  seed: 7,
});
const connection = await addTokenConnection(
  { db, config, log, clients: new ClientState() },
  { baseUrl: sandbox.url, token: sandbox.token, name: 'soak' },
);
const proxy = await startDeliveryProxy(null);
const env = {
  DATABASE_URL: url,
  DATA_DIR: dir,
  TOKEN_ENCRYPTION_KEY: KEY,
  COMMERCE_CLIENT_SECRET: SECRET,
  SANDBOX: 'off',
  HOST: '127.0.0.1',
  PORT: 0,
  WORKER_PORT: 0,
  PUBLIC_URL: proxy.url,
  LOG_LEVEL: args['log-level']!,
  // A time-scaled sandbox stamps deliveries far ahead of the real clock: no future check then.
  ...(timeScale === 1 ? {} : { WEBHOOK_MAX_FUTURE_SECONDS: '0' }),
};
const receiver = await spawnCli(null, 'receiver', ['receiver'], env, { nodeArgs: memoryProbe });
proxy.targets.push(receiver.url);
const worker = await spawnCli(null, 'worker', ['worker'], env, { nodeArgs: memoryProbe });
const processes: CliProcess[] = [receiver, worker];
const admin = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${sandbox.url}/__sandbox/${path}`, {
    method,
    headers: { authorization: `Bearer ${sandbox.adminToken}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.json() as Promise<any>;
};

// Steady load: operations every 100 ms.
let stopped = false;
let operations = 0;
const load = (async () => {
  let due = 0;
  while (!stopped) {
    due += rate / 10;
    const n = Math.floor(due);
    due -= n;
    if (n > 0) operations += ((await admin('POST', 'activity', { operations: n }).catch(() => ({ performed: [] }))).performed ?? []).length;
    await new Promise((r) => setTimeout(r, 100));
  }
})();

interface Sample {
  minute: number;
  rss: number[];
  heap: number[];
  queued: number;
  pendingFetches: number;
  deliveryLag: number;
  fetchLag: number;
  processed: number;
}
const samples: Sample[] = [];

async function sample(minute: number): Promise<Sample> {
  const mem = await Promise.all(processes.map((p) => memoryOf(p)));
  const q = (
    await sql<{ queued: number; processed: number; lag: number | null }>`
    SELECT count(*) FILTER (WHERE state = 'queued')::int AS queued, count(*) FILTER (WHERE state = 'processed')::int AS processed,
           EXTRACT(EPOCH FROM now() - min(received_at) FILTER (WHERE state = 'queued'))::float AS lag FROM webhook_deliveries`.execute(db)
  ).rows[0]!;
  const f = (
    await sql<{ n: number; lag: number | null }>`
    SELECT count(*)::int AS n, EXTRACT(EPOCH FROM now() - min(first_marked_at))::float AS lag FROM pending_fetches`.execute(db)
  ).rows[0]!;
  return {
    minute,
    rss: mem.map((m) => m.rss),
    heap: mem.map((m) => m.heapUsed),
    queued: q.queued,
    pendingFetches: f.n,
    deliveryLag: q.lag ?? 0,
    fetchLag: f.lag ?? 0,
    processed: q.processed,
  };
}

const header =
  'min   receiver rss/heap MB   worker rss/heap MB   queued  pending-fetches  delivery-lag s  fetch-lag s  processed  acked  429';
console.log(header);
const started = Date.now();
for (let i = 1; i * interval <= minutes * 60; i++) {
  await new Promise((r) => setTimeout(r, Math.max(0, started + i * interval * 1000 - Date.now())));
  const s = await sample(Math.round((i * interval) / 6) / 10);
  samples.push(s);
  const stats = await admin('GET', 'stats');
  console.log(
    `${String(s.minute).padEnd(5)} ${`${mb(s.rss[0]!)} / ${mb(s.heap[0]!)}`.padEnd(22)} ${`${mb(s.rss[1]!)} / ${mb(s.heap[1]!)}`.padEnd(20)} ` +
      `${String(s.queued).padStart(6)}  ${String(s.pendingFetches).padStart(15)}  ${s.deliveryLag.toFixed(1).padStart(14)}  ${s.fetchLag.toFixed(1).padStart(11)}  ` +
      `${String(s.processed).padStart(9)}  ${String(proxy.acked.size).padStart(5)}  ${stats.rate_limited}`,
  );
  for (const p of processes)
    if (p.child.exitCode !== null) {
      console.log(`${p.name} exited with ${p.child.exitCode}:\n${p.output().slice(-2000)}`);
      process.exit(1);
    }
}

// Flat: the last third against the first third, by peak (the rate window makes lag a sawtooth: its peaks, not
// a mean that depends on where the samples fall in the window) and by mean, with absolute slack for small numbers.
const third = Math.max(1, Math.floor(samples.length / 3));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const verdicts: [string, (s: Sample) => number, number, (n: number) => string][] = [
  ['receiver RSS', (s) => s.rss[0]!, 16 * 2 ** 20, mb],
  ['receiver heap', (s) => s.heap[0]!, 8 * 2 ** 20, mb],
  ['worker RSS', (s) => s.rss[1]!, 16 * 2 ** 20, mb],
  ['worker heap', (s) => s.heap[1]!, 8 * 2 ** 20, mb],
  ['queued deliveries', (s) => s.queued, 50, String],
  ['pending fetches', (s) => s.pendingFetches, 100, (n) => n.toFixed(0)],
  ['delivery lag (s)', (s) => s.deliveryLag, 5, (n) => n.toFixed(1)],
  ['fetch lag (s)', (s) => s.fetchLag, 5, (n) => n.toFixed(1)],
];
console.log(`\nfirst third (${third} samples) vs last third, peak and mean:`);
let flat = true;
for (const [name, pick, slack, show] of verdicts) {
  const first = samples.slice(0, third).map(pick),
    last = samples.slice(-third).map(pick);
  const ok = Math.max(...last) <= Math.max(...first) * 1.1 + slack;
  flat &&= ok;
  console.log(
    `  ${name.padEnd(18)} peak ${show(Math.max(...first)).padStart(8)} -> ${show(Math.max(...last)).padStart(8)}   ` +
      `mean ${show(mean(first)).padStart(8)} -> ${show(mean(last)).padStart(8)}  ${ok ? 'flat' : 'GROWING'}`,
  );
}
console.log(`verdict: ${flat ? 'flat' : 'NOT flat'} (${operations} merchant operations, ${proxy.acked.size} deliveries acknowledged)`);
const oldest = await sql<{ resource: string; id: number; reason: string | null; attempts: number; age: number; claimed: boolean }>`
  SELECT resource, id, reason, attempts, EXTRACT(EPOCH FROM now() - first_marked_at)::int AS age, claimed_until > now() AS claimed
  FROM pending_fetches ORDER BY first_marked_at LIMIT 5`.execute(db);
if (oldest.rows.length)
  console.log(
    `oldest pending fetches: ${oldest.rows.map((r) => `${r.resource} ${r.id} (${r.reason}, ${r.attempts} attempts, ${r.age} s${r.claimed ? ', claimed' : ''})`).join('; ')}`,
  );

// Drain, sweep, compare.
stopped = true;
await load;
await until(
  'sandbox deliveries to drain',
  async () => {
    await admin('POST', 'deliveries/flush');
    return (await admin('GET', 'stats')).deliveries.pending === 0;
  },
  120_000,
  500,
);
await until('deliveries processed', async () => (await sample(0)).queued === 0, 120_000, 500);
const sweep = await spawnCli(null, 'reconcile', ['reconcile', '--full'], env, { ready: null });
await sweep.exited;
let diffs: ReturnType<typeof describeDiff>[] = [];
await until(
  'mirror to equal the sandbox',
  async () => {
    const d = await Promise.all(
      MIRRORED.map(async (r) => mirrorDiff(db, connection.id, r, (await admin('GET', `snapshot?resource=${r}`))[r])),
    );
    diffs = d.filter((x) => !clean(x)).map(describeDiff);
    return diffs.length === 0;
  },
  120_000,
  1000,
).catch(() => {});
console.log(
  diffs.length ? `after a full sweep the mirror differs: ${diffs.join('; ')}` : 'after a full sweep the mirror equals the sandbox',
);
const stats = await admin('GET', 'stats');
console.log(
  `sandbox: ${stats.requests.total} API requests, ${stats.rate_limited} answered 429; deliveries ${JSON.stringify(stats.deliveries)}`,
);

for (const p of processes) await p.stop();
// --logs DIR keeps each process's output (its log lines) for a look afterwards.
if (args.logs) for (const p of processes) await writeFile(join(args.logs, `${p.name}.log`), p.output());
await proxy.close();
await sandbox.close();
await db.destroy();
await embedded?.stop();
await rm(dir, { recursive: true, force: true });
