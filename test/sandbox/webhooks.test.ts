import t from 'tap';
import { createHmac } from 'node:crypto';
import { sandbox, receiver, type Client } from './harness.ts';

const subscribe = (c: Client, address: string, event: string) => c.call('POST', '/webhooks', { webhook: { address, event } });

t.test('Events: subscriptions are created, listed, read and deleted', async (t) => {
  const c = await sandbox(t);
  const r = await subscribe(c, 'https://example.com/hooks', 'order.create');
  t.equal(r.status, 201);
  t.match(r.body.webhook, {
    id: Number,
    event: 'order.create',
    address: 'https://example.com/hooks',
    oauth_application_id: Number,
    created_at: /Z$/,
    updated_at: /Z$/,
  });
  const id = r.body.webhook.id;
  t.same(
    (await c.get('/webhooks')).body.webhooks.map((w: any) => w.id),
    [id],
  );
  t.equal((await c.get(`/webhooks/${id}`)).body.webhook.event, 'order.create');
  t.equal((await c.call('DELETE', `/webhooks/${id}`)).status, 204);
  t.equal((await c.get(`/webhooks/${id}`)).status, 404);
  const bad = await subscribe(c, 'https://example.com/hooks', 'order.explode');
  t.equal(bad.status, 422);
  t.ok(bad.body.errors.event);
  t.equal((await subscribe(c, 'not a url', 'order.create')).status, 422);
});

t.test('Events: every listed event is fired by its operation, with the plural event form and a resource_url', async (t) => {
  const c = await sandbox(t, { profile: 'spec' });
  const rx = await receiver(t);
  const events = [
    'product.create',
    'variant.create',
    'variant.stock_level_update',
    'order.create',
    'fulfillment.create',
    'fulfillment_return.create',
    'purchase_order.create',
    'stock_transfer.create',
  ];
  for (const e of events) t.equal((await subscribe(c, rx.url, e)).status, 201);
  const loc = (await c.get('/accounts/current')).body.account.primary_location_id;
  const other = (await c.get('/locations')).body.locations.find((l: any) => l.id !== loc).id;
  const product = (await c.call('POST', '/products', { product: { name: 'Hooked' } })).body.product;
  const v = (
    await c.call('POST', '/variants', {
      variant: { product_id: product.id, initial_stock_levels: [{ location_id: loc, stock_on_hand: 5 }] },
    })
  ).body.variant;
  const co = (await c.get('/companies?company_type=business&limit=1')).body.companies[0];
  const supplier = (await c.get('/companies?company_type=supplier&limit=1')).body.companies[0];
  const o = (
    await c.call('POST', '/orders', {
      order: {
        company_id: co.id,
        shipping_address_id: co.address_ids[0],
        status: 'active',
        order_line_items: [{ variant_id: v.id, quantity: 1 }],
      },
    })
  ).body.order;
  const f = (await c.call('POST', `/orders/${o.id}/actions/pack`)).body.fulfillment;
  await c.call('PUT', `/fulfillments/${f.id}`, { fulfillment: { status: 'fulfilled' } });
  const ret = (
    await c.call('POST', '/fulfillment_returns', {
      fulfillment_return: {
        order_id: o.id,
        fulfillment_return_line_items: [{ order_line_item_id: o.order_line_item_ids[0], quantity: 1 }],
      },
    })
  ).body.fulfillment_return;
  const po = (
    await c.call('POST', '/purchase_orders', {
      purchase_order: { company_id: supplier.id, purchase_order_line_items: [{ variant_id: v.id, quantity: 1 }] },
    })
  ).body.purchase_order;
  const tr = await c.call('POST', '/stock_transfers', {
    stock_transfer: {
      source_location_id: loc,
      destination_location_id: other,
      stock_transfer_line_items: [{ variant_id: v.id, quantity: 1 }],
    },
  });
  t.equal(tr.status, 201);
  const expect: [string, number][] = [
    ['products.create', product.id],
    ['variants.create', v.id],
    ['orders.create', o.id],
    ['fulfillments.create', f.id],
    ['fulfillment_returns.create', ret.id],
    ['purchase_orders.create', po.id],
    ['stock_transfers.create', tr.body.stock_transfer.id],
    ['variants.stock_level_update', v.id],
  ];
  await rx.waitFor(expect.length);
  await c.admin('POST', 'deliveries/flush');
  const got = rx.got.map((g) => g.json);
  for (const [event, id] of expect)
    t.ok(
      got.some((g) => g.event === event && g.object_id === id),
      `${event} ${id}`,
    );
  const resources: Record<string, string> = {
    products: 'product',
    variants: 'variant',
    orders: 'order',
    fulfillments: 'fulfillment',
    fulfillment_returns: 'fulfillment_return',
    purchase_orders: 'purchase_order',
    stock_transfers: 'stock_transfer',
  };
  for (const g of got) {
    t.same(Object.keys(g).sort(), ['event', 'object_id', 'resource_url', 'timestamp']);
    t.ok(Number.isInteger(g.timestamp));
    const plural = g.event.split('.')[0];
    t.equal(g.resource_url, `${c.sb.url}/${plural}/${g.object_id}.json`);
  }
  const one = got.find((g) => g.event === 'orders.create')!;
  const fetched = await c.call('GET', new URL(one.resource_url).pathname);
  t.equal(fetched.body[resources.orders!].id, o.id, 'resource_url answers the record');
  t.ok(
    got.every((g) => expect.some(([event]) => event === g.event)),
    "only the spec's events in the spec profile",
  );
  const documented = await subscribe(c, rx.url, 'order.finalized');
  t.equal(documented.status, 422, 'events outside the spec are not subscribable in the spec profile');
  t.same(documented.body, { errors: { event: ['is not included in the list'] } });
});

