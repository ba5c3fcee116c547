import t from 'tap';
import { spawn } from 'node:child_process';
import { sandbox, receiver } from './harness.ts';
import type { Teardown } from '../support/teardown.ts';

const strip = (rows: any[]) => rows.map(({ created_at: _c, updated_at: _u, ...r }) => r);

t.test('Admin API: needs the admin token and stays out of the stats and the rate limit', async (t) => {
  const c = await sandbox(t, { variants: 5, rateLimit: 1 });
  const anon = await fetch(`${c.sb.url}/__sandbox/stats`);
  t.equal(anon.status, 401);
  await c.get('/variants');
  await c.get('/variants/1');
  await c.get('/variants');
  for (let i = 0; i < 3; i++) t.equal((await c.admin('GET', 'stats')).status, 200);
  const s = (await c.admin('GET', 'stats')).body;
  t.same(s.requests.total, 3);
  t.same(s.requests.by_status, { 200: 1, 429: 2 });
  t.same(s.requests.by_route, { 'GET /variants': 2, 'GET /variants/:id': 1 });
  t.equal(s.rate_limited, 2);
  t.same(Object.keys(s.deliveries).sort(), ['attempted', 'failed', 'pending', 'succeeded']);
});

t.test('Merchant activity: a seeded catalog is deterministic for a seed; reset gives fresh state', async (t) => {
  const a = await sandbox(t, { variants: 40, seed: 7 });
  const b = await sandbox(t, { variants: 40, seed: 7 });
  const other = await sandbox(t, { variants: 40, seed: 8 });
  const snap = async (c: typeof a, r: string) => strip((await c.admin('GET', `snapshot?resource=${r}`)).body[r]);
  for (const r of ['variants', 'products', 'companies', 'orders', 'locations', 'purchase_orders'])
    t.same(await snap(a, r), await snap(b, r), `${r} equal for one seed`);
  t.notSame(await snap(a, 'variants'), await snap(other, 'variants'));
  const variants = (await a.admin('GET', 'snapshot?resource=variants')).body.variants;
  t.equal(variants.length, 40);
  t.ok(
    variants.some((v: any) => v.composite),
    'bundles',
  );
  t.ok(
    variants.some((v: any) => v.locations.length > 1),
    'stock at several locations',
  );
  t.ok((await a.admin('GET', 'snapshot?resource=composition')).body.composition.length > 0);
  const companies = (await a.admin('GET', 'snapshot?resource=companies')).body.companies;
  t.ok(
    companies.some((x: any) => x.company_type === 'supplier') && companies.some((x: any) => x.company_type !== 'supplier'),
    'customers and suppliers',
  );
  await a.call('DELETE', `/variants/${variants[0].id}`);
  const archived = (await a.admin('GET', 'snapshot?resource=variants')).body.variants;
  t.equal(archived.find((v: any) => v.id === variants[0].id).status, 'archived', 'snapshot includes archived');
  t.equal((await a.admin('POST', 'reset', { variants: 3 })).status, 200);
  t.equal((await a.admin('GET', 'snapshot?resource=variants')).body.variants.length, 3);
  t.equal((await a.admin('GET', 'snapshot?resource=nothing')).status, 404);
  const empty = await sandbox(t, { variants: 0 });
  t.same((await empty.get('/variants')).body.variants, [], 'variants: 0 is an empty account');
});

t.test('Merchant activity: operations go through the API code paths and fire webhooks', async (t) => {
  const c = await sandbox(t, { variants: 30 });
  const rx = await receiver(t);
  for (const e of ['order.create', 'variant.stock_level_update', 'variant.create'])
    await c.call('POST', '/webhooks', { webhook: { address: rx.url, event: e } });
  const r = await c.admin('POST', 'activity', {
    operations: 12,
    kinds: [
      'place_order',
      'ship_order',
      'adjust_stock',
      'create_variant',
      'receive_purchase_order',
      'void_order',
      'update_variant',
      'archive_variant',
    ],
  });
  t.equal(r.status, 200);
  t.ok(r.body.performed.length > 0);
  for (const p of r.body.performed) t.match(p, { kind: String, id: Number });
  await c.admin('POST', 'deliveries/flush');
  const events = new Set(rx.got.map((g) => g.json.event));
  t.ok(events.has('variants.stock_level_update'));
  const placed = await c.admin('POST', 'activity', { operations: 3, kinds: ['place_order'] });
  t.equal(placed.body.performed.length, 3);
  await c.admin('POST', 'deliveries/flush');
  for (const p of placed.body.performed)
    t.ok(
      rx.got.some((g) => g.json.event === 'orders.create' && g.json.object_id === p.id),
      `order ${p.id} announced`,
    );
  t.equal((await c.admin('POST', 'activity', { operations: 1, kinds: ['dance'] })).status, 422);
  const log = (await c.admin('GET', 'deliveries?limit=5')).body;
  t.ok(log.length > 0 && log.length <= 5);
  t.match(log[0], { id: String, event: String, object_id: Number, url: rx.url, status: 200, attempt: 1, at: String });
});

