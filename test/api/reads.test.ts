// Reads against the sandbox over HTTP: pagination, ids batching, URI limits, 503 and 500 faults.
import t from 'tap';
import { ApiError } from '../../src/api/errors.ts';
import { collect, setup } from './harness.ts';

t.test('full list: limit=250 pages, every record once, quantities as strings, sideloads beside', async (t) => {
  const s = await setup(t, { sandbox: { variants: 600 } });
  const before = (await s.stats()).requests.total;
  const variants = await collect(s.client.paginate<any>('/variants'));
  const snapshot = (await s.admin('GET', 'snapshot?resource=variants')).variants.filter((v: any) => v.status !== 'archived');
  t.equal(variants.length, snapshot.length);
  t.same(new Set(variants.map((v) => v.id)), new Set(snapshot.map((v: any) => v.id)));
  t.equal((await s.stats()).requests.total - before, Math.ceil(snapshot.length / 250), 'ceil(N/250) requests');
  const withStock = variants.find((v) => Array.isArray(v.locations) && v.locations.length);
  t.type(withStock.locations[0].stock_on_hand, 'string');
  const product = await s.client.get(`/products/${variants[0].product_id}`, { query: { include: 'variants' } });
  t.ok(product.product && Array.isArray(product.variants), 'single GET with include returns the sideload');
});

t.test('getByIds: <=250 ids per request, URIs under API_MAX_URI_LENGTH, missing ids absent', async (t) => {
  const s = await setup(t, { sandbox: { variants: 700, maxUriLength: 1200 }, config: { API_MAX_URI_LENGTH: 1200 } });
  const ids = (await s.admin('GET', 'snapshot?resource=variants')).variants
    .filter((v: any) => v.status !== 'archived')
    .map((v: any) => v.id);
  const wanted = [...ids, 99_999_999];
  const before = await s.stats();
  const r = await s.client.getByIds<any>('/variants', wanted);
  const after = await s.stats();
  t.equal(r.records.length, ids.length);
  t.same(new Set(r.records.map((v) => v.id)), new Set(ids));
  t.equal(after.requests.total - before.requests.total, r.requests);
  t.ok(r.requests > Math.ceil(wanted.length / 250), `URI length forced more requests (${r.requests})`);
  t.notOk(after.requests.by_status['414'], 'no URI was too long');
  const wide = await setup(t, { sandbox: { variants: 700 } });
  const w = await wide.client.getByIds<any>('/variants', ids);
  t.equal(w.requests, Math.ceil(ids.length / 250), 'with room, exactly ceil(N/250)');
});

t.test("a read carries the service's clock: its Date header less the round trip, never after the service read it", async (t) => {
  // A sandbox clock 1000 times faster than ours: an asOf taken from our clock would be minutes behind it.
  const s = await setup(t, { sandbox: { variants: 5, timeScale: 1000 } });
  await new Promise((r) => setTimeout(r, 200));
  const ids = (await s.admin('GET', 'snapshot?resource=variants')).variants.map((v: any) => v.id);
  const read = await s.client.getByIds<any>('/variants', ids);
  const later = await s.client.request('GET', '/variants', { query: { limit: 1 } });
  t.ok(read.asOf !== null && read.asOf > Date.now() + 60_000, 'on the service clock, not ours');
  t.ok(read.asOf! <= Date.parse(later.headers.get('date')!), 'no later than the service stamped an answer after it');
});

t.test('a URI the service finds too long is a 414 error, not retried', async (t) => {
  const s = await setup(t, { sandbox: { maxUriLength: 300 } });
  const err = await s.client
    .get('/variants', { query: { sku: Array.from({ length: 40 }, (_, i) => `SKU-LONG-NAME-${i}`) } })
    .catch((e) => e);
  t.ok(err instanceof ApiError);
  t.equal(err.status, 414);
  t.ok(err.requestId, 'carries X-Request-ID');
  t.equal((await s.stats()).requests.by_status['414'], 1, 'sent once');
});

