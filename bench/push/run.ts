// Push benchmark: N channel orders (default 100) each imported, shipped and paid through the push queue with the
// worker in this process (WORKER_CONCURRENCY jobs at once), then one stock count over every variant. Prints the
// wall time, operations per second, requests per operation (from the sandbox's stats), 429s (should be 0) and the
// machine. The sandbox runs with a time scale (default 100: a 300-second rate window lasts 3 s). Run:
//   node_modules/.bin/node bench/push/run.ts [--orders 100] [--variants 500] [--time-scale 100] [--concurrency 4]
// Uses DATABASE_URL when set (a server you own: it creates and drops a database), else an embedded PostgreSQL.
import { pushHandler } from '../../src/push/worker.ts';
import { scratchDatabase } from '../support/database.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Decimal } from 'decimal.js';
import { addTokenConnection } from '../../src/api/connections.ts';
import { loadConfig } from '../../src/config.ts';
import { createDb, createPool } from '../../src/db/index.ts';
import { operationsByIds } from '../../src/db/operations.ts';
import { createLogger } from '../../src/log.ts';
import { startSandbox } from '@commerce-sync/sandbox';
import { enqueueOperation } from '../../src/push/enqueue.ts';
import { createQueues } from '../../src/queue/queues.ts';
import { workQueues } from '../../src/worker/handlers.ts';
import { createRuntime } from '../../src/runtime.ts';
import type { PushKind, PushOperation } from '../../src/db/schema.ts';

const { values: args } = parseArgs({
  options: {
    orders: { type: 'string', default: '100' },
    variants: { type: 'string', default: '500' },
    'time-scale': { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '4' },
  },
});
const orders = Number(args.orders);
const log = createLogger('warn', { destination: process.stderr, pretty: false });
const dir = await mkdtemp(join(os.tmpdir(), 'cs-bench-push-'));

const scratch = await scratchDatabase('push', log);
const url = scratch.url;
const pool = createPool(url.toString(), 12);
const db = createDb(pool);
const config = loadConfig({
  ...process.env,
  LOG_LEVEL: 'warn',
  DATA_DIR: dir,
  DATABASE_URL: url.toString(),
  WORKER_CONCURRENCY: args.concurrency,
});
const runtime = await createRuntime(config, log, {
  database: { url: url.toString(), pool, db, close: async () => {} },
  boss: { supervise: true, schedule: false, max: 6 },
});
const rt = runtime.workerDeps();

const sandbox = await startSandbox({ variants: Number(args.variants), locations: 2, timeScale: Number(args['time-scale']), log });
const adminGet = async (path: string) =>
  (await (await fetch(`${sandbox.url}/__sandbox/${path}`, { headers: { Authorization: `Bearer ${sandbox.adminToken}` } })).json()) as any;
const connection = await addTokenConnection(rt, { baseUrl: sandbox.url, token: sandbox.token, name: 'bench' });
const variants = ((await adminGet('snapshot?resource=variants')).variants as any[]).filter(
  (v) => v.sku && v.status !== 'archived' && !v.composite && v.manage_stock !== false,
);
await db
  .insertInto('variants')
  .values(variants.map((v) => ({ connection_id: connection.id, id: v.id, sku: v.sku, status: 'active', raw: JSON.stringify(v) })))
  .execute();
const company = (await adminGet('snapshot?resource=companies')).companies.find((c: any) => c.company_type !== 'supplier');
await createQueues(runtime.boss, config);
runtime.onStop.push(await workQueues(rt, [pushHandler], { pollingIntervalSeconds: 0.5 }));

