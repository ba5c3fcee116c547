// Receiver benchmark: deliveries/s and p50/p99 acknowledgement latency under autocannon with correctly
// signed, unique deliveries, for (a) our receiver with group commit, (b) a bare Koa handler answering 200,
// (c) the pg-boss send anchor: the receiver the design card describes written the plain way (Koa, verify, one
// pg-boss send per delivery, its job id derived from the delivery id: the same promise as ours), (d) our request
// path without the database (diagnostic), (e) the naive anchor: the simplest receiver a user could write (Koa,
// verify, one INSERT per request: a weaker promise, nothing queued), and (a) again with 1,000,000 jobs already
// queued. Our rate is printed as a ratio to each anchor's, measured in the same run.
// Each server runs in its own process; the load generator runs here. Run:
//   node_modules/.bin/node bench/receiver/run.ts [--duration 10] [--connections 50] [--queued 1000000] [--only PREFIX] [--rounds 1]
// --only runs the scenarios whose name starts with PREFIX, e.g. '(a)', '(a) receiver, g', '(a) receiver, 1', '(b)';
// the anchors (e) and (c) run whatever --only says, since the ratios need them. --rounds N runs both anchors and (a)
// N times, alternately, and prints the median of the N ratios to each: on a shared machine one pair can be off by
// 30% either way.
// --databases names where it runs, one after the other, each with its own anchor: `embedded` (an embedded
// PostgreSQL in a temporary folder), `machine` (the server at DATABASE_URL, one you own: it creates and drops
// a database) and `nosync` (an embedded one with synchronous_commit=off for the anchor and ours alike: a commit's
// flush costs nothing, the stand-in for a fast disk). Default: embedded, machine when DATABASE_URL is set, nosync.
// The run with 1,000,000 jobs queued is made on the first of them (--queued 0 skips it).
import { scratchDatabase } from '../support/database.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createHmac, randomUUID } from 'node:crypto';
import os from 'node:os';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createPool } from '../../src/db/index.ts';
import { createLogger } from '../../src/log.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { createQueues } from '../../src/queue/queues.ts';
import { deliveriesQueue } from '../../src/queue/contracts.ts';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    queued: { type: 'string', default: '1000000' },
    only: { type: 'string' },
    rounds: { type: 'string', default: '1' },
    databases: { type: 'string' },
  },
});
const duration = Number(args.duration);
const connections = Number(args.connections);
const queuedTarget = Number(args.queued);
const rounds = Number(args.rounds);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds must be a whole number >= 1');
const SECRET = 'bench-secret';
const log = createLogger('warn', { destination: process.stderr, pretty: false });

const databases = (args.databases ?? ['embedded', ...(process.env.DATABASE_URL ? ['machine'] : []), 'nosync'].join(','))
  .split(',')
  .map((d) => d.trim());
for (const d of databases)
  if (!['embedded', 'machine', 'nosync'].includes(d)) throw new Error(`--databases: unknown ${d} (embedded, machine, nosync)`);
if (databases.includes('machine') && !process.env.DATABASE_URL) throw new Error('--databases machine needs DATABASE_URL');

/** What one database gives: the rows of its table, its settings, the pairs (anchor, ours) of each round. */
interface Measured {
  kind: string;
  rows: Row[];
  settings: Record<string, string>;
  pairs: { anchor: number; send: number; ours: number }[];
}

interface Row {
  name: string;
  target: string;
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  other: number;
  stored: string;
  load: string;
  cpu: string;
  capacity: number;
}

