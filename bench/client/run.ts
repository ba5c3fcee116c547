// API client benchmark: requests used and time taken to read N variants (default 10,000) from the sandbox
// (a) by id (getByIds: ids=... in batches of 250) and (b) by full list (paginate, limit=250), each printed
// beside the bound ceil(N/250); then (c) the same by-id read repeated until the budget of 300 per window runs
// out, to show the wait for the reset and the absence of 429s. The sandbox runs with a time scale (default 100:
// a 300-second window lasts 3 s). Run:
//   node_modules/.bin/node bench/client/run.ts [--variants 10000] [--time-scale 100] [--rounds 9]
// Uses DATABASE_URL when set (a server you own: it creates and drops a database), else an embedded PostgreSQL.
import { scratchDatabase } from '../support/database.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { addTokenConnection, clientFor } from '../../src/api/connections.ts';
import { loadConfig } from '../../src/config.ts';
import { listBudgets } from '../../src/db/budgets.ts';
import { createDb, createPool } from '../../src/db/index.ts';
import { createLogger } from '../../src/log.ts';
import { startSandbox } from '@commerce-sync/sandbox';
import { ClientState } from '../../src/api/client-state.ts';

const { values: args } = parseArgs({
  options: {
    variants: { type: 'string', default: '10000' },
    'time-scale': { type: 'string', default: '100' },
    rounds: { type: 'string', default: '9' },
  },
});
const n = Number(args.variants);
const log = createLogger('warn', { destination: process.stderr, pretty: false });
const dir = await mkdtemp(join(os.tmpdir(), 'cs-bench-client-'));

const scratch = await scratchDatabase('client', log);
const url = scratch.url;
const pool = createPool(url.toString(), 8);
const db = createDb(pool);

const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn', DATA_DIR: dir, DATABASE_URL: url.toString() });
const deps = { db, config, log, clients: new ClientState() };
const started = performance.now();
const sandbox = await startSandbox({ variants: n, timeScale: Number(args['time-scale']), log });
const seedMs = performance.now() - started;
const stats = async () =>
  (await (await fetch(`${sandbox.url}/__sandbox/stats`, { headers: { Authorization: `Bearer ${sandbox.adminToken}` } })).json()) as any;
const snapshot = (await (
  await fetch(`${sandbox.url}/__sandbox/snapshot?resource=variants`, { headers: { Authorization: `Bearer ${sandbox.adminToken}` } })
).json()) as any;
const ids: number[] = snapshot.variants.filter((v: any) => v.status !== 'archived').map((v: any) => v.id);
const connection = await addTokenConnection(deps, { baseUrl: sandbox.url, token: sandbox.token, name: 'bench' });
const client = await clientFor(deps, connection);
const bound = Math.ceil(ids.length / 250);

const rows: string[][] = [['read', 'records', 'requests', 'ceil(N/250)', 'seconds', '429s']];
async function measure(name: string, fn: () => Promise<{ records: number; requests: number }>) {
  const before = await stats();
  const t0 = performance.now();
  const r = await fn();
  const seconds = (performance.now() - t0) / 1000;
  const after = await stats();
  const sent = after.requests.total - before.requests.total;
  if (sent !== r.requests) log.warn({ sent, counted: r.requests }, 'the client and the sandbox count differently');
  rows.push([
    name,
    String(r.records),
    String(sent),
    String(name.startsWith('by id x') ? bound * Number(name.slice(7)) : bound),
    seconds.toFixed(2),
    String((after.requests.by_status['429'] ?? 0) - (before.requests.by_status['429'] ?? 0)),
  ]);
}

await measure('by id', async () => {
  const r = await client.getByIds('/variants', ids, { priority: 'reconcile' });
  return { records: r.records.length, requests: r.requests };
});
await measure('full list', async () => {
  let records = 0,
    requests = 0;
  for await (const page of client.paginate('/variants', { priority: 'reconcile' })) {
    records += page.records.length;
    requests++;
  }
  return { records, requests };
});
const rounds = Number(args.rounds);
await measure(`by id x${rounds}`, async () => {
  let records = 0,
    requests = 0;
  for (let i = 0; i < rounds; i++) {
    const r = await client.getByIds('/variants', ids);
    records += r.records.length;
    requests += r.requests;
  }
  return { records, requests };
});

const cpus = os.cpus();
console.log(
  `machine: ${cpus.length} x ${cpus[0]?.model ?? 'unknown cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
);
console.log(
  `sandbox: ${ids.length} active variants (seeded in ${(seedMs / 1000).toFixed(1)} s), rate 300 per 300 s at time scale ${args['time-scale']} (window ${(300 / Number(args['time-scale'])).toFixed(1)} s real)`,
);
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
for (const r of rows) console.log(r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '));
const [budget] = await listBudgets(db);
if (!budget) throw new Error('no budget row');
console.log(
  `budget row: remaining ${budget.remaining}/${budget.request_limit}, accounting errors ${budget.accounting_errors}, requests ${budget.requests_total}`,
);

await sandbox.close();
await db.destroy();
await scratch.close();
await rm(dir, { recursive: true, force: true });