t.test('Merchant activity: a rate per second runs by itself', async (t) => {
  const c = await sandbox(t, { variants: 20, activity: 50 });
  const before =
    (await c.admin('GET', 'snapshot?resource=stock_adjustments')).body.stock_adjustments.length +
    (await c.admin('GET', 'snapshot?resource=orders')).body.orders.length;
  await new Promise((r) => setTimeout(r, 400));
  const after =
    (await c.admin('GET', 'snapshot?resource=stock_adjustments')).body.stock_adjustments.length +
    (await c.admin('GET', 'snapshot?resource=orders')).body.orders.length;
  t.ok(after > before);
});

t.test('Time: the manual clock moves only when told (advance or set)', async (t) => {
  const c = await sandbox(t, { variants: 2, manualClock: true });
  const set = await c.admin('POST', 'clock', { set: '2030-01-01T00:00:00.000Z' });
  t.same(set.body, { now: '2030-01-01T00:00:00.000Z', skew_seconds: 0 });
  const p = (await c.call('POST', '/products', { product: { name: 'dated' } })).body.product;
  t.equal(p.created_at, '2030-01-01T00:00:00.000Z');
  t.same((await c.admin('POST', 'clock', { advance_seconds: 90 })).body, { now: '2030-01-01T00:01:30.000Z', skew_seconds: 0 });
  await c.call('PUT', `/products/${p.id}`, { product: { name: 'later' } });
  t.equal((await c.get(`/products/${p.id}`)).body.product.updated_at, '2030-01-01T00:01:30.000Z');
  const found = (await c.get('/products?updated_at_min=2030-01-01T00:01:00.000Z')).body.products;
  t.same(
    found.map((x: any) => x.id),
    [p.id],
  );
});

/** Runs a sandbox process until it has printed its URL, token and admin API; `stop()` sends Ctrl-C and gives the exit code. */
async function runSandbox(
  t: Teardown,
  args: string[],
  env: Record<string, string>,
): Promise<{ url: string; stop(): Promise<number | null> }> {
  const child = spawn(process.execPath, args, { env: { ...process.env, LOG_LEVEL: 'silent', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening at (http:\/\/\S+)/.exec(out);
      if (m && out.includes('admin API')) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
  });
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  return {
    url,
    stop: () => {
      child.kill('SIGINT');
      return exited;
    },
  };
}

t.test('Interface: commerce-sync sandbox prints its base URL and token and runs until Ctrl-C', async (t) => {
  const { url, stop } = await runSandbox(
    t,
    ['src/cli.ts', 'sandbox', '--variants', '3', '--port', '0', '--token', 'cli-token', '--profile', 'spec'],
    { SANDBOX_RATE_LIMIT: '7', SANDBOX_TOKEN: 'env-token' },
  );
  const r = await fetch(`${url}/variants`, { headers: { Authorization: 'Bearer cli-token' } });
  t.equal(r.status, 200);
  t.equal(r.headers.get('x-rate-limit-limit'), '7', 'the environment sets the rate limit');
  t.equal((await fetch(`${url}/variants`, { headers: { Authorization: 'Bearer env-token' } })).status, 401, 'a flag beats the environment');
  t.equal(await stop(), 0);
});

t.test('Interface: the package runs on its own (packages/sandbox/src/main.ts, flags and SANDBOX_* environment)', async (t) => {
  const { url, stop } = await runSandbox(
    t,
    ['packages/sandbox/src/main.ts', '--variants', '3', '--port', '0', '--profile', 'spec', '--activity', '0'],
    { SANDBOX_RATE_LIMIT: '9', SANDBOX_TOKEN: 'alone-token' },
  );
  const r = await fetch(`${url}/variants`, { headers: { Authorization: 'Bearer alone-token' } });
  t.equal(r.status, 200);
  t.equal(r.headers.get('x-rate-limit-limit'), '9', 'the environment sets the rate limit');
  const hook = await fetch(`${url}/webhooks`, {
    method: 'POST',
    headers: { Authorization: 'Bearer alone-token', 'Content-Type': 'application/json' },
    body: JSON.stringify({ webhook: { address: 'https://example.com/h', event: 'order.finalized' } }),
  });
  t.equal(hook.status, 422, '--profile spec');
  t.equal(await stop(), 0);
});
