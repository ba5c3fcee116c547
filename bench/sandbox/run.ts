// Sandbox figures: seeding 100,000 variants, serving 250-record pages (p50/p99), and webhook deliveries per
// second to a fast local receiver. Run: node_modules/.bin/node bench/sandbox/run.ts [variants]
import http from 'node:http';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import { startSandbox } from '@commerce-sync/sandbox';

const VARIANTS = Number(process.argv[2] ?? 100_000);
const cpus = os.cpus();
console.log(`machine: ${cpus.length} x ${cpus[0]?.model ?? 'unknown'}, node ${process.version}`);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

let t0 = performance.now();
const sb = await startSandbox({ variants: VARIANTS, rateLimit: 1_000_000_000 });
console.log(`seed ${VARIANTS} variants: ${((performance.now() - t0) / 1000).toFixed(2)} s`);

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const get = (path: string) =>
  new Promise<number>((resolve, reject) => {
    const start = performance.now();
    http
      .get(`${sb.url}${path}`, { agent, headers: { Authorization: `Bearer ${sb.token}` } }, (res) => {
        res.resume();
        res.on('end', () => resolve(performance.now() - start));
      })
      .on('error', reject);
  });

const pages = Math.floor(VARIANTS / 250);
for (const [label, path] of [
  ['page of 250 (list, page N)', (i: number) => `/variants?limit=250&page=${1 + ((i * 7919) % pages)}`],
  [
    'page of 250 (ids=)',
    (i: number) => `/variants?limit=250&ids=${Array.from({ length: 250 }, (_, k) => 5001 + (((i * 250 + k) * 7) % VARIANTS)).join(',')}`,
  ],
  [
    'page of 250 (updated_at_min, newest)',
    () => `/variants?limit=250&updated_at_min=${encodeURIComponent(new Date(Date.now() - 3600_000).toISOString())}`,
  ],
] as const) {
  for (let i = 0; i < 10; i++) await get(path(i)); // warm up
  const times: number[] = [];
  for (let i = 0; i < 200; i++) times.push(await get(path(i)));
  console.log(`${label}: p50 ${pct(times, 50).toFixed(1)} ms, p99 ${pct(times, 99).toFixed(1)} ms`);
}

// Deliveries: a fast receiver, one subscription, stock adjustments of 250 lines (250 events each).
let received = 0;
let done: () => void = () => {};
const receiver = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200).end();
    if (++received >= target) done();
  });
});
receiver.keepAliveTimeout = 30_000;
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
const post = (path: string, body: unknown) =>
  fetch(`${sb.url}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${sb.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
await post('/webhooks', { webhook: { address: hookUrl, event: 'variant.stock_level_update' } });
const target = 20_000;
// Stock variants only (bundles hold no stock of their own).
const snap: any = await (
  await fetch(`${sb.url}/__sandbox/snapshot?resource=variants`, { headers: { Authorization: `Bearer ${sb.adminToken}` } })
).json();
const stockIds: number[] = snap.variants.filter((v: any) => !v.composite).map((v: any) => v.id);
const finished = new Promise<void>((r) => {
  done = r;
});
t0 = performance.now();
for (let batch = 0; batch < target / 250; batch++) {
  const lines = Array.from({ length: 250 }, (_, k) => ({
    variant_id: stockIds[((batch * 250 + k) * 13) % stockIds.length]!,
    quantity: '1',
    price: '1',
  }));
  const r = await post('/stock_adjustments', {
    stock_adjustment: { stock_location_id: 1, reason: 'supplier', stock_adjustment_line_items: lines },
  });
  if (r.status !== 201) throw new Error(`adjustment: ${r.status} ${await r.text()}`);
}
await finished;
const secs = (performance.now() - t0) / 1000;
console.log(`webhook deliveries: ${target} in ${secs.toFixed(2)} s = ${Math.round(target / secs)} per second`);

agent.destroy();
await sb.close();
receiver.close();
receiver.closeAllConnections();
