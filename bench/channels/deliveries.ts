// What a full sweep that changes every quantity costs the channels' destinations: --variants mirrored
// variants (two stock locations each), three channels with different rules, each with a destination on a local
// endpoint that verifies every POST with the `standardwebhooks` package. Then the sweep: every variant's stock moves,
// written and recomputed 250 variants a transaction as a sweep's pages are, each page's changes announced as the
// sweep announces them, while one worker runtime (src/runtime.ts) delivers. Prints the changes, the POSTs, the jobs,
// the seconds until every destination had caught up, and each change's lag from its commit to the POST that carried
// it (p50, p99, max), beside the machine.
//
//   node_modules/.bin/node bench/channels/deliveries.ts [--variants 100000] [--batch 500]
//
// Set DATABASE_URL to use an existing PostgreSQL (a scratch database is made on it and dropped).
import { channelDeliveryHandler } from '../../src/channels/dispatch.ts';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { channelEndpoint } from '../../test/support/channel-endpoint.ts';
import { loadConfig } from '../../src/config.ts';
import { lastChangeId } from '../../src/db/channels.ts';
import { createDb, createPool } from '../../src/db/index.ts';
import { announceChanges } from '../../src/channels/dispatch.ts';
import { createQueues } from '../../src/queue/queues.ts';
import { workQueues } from '../../src/worker/handlers.ts';
import { createLogger } from '../../src/log.ts';
import { createRuntime } from '../../src/runtime.ts';
import { applyRulesIfChanged, recomputeChannel } from '../../src/stock/recompute.ts';
import { addChannel } from '../../src/channels/channels.ts';
import { setDestination } from '../../src/channels/destinations.ts';
import { rulesFrom } from '../../src/stock/rules.ts';
import { scratchDatabase } from '../support/database.ts';

const { values: args } = parseArgs({
  options: { variants: { type: 'string', default: '100000' }, batch: { type: 'string', default: '500' } },
});
const n = Number(args.variants);
const log = createLogger('warn', { destination: process.stderr, pretty: false });
const scratch = await scratchDatabase('deliveries', log);
const pool = createPool(scratch.url, 8);
const db = createDb(pool);
const config = loadConfig({
  ...process.env,
  DATABASE_URL: scratch.url,
  TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  CHANNEL_DELIVERY_BATCH: args.batch,
  LOG_LEVEL: 'warn',
});
const percentile = (xs: number[], p: number) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? NaN;

// The endpoint: one path per channel, every POST verified; the arrival time of each change it carried.
const secrets: Record<string, string> = {};
const arrivals = new Map<number, number>(); // change id -> ms
let posts = 0;
const { server: endpoint, refused } = channelEndpoint(
  (path) => secrets[path]!,
  ({ payload, arrived }) => {
    posts++;
    for (const c of payload.data.changes) arrivals.set(c.id, arrived);
  },
);
await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', r));
const url = (name: string) => `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/${name}`;

