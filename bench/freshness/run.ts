// Stock freshness at the real rate limit: how long after stock moves at the service does our mirror (and so the
// channel quantity) move. One sandbox account at real time and 300 requests / 300 s, a receiver and a worker as
// separate processes, merchant activity of all kinds at each rate in turn (a fresh world per rate). Prints the
// stock lag percentiles beside the floor, requests per minute and per changed variant, answers of 429, and
// whether the incremental sweeps ran on schedule.
//
//   node_modules/.bin/node bench/freshness/run.ts [--rates 1,2,5,10] [--minutes 5] [--variants 500]
//       [--profile spec|documented] [--sweep-minutes 5] [--clock-skew=SECONDS] [--list-order created|updated]
//       [--spender SHARE]
//
// --spender: a script with another token of the same application (the quota is the application's and account's,
// real-service-notes section 7) spends SHARE (0.5: half) of every window, one request at a time over its first
// 85% (test/support/spender.ts); the 429 column counts ours and its own apart.
// --clock-skew: the sandbox's Date header runs that many seconds ahead of its webhooks' clock (negative: behind).
// The moves slower than 15 s (at most 20) are explained from the database: bench/freshness/tail.ts.
//
// Set DATABASE_URL to use an existing PostgreSQL (it creates and drops a scratch database per rate).
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { createLogger } from '../../src/log.ts';
import type { ListOrder } from '@commerce-sync/sandbox';
import { channelEndpoint } from '../../test/support/channel-endpoint.ts';
import { startSpender, type Spender } from '../../test/support/spender.ts';
import { floorLags, postLags, StockLag, type StockArrivals } from './lag.ts';
import { explainTail } from './tail.ts';
import { cpuSeconds, percentile, postgresCpuSeconds, settled, startWorld, takeMoves } from './world.ts';

const { values: args } = parseArgs({
  options: {
    rates: { type: 'string', default: '1,2,5,10' },
    minutes: { type: 'string', default: '5' },
    variants: { type: 'string', default: '500' },
    profile: { type: 'string' },
    'sweep-minutes': { type: 'string', default: '5' },
    'clock-skew': { type: 'string', default: '0' },
    'list-order': { type: 'string' },
    spender: { type: 'string', default: '0' },
  },
});
const rates = args.rates!.split(',').map(Number);
const minutes = Number(args.minutes);
const sweepMinutes = Number(args['sweep-minutes']);
const clockSkew = Number(args['clock-skew']);
if (!Number.isFinite(clockSkew)) throw new Error('--clock-skew takes a number of seconds');
const spenderShare = Number(args.spender);
if (!(spenderShare >= 0 && spenderShare < 1)) throw new Error('--spender takes a share of the window, from 0 to below 1');
if (rates.some((r) => !(r > 0)) || !(minutes > 0)) throw new Error('--rates takes positive numbers, --minutes a positive number');
const log = createLogger('warn', { destination: process.stderr, pretty: false });
const WINDOW_S = 300,
  LIMIT = 300;
const s = (ms: number) => (Number.isFinite(ms) ? (ms / 1000).toFixed(1) : '-');

console.log(
  `freshness: ${minutes} min per rate, rates ${rates.join(', ')} operations/s, ${args.variants} variants, ` +
    `${LIMIT} requests / ${WINDOW_S} s, time scale 1${args.profile ? `, sandbox profile ${args.profile}` : ''}` +
    `, API clock ${clockSkew >= 0 ? '+' : ''}${clockSkew} s${args['list-order'] ? `, lists by ${args['list-order']}` : ''}` +
    (spenderShare ? `, another client of the application spending ${Math.round(spenderShare * 100)}% of every window` : ''),
);
console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(1)} GB, node ${process.version}`);
const rows: string[][] = [];
const head = [
  'ops/s',
  'moves',
  'variants',
  'p50 s',
  'p95 s',
  'p99 s',
  'max s',
  'floor p50/p95/max s',
  'open',
  'req/min',
  'req/variant',
  '429',
  'sweeps',
  'worker CPU %',
  'pg CPU %',
];

// The channel's endpoint (the default channel's destination, CHANNEL_WEBHOOK_URL): every POST verified with the
// standardwebhooks package; per variant, when each change it carried arrived.
const channelSecret = `whsec_${randomBytes(32).toString('base64')}`;
const arrivals: StockArrivals = new Map();
const { server: endpoint, refused } = channelEndpoint(channelSecret, ({ payload, arrived }) => {
  for (const c of payload.data.changes) {
    const list = arrivals.get(c.variant_id) ?? [];
    list.push({ changeAt: Date.parse(c.at), arrived });
    arrivals.set(c.variant_id, list);
  }
});
await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', r));
const channelUrl = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/stock`;
const postRows: string[][] = [];