async function measure(kind: string, withQueued: boolean): Promise<Measured> {
  const scratch = await scratchDatabase('receiver', log, {
    server: kind === 'machine' ? 'env' : 'embedded',
    synchronousCommit: kind === 'nosync' ? 'off' : undefined,
  });
  const { url, postmaster } = scratch;
  const setupBoss = await startBoss(url, log, { supervise: false, schedule: false, max: 2 });
  await createQueues(setupBoss);
  const pool = createPool(url, 2);
  await pool.query(`INSERT INTO connections (name, base_url, auth_kind) VALUES ('bench', 'http://127.0.0.1:1', 'token')`);
  const settings: Record<string, string> = Object.fromEntries(
    (
      await pool.query(
        `SELECT name, setting FROM pg_settings WHERE name IN ('synchronous_commit', 'fsync', 'wal_sync_method', 'shared_buffers')`,
      )
    ).rows.map((r) => [r.name, r.setting]),
  );
  console.error(`${kind}: synchronous_commit=${settings.synchronous_commit}`);

  function startTarget(scenario: string): Promise<{ port: number; child: ChildProcess }> {
    const child = spawn(
      process.execPath,
      [
        ...(process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : []),
        'bench/receiver/target.ts',
        scenario,
        url,
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, COMMERCE_CLIENT_SECRET: SECRET, LOG_LEVEL: 'warn' },
      },
    );
    return new Promise((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (d) => {
        out += d;
        const m = /READY (\d+)/.exec(out);
        if (m) resolve({ port: Number(m[1]), child });
      });
      child.once('exit', (code) => reject(new Error(`${scenario} exited with ${code}`)));
    });
  }

  const stopTarget = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });

  let seq = 0;
  function load(port: number, seconds: number): Promise<autocannon.Result> {
    const run = `${process.pid}-${Date.now()}`;
    return autocannon({
      url: `http://127.0.0.1:${port}`,
      connections,
      duration: seconds,
      requests: [
        {
          method: 'POST',
          path: '/webhooks/bench',
          setupRequest: (req: any) => {
            const id = ++seq;
            const body = `{"object_id":${id},"event":"variants.stock_level_update","timestamp":${Math.floor(Date.now() / 1000)},"resource_url":"http://127.0.0.1:1/variants/${id}.json"}`;
            return {
              ...req,
              body,
              headers: {
                'content-type': 'application/json',
                'x-service-delivery': `${run}-${id}`,
                'x-service-signature': createHmac('sha256', SECRET).update(body).digest('base64'),
              },
            };
          },
        },
      ],
    });
  }

  const rows: Row[] = [];
  const jobsQueued = async () =>
    Number((await pool.query(`SELECT count(*) AS n FROM pgboss.job WHERE name = 'deliveries' AND state = 'created'`)).rows[0].n);

  // CPU seconds actually used, read from /proc: a measure the other tenants of a shared machine do not distort
  // (they only add waiting). Per delivery it gives the rate 2 idle cores could sustain.
  function procCpu(pid: number): number {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks of 1/100 s
    } catch {
      return 0;
    }
  }
  function postgresCpu(): number {
    // The postmaster's own time plus that of its children: live ones from their stat, exited ones from the
    // postmaster's cutime/cstime (so a backend ending mid-run does not take its time with it).
    if (!postmaster) return 0;
    let total = 0;
    try {
      const f = readFileSync(`/proc/${postmaster}/stat`, 'utf8').split(') ')[1]!.split(' ');
      total += (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
    } catch {
      return 0;
    }
    for (const d of readdirSync('/proc')) {
      if (!/^\d+$/.test(d)) continue;
      try {
        const f = readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1]!.split(' ');
        if (Number(f[1]) === postmaster) total += (Number(f[11]) + Number(f[12])) / 100;
      } catch {
        /* gone */
      }
    }
    return total;
  }
  const selfCpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };

  /** Rows and jobs in one snapshot (a batch commits both at once, so two queries could straddle one). */
  async function stored(): Promise<{ rows: number; jobs: number; txns: number }> {
    const r = (
      await pool.query(`SELECT (SELECT count(*) FROM webhook_deliveries) AS rows,
      (SELECT count(*) FROM pgboss.job WHERE name = 'deliveries') AS jobs,
      (SELECT count(DISTINCT xmin::text) FROM webhook_deliveries) AS txns`)
    ).rows[0];
    return { rows: Number(r.rows), jobs: Number(r.jobs), txns: Number(r.txns) };
  }

  async function scenario(name: string, target: string): Promise<void> {
    if (args.only && !name.startsWith(args.only) && target !== 'anchor' && target !== 'naive') return;
    const { port, child } = await startTarget(target);
    await load(port, 2); // warm-up: JIT, pools, caches
    await new Promise((r) => setTimeout(r, 500)); // let the warm-up's last commits land
    const before = await stored();
    const loadBefore = os.loadavg()[0]!;
    const cpu0 = [procCpu(child.pid!), postgresCpu(), selfCpu()];
    const r = await load(port, duration);
    const cpu1 = [procCpu(child.pid!), postgresCpu(), selfCpu()];
    const loadAfter = os.loadavg()[0]!;
    const perDelivery = cpu1.map((v, i) => ((v - cpu0[i]!) / Math.max(1, r['2xx'])) * 1e6);
    await stopTarget(child);
    const after = await stored();
    const ok = r['2xx'];
    rows.push({
      name,
      target,
      rps: ok / duration,
      p50: r.latency.p50,
      p99: r.latency.p99,
      ok,
      other: r.non2xx + r.errors + r.timeouts,
      stored:
        target === 'bare' || target === 'anchor'
          ? '-'
          : `${after.rows - before.rows} rows, ${after.jobs - before.jobs} jobs` +
            (target === 'receiver'
              ? `, ${((after.rows - before.rows) / Math.max(1, after.txns - before.txns)).toFixed(1)} per transaction`
              : ''),
      load: `${loadBefore.toFixed(1)}/${loadAfter.toFixed(1)}`,
      cpu: perDelivery.map((v) => v.toFixed(0)).join('/'),
      capacity: 2e6 / perDelivery.reduce((a, b) => a + b, 0),
    });
    console.error(
      `${name}: ${(ok / duration).toFixed(0)}/s p50 ${r.latency.p50} ms p99 ${r.latency.p99} ms (load ${loadBefore.toFixed(1)} -> ${loadAfter.toFixed(1)})`,
    );
  }

  async function fillQueue(target: number): Promise<number> {
    // pg-boss's own bulk insert path, in big batches: the jobs look exactly like the receiver's.
    let have = await jobsQueued();
    const batch = 50_000;
    const started = Date.now();
    while (have < target) {
      const n = Math.min(batch, target - have);
      // Shaped like the receiver's: one connection's rows of one committed batch (ids of rows that do not exist).
      const jobs = Array.from({ length: n }, (_, i) => {
        const jobId = randomUUID();
        return {
          id: jobId,
          data: { connectionId: 1, jobId, deliveryIds: Array.from({ length: 16 }, (_, k) => `queued-${i}-${k}`) },
        };
      });
      await setupBoss.insert(deliveriesQueue.name, jobs);
      have += n;
    }
    // Settle what the bulk load left behind (statistics, a pending checkpoint) so the run measures steady state.
    await pool.query('VACUUM ANALYZE pgboss.job');
    await pool.query('CHECKPOINT');
    console.error(`queued ${have} jobs in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return have;
  }

  const pairs: { anchor: number; send: number; ours: number }[] = [];
  try {
    for (let round = 1; round <= rounds; round++) {
      const tag = rounds > 1 ? ` #${round}` : '';
      await scenario(`(e) naive anchor: Koa + verify + one INSERT${tag}`, 'anchor');
      await scenario(`(c) pg-boss send anchor: Koa + verify + one send, job id from the delivery id${tag}`, 'naive');
      if (round === 1) {
        await scenario('(b) bare Koa, answers 200', 'bare');
        await scenario('(d) read + verify + parse, no database', 'verify');
      }
      const ran = rows.length;
      await scenario(`(a) receiver, group commit${tag}`, 'receiver');
      // Paired with this round's anchors, not with whatever scenario ran just before (round 1 runs (b) and (d) between).
      const anchor = rows.findLast((r) => r.target === 'anchor');
      const send = rows.findLast((r) => r.target === 'naive');
      if (rows.length > ran && anchor && send) pairs.push({ anchor: anchor.rps, send: send.rps, ours: rows[ran]!.rps });
    }
    if (withQueued && queuedTarget > 0 && (!args.only || args.only === '(a)' || args.only.startsWith('(a) receiver, 1'))) {
      await fillQueue(queuedTarget);
      await scenario(`(a) receiver, ${(await jobsQueued()).toLocaleString('en')} jobs queued`, 'receiver');
    }
  } finally {
    await stopBoss(setupBoss, false);
    await pool.end();
    await scratch.close();
  }
  return { kind, rows, settings, pairs };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const results: Measured[] = [];
