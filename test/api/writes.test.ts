// Writes against the sandbox: idempotency keys across lost answers, large orders split, typed helpers.
import t from 'tap';
import { ApiError } from '../../src/api/errors.ts';
import { setup } from './harness.ts';

const companiesNamed = async (s: Awaited<ReturnType<typeof setup>>, name: string) =>
  (await s.admin('GET', 'snapshot?resource=companies')).companies.filter((c: any) => c.name === name);

t.test('a POST whose answer is lost is retried with the same key and creates one record', async (t) => {
  const s = await setup(t, { config: { API_MAX_ATTEMPTS: 3 } });
  await s.admin('POST', 'faults', { responses: { lose_response: 1, routes: '^POST /companies$' } });
  const err = await s.client
    .createCompany({ name: 'Lost Answer Ltd', company_type: 'business' }, { idempotencyKey: 'op-1' })
    .catch((e) => e);
  t.ok(err instanceof ApiError);
  t.equal(err.status, null, 'no answer at all');
  t.equal((await s.stats()).requests.by_route['POST /companies'], 3, 'three attempts were sent');
  t.equal((await companiesNamed(s, 'Lost Answer Ltd')).length, 1, 'one record despite three attempts');
  await s.admin('POST', 'faults', {});
  const company = await s.client.createCompany({ name: 'Lost Answer Ltd', company_type: 'business' }, { idempotencyKey: 'op-1' });
  t.equal(company.name, 'Lost Answer Ltd');
  t.equal((await companiesNamed(s, 'Lost Answer Ltd')).length, 1, 'the replay returns the same record');

  // Some answers lost at random: every logical create lands exactly once.
  const s2 = await setup(t, { config: { API_MAX_ATTEMPTS: 10 } });
  await s2.admin('POST', 'faults', { responses: { lose_response: 0.4, routes: '^POST /companies$' } });
  const names = Array.from({ length: 8 }, (_, i) => `Flaky ${i}`);
  await Promise.all(names.map((name) => s2.client.createCompany({ name, company_type: 'business' })));
  const all = (await s2.admin('GET', 'snapshot?resource=companies')).companies.filter((c: any) => c.name.startsWith('Flaky '));
  t.equal(all.length, 8, 'eight records, no duplicates');
  t.ok((await s2.stats()).requests.by_route['POST /companies'] > 8, 'some answers were lost and retried');
});

t.test('an order of more than 150 lines: one create with 150, then PUTs adding the rest', async (t) => {
  const s = await setup(t, { sandbox: { variants: 50 } });
  const variants = (await s.admin('GET', 'snapshot?resource=variants')).variants.filter(
    (v: any) => v.status !== 'archived' && !v.composite,
  );
  const companies = (await s.admin('GET', 'snapshot?resource=companies')).companies;
  const customer = companies.find((c: any) => c.company_type !== 'supplier') ?? companies[0];
  const addresses = (await s.admin('GET', 'snapshot?resource=addresses')).addresses.filter((a: any) => a.company_id === customer.id);
  const lines = Array.from({ length: 340 }, (_, i) => ({ variant_id: variants[i % variants.length].id, quantity: '1' }));
  const input = {
    company_id: customer.id,
    shipping_address_id: addresses[0]?.id,
    currency_iso: 'USD',
    status: 'active',
    issued_at: '2026-11-21',
    order_line_items: lines,
  };
  const order = await s.client.createOrder(input, { idempotencyKey: 'big-order-1' });
  t.type(order.id, 'number');
  const stats = await s.stats();
  t.equal(stats.requests.by_route['POST /orders'], 1);
  t.equal(stats.requests.by_route['PUT /orders/:id'], 2, '150 + 150 + 40');
  const stored = (await s.admin('GET', 'snapshot?resource=order_line_items')).order_line_items.filter((l: any) => l.order_id === order.id);
  t.equal(stored.length, 340, 'every line is on the order');
  // The same operation again (e.g. a job retried after a crash) repeats nothing.
  const again = await s.client.createOrder(input, { idempotencyKey: 'big-order-1' });
  t.equal(again.id, order.id);
  const storedAgain = (await s.admin('GET', 'snapshot?resource=order_line_items')).order_line_items.filter(
    (l: any) => l.order_id === order.id,
  );
  t.equal(storedAgain.length, 340, 'no line added twice');
});

t.test('typed helpers: company, address, currency, webhooks, order actions', async (t) => {
  const s = await setup(t);
  const company = await s.client.createCompany({ name: 'Helper Co', company_type: 'business' });
  const address = await s.client.createAddress({ company_id: company.id, address1: '1 Main St', city: 'Town', country: 'NZ' });
  t.equal(address.company_id, company.id);
  const currency = await s.client.createCurrency({ iso: 'NZD', rate: '1.6500' });
  t.equal(currency.iso, 'NZD');
  t.type(currency.rate, 'string');
  const hook = await s.client.createWebhook({ address: 'http://127.0.0.1:9/webhooks/shop', event: 'order.create' });
  t.ok((await s.client.listWebhooks()).some((w) => w.id === hook.id));
  await s.client.deleteWebhook(hook.id);
  await s.client.deleteWebhook(hook.id); // already gone: not an error
  t.notOk((await s.client.listWebhooks()).some((w) => w.id === hook.id));
  const variant = (await s.admin('GET', 'snapshot?resource=variants')).variants.find((v: any) => v.status !== 'archived' && !v.composite);
  const order = await s.client.createOrder({
    company_id: company.id,
    shipping_address_id: address.id,
    currency_iso: 'USD',
    order_line_items: [{ variant_id: variant.id, quantity: '2' }],
  });
  await s.client.orderAction(order.id, 'invoice');
  await s.client.orderAction(order.id, 'pack');
  await s.client.orderAction(order.id, 'fulfil');
  const posts = Object.keys((await s.stats()).requests.by_route).filter((r) => r.startsWith('POST'));
  t.ok(posts.includes('POST /orders/:id/actions/fulfil'));
});