t.test('Events: variant.stock_level_update fires whenever stock changes at any location', async (t) => {
  const c = await sandbox(t);
  const rx = await receiver(t);
  await subscribe(c, rx.url, 'variant.stock_level_update');
  const v = (await c.get('/variants?composite=false&limit=1')).body.variants[0];
  const loc = v.locations[0].location_id;
  await c.call('POST', '/stock_adjustments', {
    stock_adjustment: {
      stock_location_id: loc,
      reason: 'supplier',
      stock_adjustment_line_items: [{ variant_id: v.id, quantity: 3, price: '2.50' }],
    },
  });
  await rx.waitFor(1);
  t.same(
    rx.got.map((g) => [g.json.event, g.json.object_id]),
    [['variants.stock_level_update', v.id]],
  );
  await c.call('PUT', `/variants/${v.id}`, { variant: { name: 'renamed' } });
  await c.admin('POST', 'deliveries/flush');
  t.equal(rx.got.length, 1, 'a change that is not stock fires none');
});

t.test(
  'Events: deliveries are signed (Base64 HMAC-SHA256 of the body with the client secret) and carry a unique X-Service-Delivery',
  async (t) => {
    const c = await sandbox(t, { clientSecret: 'shh' });
    const rx = await receiver(t);
    await subscribe(c, rx.url, 'product.create');
    for (let i = 0; i < 3; i++) await c.call('POST', '/products', { product: { name: `P${i}` } });
    const got = await rx.waitFor(3);
    for (const g of got) {
      t.equal(g.headers['x-service-signature'], createHmac('sha256', 'shh').update(g.body).digest('base64'));
      t.equal(g.headers['content-type'], 'application/json');
    }
    t.equal(new Set(got.map((g) => g.headers['x-service-delivery'])).size, 3);
  },
);

t.test('Events: invented events (order.update, variant.update, *.destroy not documented) exist in neither profile', async (t) => {
  for (const profile of ['spec', 'documented'] as const) {
    const c = await sandbox(t, { profile });
    for (const e of [
      'order.update',
      'variant.update',
      'variant.destroy',
      'order.destroy',
      'fulfillment.update',
      'purchase_order.update',
      'purchase_order.receive',
    ]) {
      t.equal((await subscribe(c, 'https://example.com/hooks', e)).status, 422, `${profile}: ${e}`);
    }
  }
});

t.test('Events: 410 deletes the subscription', async (t) => {
  const c = await sandbox(t);
  const rx = await receiver(t, () => 410);
  const id = (await subscribe(c, rx.url, 'product.create')).body.webhook.id;
  await c.call('POST', '/products', { product: { name: 'gone' } });
  await rx.waitFor(1);
  await c.admin('POST', 'deliveries/flush');
  t.equal((await c.get(`/webhooks/${id}`)).status, 404);
  await c.call('POST', '/products', { product: { name: 'gone again' } });
  await c.admin('POST', 'deliveries/flush');
  t.equal(rx.got.length, 1);
});