for (const [i, kind] of databases.entries()) results.push(await measure(kind, i === 0));

const cpus = os.cpus();
console.log(
  `machine: ${cpus.length} x ${cpus[0]?.model ?? 'unknown cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}, ${os.platform()} ${os.release()}`,
);
console.log(
  `load: autocannon, ${connections} connections, ${duration} s per scenario after a 2 s warm-up, signed unique deliveries; load generator on the same machine`,
);
console.log(
  `receiver settings: WEBHOOK_BATCH_SIZE=${process.env.WEBHOOK_BATCH_SIZE ?? 'default'} WEBHOOK_BATCH_WAIT_MS=${process.env.WEBHOOK_BATCH_WAIT_MS ?? 'default'} WEBHOOK_COMMIT_CONCURRENCY=${process.env.WEBHOOK_COMMIT_CONCURRENCY ?? 'default'}`,
);
console.log(
  'load avg: 1-minute load average before/after the measured run (the machine is shared; above 2 the figures include waiting for CPU)',
);
console.log(
  'cpu us/delivery: CPU time per acknowledged delivery of the server process / PostgreSQL (all its processes; 0 where the server is not ours to read) / the load generator;',
);
console.log('2-core capacity: 2 CPU-seconds per second divided by their sum, the rate this work could reach on 2 otherwise idle cores');
const header = [
  'scenario',
  'deliveries/s',
  'x anchor',
  'p50 ms',
  'p99 ms',
  '2xx',
  'other',
  'load avg',
  'cpu us/delivery',
  '2-core capacity/s',
  'stored',
];
for (const { kind, rows, settings } of results) {
  console.log('');
  console.log(
    `${kind}: synchronous_commit=${settings.synchronous_commit} fsync=${settings.fsync} wal_sync_method=${settings.wal_sync_method} shared_buffers=${settings.shared_buffers}`,
  );
  // Each row's ratio is to the anchor run just before it.
  const anchorBefore = (i: number) => rows.slice(0, i + 1).findLast((r) => r.target === 'anchor')?.rps;
  const table = [
    header,
    ...rows.map((r, i) => [
      r.name,
      r.rps.toFixed(0),
      anchorBefore(i) ? (r.rps / anchorBefore(i)!).toFixed(2) : '-',
      String(r.p50),
      String(r.p99),
      String(r.ok),
      String(r.other),
      r.load,
      r.cpu,
      r.capacity.toFixed(0),
      r.stored,
    ]),
  ];
  const widths = header.map((_, c) => Math.max(...table.map((r) => r[c]!.length)));
  for (const r of table)
    console.log(r.map((cell, c) => (c === 0 || c === r.length - 1 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '));
}

console.log('');
for (const { kind, pairs } of results) {
  if (!pairs.length) continue;
  const ratios = (of: (p: (typeof pairs)[number]) => number) =>
    `median ratio ${median(pairs.map((p) => p.ours / of(p))).toFixed(2)} (each: ${pairs.map((p) => (p.ours / of(p)).toFixed(2)).join(', ')})`;
  console.log(
    `${kind}: (a) over ${pairs.length} alternating round(s): median ${median(pairs.map((p) => p.ours)).toFixed(0)}/s; ` +
      `against the naive anchor's ${median(pairs.map((p) => p.anchor)).toFixed(0)}/s ${ratios((p) => p.anchor)}; ` +
      `against the pg-boss send anchor's ${median(pairs.map((p) => p.send)).toFixed(0)}/s ${ratios((p) => p.send)}`,
  );
}