const rt = await createRuntime(config, log, {
  database: { url: scratch.url, pool, db, close: async () => {} },
  boss: { supervise: true, schedule: false, max: 6 },
});
try {
  console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(1)} GB, node ${process.version}`);
  const c = Number(
    (
      await db
        .insertInto('connections')
        .values({ name: 'bench', base_url: 'http://bench', auth_kind: 'token' })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id,
  );
  await sql`INSERT INTO variants (connection_id, id, sku, status, composite, manage_stock, keep_selling, max_online, raw)
    SELECT ${c}, i, 'SKU-' || i, 'active', false, true, false, NULL, '{}' FROM generate_series(1, ${n}) i`.execute(db);
  await sql`INSERT INTO stock_levels (connection_id, variant_id, location_id, on_hand, committed, incoming, raw)
    SELECT ${c}, i, l, (i * l) % 97 + 10, i % 3, 0, '{}' FROM generate_series(1, ${n}) i, generate_series(1, 2) l`.execute(db);
  await sql`ANALYZE`.execute(db);
  await applyRulesIfChanged(db, config, c);
  await addChannel(db, c, { name: 'marketplace', locations: [1], buffer_units: '5' });
  await addChannel(db, c, { name: 'wholesale', buffer_units: '1', buffer_percent: '10' });
  const channels = (await db.selectFrom('channels').select(['id', 'name']).where('connection_id', '=', c).execute()).map((r) => ({
    id: Number(r.id),
    name: r.name,
  }));
  for (const ch of channels) {
    secrets[ch.name] = `whsec_${randomBytes(32).toString('base64')}`;
    await setDestination(db, rt.clients.key(config), ch.id, { url: url(ch.name), secret: secrets[ch.name], from: 'now' }, ['127.0.0.1']);
  }
  const firstChange = Math.max(...(await Promise.all(channels.map((ch) => lastChangeId(db, ch.id))))) + 1;
  await createQueues(rt.boss, config);
  rt.onStop.push(await workQueues(rt.workerDeps(), [channelDeliveryHandler]));
  console.log(
    `${n} variants, 3 channels (${channels.map((ch) => ch.name).join(', ')}), CHANNEL_DELIVERY_BATCH ${config.CHANNEL_DELIVERY_BATCH}`,
  );

  // The sweep: every variant's stock moves; 250 variants a transaction, each page's changes announced.
  const started = Date.now();
  const commits = new Map<number, number>(); // change id -> ms committed
  let changes = 0;
  let newest = firstChange - 1;
  for (let i = 1; i <= n; i += 250) {
    const ids = Array.from({ length: Math.min(250, n - i + 1) }, (_, k) => i + k);
    const made = await db.transaction().execute(async (tx) => {
      await sql`UPDATE stock_levels SET on_hand = on_hand + 7 WHERE connection_id = ${c} AND variant_id BETWEEN ${ids[0]} AND ${ids.at(-1)}`.execute(
        tx,
      );
      return recomputeChannel(tx, rulesFrom(config), c, ids, { kind: 'full-sweep' });
    });
    const now = Date.now();
    // Ids are given at commit (recordChanges): this page's are those after the last page's.
    const fed = await sql<{ id: number }>`SELECT id::int AS id FROM channel_quantity_changes WHERE id > ${newest} ORDER BY id`.execute(db);
    for (const { id } of fed.rows) commits.set(id, now);
    newest = fed.rows.at(-1)?.id ?? newest;
    changes += made.length;
    await announceChanges(rt.workerDeps(), made);
  }
  const swept = Date.now();
  for (;;) {
    const behind = await sql<{
      n: number;
    }>`SELECT coalesce(sum((SELECT count(*) FROM channel_quantity_changes q WHERE q.channel_id = d.channel_id AND q.id > d.cursor)), 0)::int AS n
      FROM channel_destinations d`.execute(db);
    if (behind.rows[0]!.n === 0) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const done = Date.now();
  const jobs = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'channel-delivery'`.execute(db);
  const lags = [...commits].filter(([id]) => id >= firstChange && arrivals.has(id)).map(([id, at]) => arrivals.get(id)! - at);
  console.log(
    `the sweep wrote ${changes} quantity changes in ${((swept - started) / 1000).toFixed(1)} s; every destination caught up ` +
      `${((done - started) / 1000).toFixed(1)} s after it began (${((done - swept) / 1000).toFixed(1)} s after its last page)`,
  );
  console.log(
    `POSTs ${posts} (refused ${refused.length}), channel-delivery jobs ${jobs.rows[0]!.n}, changes per POST ${(changes / Math.max(1, posts)).toFixed(0)}`,
  );
  console.log(
    `lag from a change's commit to the POST that carried it: p50 ${(percentile(lags, 50) / 1000).toFixed(2)} s, ` +
      `p99 ${(percentile(lags, 99) / 1000).toFixed(2)} s, max ${(lags.reduce((m, x) => Math.max(m, x), 0) / 1000).toFixed(2)} s (${lags.length} changes carried at their newest)`,
  );
} finally {
  await rt.stop();
  endpoint.closeAllConnections();
  endpoint.close();
  await db.destroy();
  await scratch.close();
}