for (const rate of rates) {
  arrivals.clear();
  refused.length = 0;
  const world = await startWorld({
    name: `fresh${String(rate).replace('.', '_')}`,
    accounts: 1,
    variants: Number(args.variants),
    profile: args.profile,
    sandbox: { clockSkewSeconds: clockSkew, ...(args['list-order'] ? { listOrder: args['list-order'] as ListOrder } : {}) },
    env: {
      RECONCILE_INTERVAL_MINUTES: String(sweepMinutes),
      CHANNEL_WEBHOOK_URL: channelUrl,
      CHANNEL_WEBHOOK_SECRET: channelSecret,
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
    },
    log,
  });
  const [account] = world.accounts;
  await settled(world);
  let spender: Spender | null = null;
  if (spenderShare) {
    const { token } = await account!.admin('POST', 'tokens', { application_id: 1 });
    spender = startSpender(account!.sandbox.url, token, { limit: LIMIT, windowMs: WINDOW_S * 1000, share: spenderShare, mode: 'steady' });
  }
  const stats0 = await account!.admin('GET', 'stats');
  const start = Date.now();
  const cpu0 = { worker: cpuSeconds(world.worker.pid), pg: postgresCpuSeconds(world.database.postmaster) };
  const lag = new StockLag();
  const cursors = new Map<number, number>();
  await takeMoves(account!, cursors); // skip the moves of the set-up
  let stopped = false;
  // Activity every 100 ms; the moves it made are listed as soon as the call returns.
  const load = (async () => {
    let due = 0;
    while (!stopped) {
      due += rate / 10;
      const n = Math.floor(due);
      due -= n;
      if (n > 0) {
        await account!.admin('POST', 'activity', { operations: n }).catch(() => {});
        lag.add(account!.connectionId, await takeMoves(account!, cursors));
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const poll = () => lag.check(world.db);
  let nextReport = start + 60_000;
  while (Date.now() - start < minutes * 60_000) {
    await poll();
    if (Date.now() >= nextReport) {
      nextReport += 60_000;
      console.log(
        `  ${rate}/s, minute ${Math.round((Date.now() - start) / 60_000)}: ${lag.times.length} moves, ${lag.all().length} caught up, ` +
          `${lag.open} open (oldest ${s(lag.oldestOpenMs())} s)`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  stopped = true;
  await load;
  const elapsed = Date.now() - start;
  await spender?.stop();
  const stats1 = await account!.admin('GET', 'stats');
  const spent = [...(spender?.byWindow.values() ?? [])].reduce((a, w) => ({ ok: a.ok + w.ok, limited: a.limited + w.limited }), {
    ok: 0,
    limited: 0,
  });
  const cpu1 = { worker: cpuSeconds(world.worker.pid), pg: postgresCpuSeconds(world.database.postmaster) };
  // Moves made near the end still count: give them a minute to be caught up.
  for (const end = Date.now() + 60_000; lag.open && Date.now() < end; ) {
    await poll();
    await new Promise((r) => setTimeout(r, 250));
  }
  const sweeps = (
    await sql<{ n: number }>`SELECT count(*)::int AS n FROM sync_log WHERE action = 'sweep' AND at >= ${new Date(start)}`.execute(world.db)
  ).rows[0]!.n;
  const expectedSweeps = Math.floor(minutes / sweepMinutes);
  const sorted = lag.all();
  const floor = floorLags(lag.times, (WINDOW_S / LIMIT) * 1000, start).sort((a, b) => a - b);
  const requests = stats1.requests.total - stats0.requests.total - spent.ok - spent.limited;
  const byRoute = Object.entries(stats1.requests.by_route as Record<string, number>)
    .map(([r, n]) => [r, n - (stats0.requests.by_route[r] ?? 0)] as const)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1]);
  rows.push([
    String(rate),
    String(lag.times.length),
    String(lag.variants.size),
    s(percentile(sorted, 50)),
    s(percentile(sorted, 95)),
    s(percentile(sorted, 99)),
    s(sorted.at(-1) ?? NaN),
    `${s(percentile(floor, 50))} / ${s(percentile(floor, 95))} / ${s(floor.at(-1) ?? NaN)}`,
    String(lag.open),
    (requests / (elapsed / 60_000)).toFixed(1),
    lag.variants.size ? (requests / lag.variants.size).toFixed(3) : '-',
    spender
      ? `${stats1.rate_limited - stats0.rate_limited - spent.limited} (+${spent.limited})`
      : String(stats1.rate_limited - stats0.rate_limited),
    `${sweeps}/${expectedSweeps}`,
    ((100 * (cpu1.worker - cpu0.worker)) / (elapsed / 1000)).toFixed(1),
    cpu1.pg === null || cpu0.pg === null ? '-' : ((100 * (cpu1.pg - cpu0.pg)) / (elapsed / 1000)).toFixed(1),
  ]);
  if (spender) console.log(`  ${rate}/s the other client: ${spent.ok} requests answered, ${spent.limited} refused (429)`);
  console.log(`  ${rate}/s requests by route: ${byRoute.map(([r, n]) => `${r} ${n}`).join(', ')}`);
  console.log(`  ${rate}/s the moves at or above p95, by the operation that made them: ${lag.tailCauses(percentile(sorted, 95))}`);
  const slow = lag.slowest(20).filter((m) => m.lag >= 15_000);
  console.log(`  ${rate}/s moves caught up 15 s or more after they happened: ${slow.length}${slow.length ? ', why:' : ''}`);
  for (const line of await explainTail(world.db, slow)) console.log(`    ${line}`);
  // Give the last POSTs a moment.
  await new Promise((r) => setTimeout(r, 3000));
  const posted = postLags(lag.caught, arrivals);
  postRows.push([
    String(rate),
    String(posted.length),
    s(percentile(posted, 50)),
    s(percentile(posted, 95)),
    s(percentile(posted, 99)),
    s(posted.at(-1) ?? NaN),
    String(refused.length),
  ]);
  await world.close();
}
endpoint.closeAllConnections();
endpoint.close();

console.log('\nstock lag: from a move at the service to the mirror row showing it (the channel quantity is recomputed in that write)');
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
console.log(head.map((h, i) => h.padStart(widths[i]!)).join('  '));
for (const r of rows) console.log(r.map((c, i) => c.padStart(widths[i]!)).join('  '));
console.log('open: moves not caught up a minute after the load stopped. floor: every changed variant read in the next request slot.');
console.log("\nthe number a channel feels: from a move at the service to the POST at the channel's endpoint carrying it");
const postHead = ['ops/s', 'moves posted', 'p50 s', 'p95 s', 'p99 s', 'max s', 'refused'];
const postWidths = postHead.map((h, i) => Math.max(h.length, ...postRows.map((r) => r[i]!.length)));
console.log(postHead.map((h, i) => h.padStart(postWidths[i]!)).join('  '));
for (const r of postRows) console.log(r.map((c, i) => c.padStart(postWidths[i]!)).join('  '));
console.log('moves posted: moves whose mirror write changed the channel quantity (a move that leaves it as it was makes no POST).');
