import t from 'tap';
import { sandbox } from './harness.ts';

t.test('Limits: rate limit with the three X-Rate-Limit headers and 429 until the reset time', async (t) => {
  const c = await sandbox(t, { variants: 2, rateLimit: 5, rateWindowSeconds: 300, manualClock: true });
  const first = await c.get('/variants');
  t.equal(first.headers.get('x-rate-limit-limit'), '5');
  t.equal(first.headers.get('x-rate-limit-remaining'), '4');
  const reset = Number(first.headers.get('x-rate-limit-reset'));
  t.ok(
    Number.isInteger(reset) && reset >= Math.floor(Date.now() / 1000) + 299 && reset <= Math.ceil(Date.now() / 1000) + 301,
    'reset is a real Unix time ~300 s away',
  );
  for (let i = 0; i < 4; i++) await c.get('/variants');
  const limited = await c.get('/variants');
  t.equal(limited.status, 429);
  t.equal(limited.headers.get('x-rate-limit-remaining'), '0');
  t.ok(limited.headers.get('x-request-id'));
  t.equal((await c.call('POST', '/products', { product: { name: 'x' } })).status, 429, 'writes too');
  const stats = (await c.admin('GET', 'stats')).body;
  t.equal(stats.rate_limited, 2);
  await c.admin('POST', 'clock', { advance_seconds: 299 });
  t.equal((await c.get('/variants')).status, 429, 'still limited before the reset');
  await c.admin('POST', 'clock', { advance_seconds: 1 });
  const again = await c.get('/variants');
  t.equal(again.status, 200, 'a new window after the reset');
  t.equal(again.headers.get('x-rate-limit-remaining'), '4');
});

t.test('Limits: every API response carries the rate headers and X-Request-ID, errors included', async (t) => {
  const c = await sandbox(t, { variants: 2 });
  for (const r of [
    await c.get('/variants'),
    await c.get('/variants/1'),
    await c.call('POST', '/companies', { company: {} }),
    await c.get('/nowhere'),
  ]) {
    t.ok(r.headers.get('x-request-id'), `${r.status} has X-Request-ID`);
    for (const h of ['x-rate-limit-limit', 'x-rate-limit-remaining', 'x-rate-limit-reset'])
      t.match(r.headers.get(h), /^\d+$/, `${r.status} has ${h}`);
  }
});

t.test('Limits: the rate window shrinks with the time scale; its reset is in real seconds', async (t) => {
  const c = await sandbox(t, { variants: 2, rateLimit: 2, timeScale: 100 }); // 300 s window = 3 real seconds
  await c.get('/variants');
  const r = await c.get('/variants');
  const reset = Number(r.headers.get('x-rate-limit-reset'));
  t.ok(reset <= Math.ceil(Date.now() / 1000) + 4, 'reset within ~3 real seconds');
  t.equal((await c.get('/variants')).status, 429);
  await new Promise((res) => setTimeout(res, Math.max(0, reset * 1000 - Date.now()) + 50));
  t.equal((await c.get('/variants')).status, 200);
});

t.test('Limits: the rate limit is per application and account; the admin API is outside it', async (t) => {
  const c = await sandbox(t, { variants: 2, rateLimit: 2, manualClock: true });
  const other = (await c.admin('POST', 'tokens', { application_id: 2 })).body.token;
  await c.get('/variants');
  await c.get('/variants');
  t.equal((await c.get('/variants')).status, 429);
  const r = await fetch(`${c.sb.url}/variants`, { headers: { Authorization: `Bearer ${other}` } });
  t.equal(r.status, 200, 'another application has its own budget');
  t.equal((await c.admin('GET', 'stats')).status, 200);
});

t.test('Limits: idempotency keys under both header names; a retry returns the first answer and creates nothing', async (t) => {
  const c = await sandbox(t, { variants: 2, manualClock: true });
  for (const header of ['Idempotency-Key', 'HTTP_IDEMPOTENCY_KEY']) {
    const key = `k-${header}`;
    const before = (await c.admin('GET', 'snapshot?resource=products')).body.products.length;
    const a = await c.call('POST', '/products', { product: { name: 'once' } }, { [header]: key });
    const b = await c.call('POST', '/products', { product: { name: 'once' } }, { [header]: key });
    t.equal(a.status, 201);
    t.equal(b.status, 201);
    t.same(b.body, a.body, `${header}: same answer`);
    t.equal((await c.admin('GET', 'snapshot?resource=products')).body.products.length, before + 1, `${header}: one record`);
  }
  const v = (await c.get('/variants?limit=1')).body.variants[0];
  const loc = v.locations[0].location_id;
  const adj = {
    stock_adjustment: {
      stock_location_id: loc,
      reason: 'supplier',
      stock_adjustment_line_items: [{ variant_id: v.id, quantity: '1', price: '1' }],
    },
  };
  await c.call('POST', '/stock_adjustments', adj, { 'Idempotency-Key': 'adj' });
  await c.call('POST', '/stock_adjustments', adj, { 'Idempotency-Key': 'adj' });
  t.equal(
    (await c.get(`/variants/${v.id}`)).body.variant.locations[0].stock_on_hand,
    String(Number(v.locations[0].stock_on_hand) + 1),
    'stock moved once',
  );
  const p = await c.call('PUT', `/variants/${v.id}`, { variant: { name: 'a' } }, { 'Idempotency-Key': 'put' });
  t.equal(p.status, 204);
  t.equal((await c.call('PUT', `/variants/${v.id}`, { variant: { name: 'b' } }, { 'Idempotency-Key': 'put' })).status, 204);
  t.equal((await c.get(`/variants/${v.id}`)).body.variant.name, 'a', 'the retried PUT was not performed again');
  t.equal(
    (await c.call('POST', '/companies', { company: { name: 'x', company_type: 'business' } }, { 'Idempotency-Key': 'put' })).status,
    422,
    'a key reused for another request',
  );
  await c.admin('POST', 'clock', { advance_seconds: 24 * 3600 });
  const fresh = await c.call('POST', '/products', { product: { name: 'once' } }, { 'Idempotency-Key': 'k-Idempotency-Key' });
  t.equal(fresh.status, 201);
  t.not(
    fresh.body.product.id,
    (await c.admin('GET', 'snapshot?resource=products')).body.products.at(-2).id,
    'after 24 h the key is forgotten',
  );
});

