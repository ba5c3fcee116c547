// Sync-log query plans and timings on 300 000 entries: each console filter should read through an index
// (no Seq Scan). Prints the plans' first lines and the time of each query, plus the machine. No assertions.
// Run: node_modules/.bin/node bench/console/synclog-queries.ts
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { querySyncLog, type LogFilter } from '../../src/console/synclog.ts';
import { createDb, createPool } from '../../src/db/index.ts';
import { startEmbedded } from '../../src/db/embedded.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/log.ts';

const ROWS = 300_000;
const dir = await mkdtemp(join(os.tmpdir(), 'cs-bench-synclog-'));
const e = await startEmbedded(dir, createLogger('warn'));
await migrate(e.url);
const pool = createPool(e.url);
const db = createDb(pool);
await pool.query(`INSERT INTO connections (name, base_url, auth_kind) SELECT 'c' || i, 'http://x', 'token' FROM generate_series(1, 5) i`);
await pool.query(`INSERT INTO sync_log (at, connection_id, resource, record_id, sku, action, outcome)
  SELECT now() - make_interval(secs => i), 1 + i % 5, (ARRAY['variant', 'order', 'fulfillment'])[1 + i % 3], i % 5000, 'SKU-' || (i % 5000), 'x',
         CASE WHEN i % 97 = 0 THEN 'error' ELSE 'ok' END FROM generate_series(1, ${ROWS}) i`);
await pool.query('ANALYZE');

const cases: [string, LogFilter][] = [
  ['newest', {}],
  ['connection', { connectionId: 2 }],
  ['sku', { sku: 'SKU-42' }],
  ['outcome=error', { outcome: 'error' }],
  ['resource', { resource: 'order' }],
  ['record', { connectionId: 3, resource: 'order', recordId: 42 }],
  ['time range', { from: new Date(Date.now() - 3600e3), to: new Date(Date.now() - 1800e3) }],
  ['connection+sku', { connectionId: 3, sku: 'SKU-8' }],
  ['tail catch-up (after id)', { afterId: ROWS - 500 }],
];
console.log(`machine: ${os.cpus().length} x ${os.cpus()[0]?.model}, ${ROWS} sync_log rows, limit 100`);
for (const [name, f] of cases) {
  await querySyncLog(db, { ...f, limit: 100 }); // warm
  const t0 = performance.now();
  const rows = await querySyncLog(db, { ...f, limit: 100 });
  const ms = performance.now() - t0;
  const { rows: plan } = await pool.query(`EXPLAIN ${explainSql(f)}`);
  const scans = plan
    .map((p: Record<string, string>) => p['QUERY PLAN']!)
    .filter((l: string) => /Scan/.test(l))
    .map((l: string) => l.trim().replace(/\s+\(cost.*$/, ''));
  console.log(`${name.padEnd(26)} ${String(rows.length).padStart(3)} rows ${ms.toFixed(2).padStart(7)} ms  ${scans.join(' | ')}`);
}

// The same WHERE/ORDER the query builder produces, with literals, for EXPLAIN.
function explainSql(f: LogFilter): string {
  const w: string[] = [];
  if (f.connectionId !== undefined) w.push(`l.connection_id = ${f.connectionId}`);
  if (f.resource) w.push(`l.resource = '${f.resource}'`);
  if (f.sku) w.push(`l.sku = '${f.sku}'`);
  if (f.outcome) w.push(`l.outcome = '${f.outcome}'`);
  if (f.recordId !== undefined) w.push(`l.record_id = ${f.recordId}`);
  if (f.from) w.push(`l.at >= '${f.from.toISOString()}'`);
  if (f.to) w.push(`l.at < '${new Date(f.to).toISOString()}'`);
  if (f.afterId !== undefined) w.push(`l.id > ${f.afterId}`);
  const order = f.afterId !== undefined ? 'l.id ASC' : 'l.at DESC, l.id DESC';
  return `SELECT l.*, c.name FROM sync_log l LEFT JOIN connections c ON c.id = l.connection_id ${w.length ? `WHERE ${w.join(' AND ')}` : ''} ORDER BY ${order} LIMIT 100`;
}

await db.destroy();
await e.stop();
await rm(dir, { recursive: true, force: true });