t.test('503 on a list read halves the page size and the read completes', async (t) => {
  const s = await setup(t, { sandbox: { variants: 600 } });
  await s.admin('POST', 'faults', { responses: { error_503: 0.25, routes: '^GET /variants$' } });
  const variants = await collect(s.client.paginate<any>('/variants'));
  await s.admin('POST', 'faults', {});
  const snapshot = (await s.admin('GET', 'snapshot?resource=variants')).variants.filter((v: any) => v.status !== 'archived');
  t.same(variants.map((v) => v.id).sort(), snapshot.map((v: any) => v.id).sort(), 'every record exactly once');
  t.ok((await s.stats()).requests.by_status['503'] > 0, 'the fault fired');
  const halvings = s.logs.lines().filter((l) => l.msg === 'service overloaded (503); halving the page size');
  t.ok(halvings.length > 0);
  t.equal(halvings[0]!.limit, 250);
  t.equal(halvings[0]!.next, 125);
});

t.test('503 on every answer: halves down to 1, then gives up with the 503', async (t) => {
  const s = await setup(t, { config: { API_MAX_ATTEMPTS: 2 } });
  await s.admin('POST', 'faults', { responses: { error_503: 1, routes: '^GET /variants$' } });
  const err = await collect(s.client.paginate('/variants')).catch((e) => e);
  t.ok(err instanceof ApiError);
  t.equal(err.status, 503);
  const limits = s.logs
    .lines()
    .filter((l) => l.msg === 'service overloaded (503); halving the page size')
    .map((l) => l.next);
  t.same(limits, [125, 63, 32, 16, 8, 4, 2, 1]);
});

t.test('500s are retried with backoff and the read is complete', async (t) => {
  const s = await setup(t, { sandbox: { variants: 600 }, config: { API_MAX_ATTEMPTS: 8 } });
  await s.admin('POST', 'faults', { responses: { error_500: 0.4, routes: '^GET /variants$' } });
  const ids = (await s.admin('GET', 'snapshot?resource=variants')).variants
    .filter((v: any) => v.status !== 'archived')
    .map((v: any) => v.id);
  const r = await s.client.getByIds<any>('/variants', ids);
  const variants = await collect(s.client.paginate<any>('/variants'));
  await s.admin('POST', 'faults', {});
  const stats = await s.stats();
  t.ok(stats.requests.by_status['500'] > 0, 'the fault fired');
  t.equal(new Set(variants.map((v) => v.id)).size, variants.length);
  t.equal(variants.length, ids.length);
  t.equal(r.records.length, ids.length);
  t.equal(stats.rate_limited, 0);
});

t.test('a client error is not retried and carries status, message, field errors and request id', async (t) => {
  const s = await setup(t);
  const err = await s.client.createCompany({ company_type: 'business' }).catch((e) => e);
  t.ok(err instanceof ApiError);
  t.equal(err.status, 422);
  // The 422 body is `{"errors": {...}}` with no message of its own: the message names the fields.
  t.match(err.message, /POST \/companies: 422 request invalid \(\w+: /);
  t.ok(err.fieldErrors && Object.keys(err.fieldErrors).length > 0, JSON.stringify(err.fieldErrors));
  t.ok(err.requestId);
  t.equal(err.retryable, false);
  t.equal((await s.stats()).requests.by_route['POST /companies'], 1);
  const missing = await s.client.get('/companies/987654').catch((e) => e);
  t.equal(missing.status, 404);
});

t.test('a 429 still received: counted as an accounting error, then the request waits for the reset', async (t) => {
  const { metrics } = await import('../../src/metrics.ts');
  // timeScale 100: the 300-second window lasts 3 s. Something outside our accounting spends the window.
  const s = await setup(t, { sandbox: { rateLimit: 5, timeScale: 100 } });
  // (connect already sent one request of the five: GET /accounts/current.)
  for (let i = 0; i < 4; i++) await fetch(`${s.sandbox.url}/accounts/current`, { headers: { Authorization: `Bearer ${s.sandbox.token}` } });
  const account = await s.client.get('/accounts/current');
  t.ok(account.account, 'answered after the reset');
  const stats = await s.stats();
  t.equal(stats.requests.by_status['429'], 1, 'one 429, then no more');
  const budget = await s.database.db.selectFrom('api_budgets').selectAll().executeTakeFirstOrThrow();
  t.equal(budget.accounting_errors, 1);
  const counted = (await metrics.apiAccountingErrors.get()).values.find((v) => v.labels.connection === 'shop');
  t.equal(counted?.value, 1);
  t.ok(s.logs.lines().some((l) => l.level === 40 && String(l.msg).startsWith('rate limit exceeded (429)')));
  const requests = (await metrics.apiRequests.get()).values.filter((v) => v.labels.connection === 'shop');
  t.ok(requests.some((v) => v.labels.status === '429') && requests.some((v) => v.labels.status === '200'));
});