t.test('Errors: 422 with per-field messages in the documented body', async (t) => {
  const c = await sandbox(t, { variants: 2 });
  const r = await c.call('POST', '/addresses', { address: { city: 'x' } });
  t.equal(r.status, 422);
  t.same(Object.keys(r.body), ['errors'], 'no top-level error (real-service-notes §6)');
  t.same(r.body.errors, { company_id: ["can't be blank"], address1: ["can't be blank"] });
  const c2 = await c.call('POST', '/companies', { company: { name: 'x', company_type: 'alien' } });
  t.same(c2.body.errors, { company_type: ['is not included in the list'] });
  const bad = await c.call('POST', '/variants', { variant: { product_id: 'abc' } });
  t.equal(bad.status, 422);
});

t.test('Errors: 400 malformed, 404 unknown, every response with a unique X-Request-ID', async (t) => {
  const c = await sandbox(t, { variants: 2 });
  const malformed = await fetch(`${c.sb.url}/products`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${c.sb.token}`, 'Content-Type': 'application/json' },
    body: '{not json',
  });
  t.equal(malformed.status, 400);
  t.match(await malformed.json(), { error: String });
  t.equal((await c.call('POST', '/products', { name: 'unwrapped' })).status, 400, 'a write body must be wrapped under the singular key');
  const plain = await fetch(`${c.sb.url}/products`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${c.sb.token}` },
    body: JSON.stringify({ product: { name: 'x' } }),
  });
  t.equal(plain.status, 400, 'a body without Content-Type: application/json');
  const missing = await c.get('/variants/999999');
  t.equal(missing.status, 404);
  t.match(missing.body, { error: String });
  t.equal((await c.get('/nothing')).status, 404);
  const ids = new Set<string>();
  for (const r of [malformed, missing.headers, await c.get('/variants')].map((x) => ('headers' in x ? x.headers : x) as Headers))
    ids.add(r.get('x-request-id')!);
  t.equal(ids.size, 3);
});

t.test('Common behaviour: unknown fields ignored, read-only fields not writable, soft deletion to archived', async (t) => {
  const c = await sandbox(t, { variants: 2 });
  const p = await c.call('POST', '/products', {
    product: { name: 'P', id: 5, created_at: '2000-01-01T00:00:00.000Z', variant_ids: [1], bogus: true },
  });
  t.equal(p.status, 201);
  t.not(p.body.product.id, 5);
  t.same(p.body.product.variant_ids, []);
  t.notOk('bogus' in p.body.product);
  t.match(p.body.product.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.equal((await c.call('DELETE', `/products/${p.body.product.id}`)).status, 204);
  t.equal((await c.get(`/products/${p.body.product.id}`)).body.product.status, 'archived');
  const co = (await c.call('POST', '/companies', { company: { name: 'Gone', company_type: 'business' } })).body.company;
  t.equal((await c.call('DELETE', `/companies/${co.id}`)).status, 204);
  t.equal((await c.get(`/companies/${co.id}`)).status, 404, 'companies are deleted permanently');
  t.equal((await c.call('PUT', `/companies/${co.id}`, { company: { name: 'x' } })).status, 404);
});

t.test('Errors: 402 while the subscription has lapsed', async (t) => {
  const c = await sandbox(t, { variants: 2 });
  await c.admin('POST', 'account', { lapsed: true });
  const r = await c.get('/variants');
  t.equal(r.status, 402);
  t.match(r.body, { error: /lapsed/ });
  await c.admin('POST', 'account', { lapsed: false });
  t.equal((await c.get('/variants')).status, 200);
});

t.test('Time and faults: injected 500 and 503, latency, lost answers, limited to routes', async (t) => {
  const c = await sandbox(t, { variants: 2 });
  await c.admin('POST', 'faults', { responses: { error_500: 1, routes: '^GET /variants' } });
  t.equal((await c.get('/variants')).status, 500);
  t.equal((await c.get('/products')).status, 200, 'other routes unaffected');
  await c.admin('POST', 'faults', { responses: { error_503: 1 } });
  const r503 = await c.get('/products');
  t.equal(r503.status, 503);
  t.ok(r503.headers.get('x-request-id'));
  await c.admin('POST', 'faults', { responses: { lose_response: 1, routes: '^POST /products' } });
  await t.rejects(c.call('POST', '/products', { product: { name: 'lost' } }, { 'Idempotency-Key': 'lost-1' }), 'no answer');
  await c.admin('POST', 'faults', {});
  const retry = await c.call('POST', '/products', { product: { name: 'lost' } }, { 'Idempotency-Key': 'lost-1' });
  t.equal(retry.status, 201, 'the retry gets the first answer');
  t.equal(
    (await c.admin('GET', 'snapshot?resource=products')).body.products.filter((p: any) => p.name === 'lost').length,
    1,
    'performed once',
  );
  await c.admin('POST', 'faults', { responses: { latency_ms: 150 } });
  const t0 = Date.now();
  await c.get('/products');
  t.ok(Date.now() - t0 >= 140, 'latency added');
  t.equal((await c.admin('POST', 'faults', { responses: { error_500: 2 } })).status, 422, 'probabilities are 0..1');
});