async function settle(ids: number[]): Promise<PushOperation[]> {
  for (;;) {
    const rows = await operationsByIds(db, ids);
    if (rows.every((r) => r.state === 'confirmed' || r.state === 'failed')) return rows;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function phase(name: string, make: () => Promise<PushOperation[]>) {
  const before = (await adminGet('stats')).requests.total as number;
  const t0 = performance.now();
  const ops = await make();
  const done = await settle(ops.map((o) => o.id));
  const ms = performance.now() - t0;
  const requests = (await adminGet('stats')).requests.total - before;
  const failed = done.filter((o) => o.state === 'failed');
  console.log(
    `${name.padEnd(26)} ${String(ops.length).padStart(5)} ops  ${(ms / 1000).toFixed(2).padStart(7)} s  ` +
      `${(ops.length / (ms / 1000)).toFixed(1).padStart(7)} ops/s  ${(requests / ops.length).toFixed(2).padStart(6)} requests/op` +
      (failed.length ? `  FAILED ${failed.length}: ${failed[0]!.reason}` : ''),
  );
  return done;
}

const enqueue = (kind: PushKind, input: unknown) => enqueueOperation({ db, boss: runtime.boss }, kind, input, connection.id);
console.log(
  `push benchmark: ${orders} orders, ${variants.length} variants, WORKER_CONCURRENCY ${config.WORKER_CONCURRENCY}, sandbox time scale ${args['time-scale']}`,
);
const line = (i: number, k: number) => ({ sku: variants[(i * 3 + k) % variants.length].sku, quantity: String(1 + (k % 2)) });
const t0 = performance.now();
await phase('import-order (3 lines)', () =>
  Promise.all(
    Array.from({ length: orders }, (_, i) =>
      enqueue('import-order', {
        channel: 'bench',
        channel_order_id: `O-${i}`,
        customer: { company_id: company.id },
        currency: 'SGD',
        issued_at: '2026-11-21',
        lines: [line(i, 0), line(i, 1), line(i, 2)],
      }),
    ),
  ),
);
await phase('ship (pack + fulfil)', () =>
  Promise.all(
    Array.from({ length: orders }, (_, i) =>
      enqueue('ship', { channel: 'bench', channel_order_id: `O-${i}`, tracking: { company: 'DHL', number: `T-${i}` } }),
    ),
  ),
);
await phase('pay', () =>
  Promise.all(Array.from({ length: orders }, (_, i) => enqueue('pay', { channel: 'bench', channel_order_id: `O-${i}` }))),
);
await phase('import + ship + pay queued', async () => {
  const ops: PushOperation[] = [];
  for (let i = 0; i < orders; i++) {
    const ref = { channel: 'bench2', channel_order_id: `P-${i}` };
    ops.push(
      await enqueue('import-order', {
        ...ref,
        customer: { company_id: company.id },
        currency: 'SGD',
        issued_at: '2026-11-21',
        lines: [line(i, 0)],
      }),
    );
    ops.push(await enqueue('ship', ref));
    ops.push(await enqueue('pay', ref));
  }
  return ops;
});
const snap = new Map(((await adminGet('snapshot?resource=variants')).variants as any[]).map((v) => [v.id, v]));
const locId = (await adminGet('snapshot?resource=locations')).locations[0].id;
const [count] = await phase(`stock-count (${variants.length} SKUs)`, async () => [
  await enqueue('stock-count', {
    counts: variants.map((v, i) => {
      const soh = new Decimal(snap.get(v.id)?.locations?.find((l: any) => l.location_id === locId)?.stock_on_hand ?? '0');
      // A third counted as they are (when not negative), the rest one above their absolute stock.
      return { sku: v.sku, location_id: locId, quantity: (i % 3 === 0 && !soh.isNeg() ? soh : soh.abs().plus(1)).toString() };
    }),
  }),
]);
console.log(
  `  stock count: ${(count!.result as any)?.changed_lines} changed lines in ${(count!.result as any)?.adjustments?.length} adjustments, ${(count!.result as any)?.unchanged?.length} unchanged`,
);
const stats = await adminGet('stats');
console.log(
  `total ${((performance.now() - t0) / 1000).toFixed(1)} s, ${stats.requests.total} requests, 429 answers: ${stats.rate_limited}`,
);
console.log(`machine: ${os.cpus().length} x ${os.cpus()[0]?.model}, ${os.platform()} ${os.release()}, node ${process.version}`);

await runtime.stop();
await sandbox.close();
await db.destroy();
await scratch.close();
await rm(dir, { recursive: true, force: true });