t.test('Events: failures are retried with exponential backoff; a success resets the failure count', async (t) => {
  const c = await sandbox(t, { manualClock: true });
  let answer = 500;
  const rx = await receiver(t, () => answer);
  await subscribe(c, rx.url, 'product.create');
  await c.call('POST', '/products', { product: { name: 'retry me' } });
  await rx.waitFor(1);
  await c.admin('POST', 'clock', { advance_seconds: 59 });
  await new Promise((r) => setTimeout(r, 100));
  t.equal(rx.got.length, 1, 'not before the first backoff (60 s)');
  await c.admin('POST', 'clock', { advance_seconds: 1 });
  await rx.waitFor(2);
  t.equal(rx.got.length, 2);
  await c.admin('POST', 'clock', { advance_seconds: 119 });
  await new Promise((r) => setTimeout(r, 100));
  t.equal(rx.got.length, 2, 'the second wait doubles (120 s)');
  answer = 200;
  await c.admin('POST', 'clock', { advance_seconds: 1 });
  await rx.waitFor(3);
  t.equal(rx.got[0]!.headers['x-service-delivery'], rx.got[2]!.headers['x-service-delivery'], 'a retry keeps its delivery id');
  const log = (await c.admin('GET', 'deliveries?limit=10')).body;
  t.same(
    log.map((l: any) => l.status),
    [200, 500, 500],
  );
  t.same(
    log.map((l: any) => l.attempt),
    [3, 2, 1],
  );
});

t.test('Events: a subscription failing for 3 days is deleted', async (t) => {
  const c = await sandbox(t, { manualClock: true });
  const rx = await receiver(t, () => 503);
  const id = (await subscribe(c, rx.url, 'product.create')).body.webhook.id;
  await c.call('POST', '/products', { product: { name: 'never' } });
  await rx.waitFor(1);
  for (let hour = 0; hour < 71; hour++) {
    await c.admin('POST', 'clock', { advance_seconds: 3600 });
    await c.admin('POST', 'deliveries/flush');
  }
  t.equal((await c.get(`/webhooks/${id}`)).status, 200, 'still there before 3 days');
  for (let hour = 0; hour < 8; hour++) {
    await c.admin('POST', 'clock', { advance_seconds: 3600 });
    await c.admin('POST', 'deliveries/flush');
  }
  t.equal((await c.get(`/webhooks/${id}`)).status, 404, 'deleted after 3 days of failures');
});

t.test('Events: the 3-day rule shrinks with the time scale', async (t) => {
  const c = await sandbox(t, { timeScale: (3 * 86400) / 2 }); // 3 sandbox days last 2 real seconds
  const rx = await receiver(t, () => 500);
  const id = (await subscribe(c, rx.url, 'product.create')).body.webhook.id;
  await c.call('POST', '/products', { product: { name: 'doomed' } });
  const end = Date.now() + 10_000;
  while (Date.now() < end && (await c.get(`/webhooks/${id}`)).status === 200) await new Promise((r) => setTimeout(r, 200));
  t.equal((await c.get(`/webhooks/${id}`)).status, 404);
  t.ok(rx.got.length > 3, `retried ${rx.got.length} times before deletion`);
});

t.test('Events: delivery faults drop, duplicate, reorder and corrupt signatures', async (t) => {
  const c = await sandbox(t, { clientSecret: 'k' });
  const rx = await receiver(t);
  await subscribe(c, rx.url, 'product.create');
  await c.admin('POST', 'faults', { deliveries: { drop: 1 } });
  await c.call('POST', '/products', { product: { name: 'dropped' } });
  await c.admin('POST', 'deliveries/flush');
  t.equal(rx.got.length, 0, 'dropped');
  await c.admin('POST', 'faults', { deliveries: { duplicate: 1 } });
  await c.call('POST', '/products', { product: { name: 'twice' } });
  await rx.waitFor(2);
  t.equal(rx.got.length, 2);
  t.equal(rx.got[0]!.headers['x-service-delivery'], rx.got[1]!.headers['x-service-delivery'], 'a duplicate repeats the delivery id');
  await c.admin('POST', 'faults', { deliveries: { corrupt_signature: 1 } });
  await c.call('POST', '/products', { product: { name: 'forged' } });
  await rx.waitFor(3);
  t.not(rx.got[2]!.headers['x-service-signature'], createHmac('sha256', 'k').update(rx.got[2]!.body).digest('base64'));
  await c.admin('POST', 'faults', { deliveries: { reorder: 1 } });
  const first = (await c.call('POST', '/products', { product: { name: 'first' } })).body.product.id;
  const second = (await c.call('POST', '/products', { product: { name: 'second' } })).body.product.id;
  await rx.waitFor(5);
  t.same(
    rx.got.slice(3).map((g) => g.json.object_id),
    [second, first],
    'arrive swapped',
  );
  await c.admin('POST', 'faults', { deliveries: { delay_ms: 300 } });
  const sent = Date.now();
  await c.call('POST', '/products', { product: { name: 'late' } });
  await rx.waitFor(6);
  t.equal(rx.got.length, 6, 'a delayed delivery still arrives');
  t.ok(Date.now() - sent >= 290, 'not before its delay');
  await c.admin('POST', 'faults', {});
  const stats = (await c.admin('GET', 'stats')).body.deliveries;
  t.match(stats, { attempted: Number, succeeded: Number, failed: 0, pending: 0 });
});
