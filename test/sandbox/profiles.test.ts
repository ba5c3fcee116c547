// The two profiles (spec | documented) where they differ, and the documented facts that fill the spec's gaps
// in both (docs/sandbox.md, "Spec and documentation": one test per row).
import t from 'tap';
import { Decimal } from 'decimal.js';
import { DOCUMENTED_EVENTS, PROFILES, SPEC_EVENTS } from '@commerce-sync/sandbox';
import { productSetup, receiver, sandbox, stockAt, type Client } from './harness.ts';

// The event lists are the package's own (profile.ts), so the two cannot drift apart.
const DOCUMENTED: readonly string[] = DOCUMENTED_EVENTS;
const SPEC: readonly string[] = SPEC_EVENTS;

const setup = (c: Client) => productSetup(c, { product: 'Profile Tee', variant: () => ({ initial_cost_price: '4.00' }) });

for (const profile of PROFILES) {
  t.test(
    `Profiles (${profile}): include on order and purchase order lists is ${profile === 'spec' ? 'honoured' : 'ignored'}; single GETs honour it`,
    async (t) => {
      const c = await sandbox(t, { profile, variants: 30 });
      const orders = await c.get('/orders?limit=5&include=order_line_items,company');
      const pos = await c.get('/purchase_orders?limit=5&include=purchase_order_line_items');
      if (profile === 'spec') {
        t.same(
          orders.body.order_line_items.map((l: any) => l.id).sort(),
          orders.body.orders.flatMap((o: any) => o.order_line_item_ids).sort(),
        );
        t.ok(orders.body.companies.length > 0);
        t.ok(pos.body.purchase_order_line_items.length > 0);
      } else {
        t.same(Object.keys(orders.body), ['orders'], 'tradegecko/smaug: source/includes/asides/_sideloading.md');
        t.same(Object.keys(pos.body), ['purchase_orders']);
      }
      const o = orders.body.orders[0];
      t.same(
        (await c.get(`/orders/${o.id}?include=order_line_items`)).body.order_line_items.map((l: any) => l.id),
        o.order_line_item_ids,
      );
      const po = pos.body.purchase_orders[0];
      t.same(
        (await c.get(`/purchase_orders/${po.id}?include=purchase_order_line_items`)).body.purchase_order_line_items.map((l: any) => l.id),
        po.purchase_order_line_item_ids,
      );
      t.ok((await c.get('/products?limit=2&include=variants')).body.variants.length > 0, 'other lists keep their sideloads');
    },
  );

  t.test(
    `Profiles (${profile}): the subscribable events are the ${profile === 'spec' ? "spec's eight" : 'documented list'}; others are 422`,
    async (t) => {
      const c = await sandbox(t, { profile, variants: 3 });
      const allowed = profile === 'spec' ? SPEC : DOCUMENTED;
      for (const event of DOCUMENTED) {
        const r = await c.call('POST', '/webhooks', { webhook: { address: 'https://example.com/h', event } });
        if (allowed.includes(event)) t.equal(r.status, 201, event);
        else t.same([r.status, r.body], [422, { errors: { event: ['is not included in the list'] } }], event);
      }
    },
  );
}

t.test('Events (documented): each documented event fires at its moment, once, and nothing else fires', async (t) => {
  const c = await sandbox(t, { variants: 20 });
  const rx = await receiver(t);
  for (const event of DOCUMENTED) t.equal((await c.call('POST', '/webhooks', { webhook: { address: rx.url, event } })).status, 201);
  const { loc, other, mk, supplier, order } = await setup(c);
  const account = (await c.get('/accounts/current')).body.account;
  const v = await mk();
  const o = await order([
    { variant_id: v.id, quantity: '2' },
    { variant_id: v.id, quantity: '1' },
  ]);
  const [l1, l2] = o.order_line_item_ids;
  await c.call('PUT', `/orders/${o.id}`, { order: { status: 'finalized' } });
  const part = (await c.call('POST', `/orders/${o.id}/actions/fulfil`, { order_line_item_ids: [l1] })).body.fulfillments[0];
  await c.call('PUT', `/fulfillments/${part.id}`, { fulfillment: { status: 'fulfilled' } });
  const rest = (await c.call('POST', `/orders/${o.id}/actions/fulfil`)).body.fulfillments[0];
  const paid = await order([{ variant_id: v.id, quantity: '1' }]);
  await c.call('POST', `/orders/${paid.id}/actions/pay`);
  const invoice = (await c.get(`/invoices?order_id=${paid.id}`)).body.invoices[0];
  const payment = (await c.get(`/payments?invoice_id=${invoice.id}`)).body.payments[0];
  const invoiced = await order([{ variant_id: v.id, quantity: '1' }]);
  const inv2 = (await c.call('POST', `/orders/${invoiced.id}/actions/invoice`)).body.invoice;
  await c.call('DELETE', `/invoices/${inv2.id}`);
  const ret = (
    await c.call('POST', '/fulfillment_returns', {
      fulfillment_return: { order_id: o.id, fulfillment_return_line_items: [{ order_line_item_id: l2, quantity: 1 }] },
    })
  ).body.fulfillment_return;
  await c.call('PUT', `/fulfillment_returns/${ret.id}`, { fulfillment_return: { status: 'received' } });
  const po = (
    await c.call('POST', '/purchase_orders', {
      purchase_order: {
        company_id: supplier.id,
        status: 'active',
        purchase_order_line_items: [{ variant_id: v.id, quantity: 5, price: '3' }],
      },
    })
  ).body.purchase_order;
  const proc = (await c.call('POST', `/purchase_orders/${po.id}/actions/receive`)).body.procurement;
  const adj = (
    await c.call('POST', '/stock_adjustments', {
      stock_adjustment: { stock_location_id: loc, reason: 'damaged', stock_adjustment_line_items: [{ variant_id: v.id, quantity: -1 }] },
    })
  ).body.stock_adjustment;
  const tr = (
    await c.call('POST', '/stock_transfers', {
      stock_transfer: {
        source_location_id: loc,
        destination_location_id: other,
        stock_transfer_line_items: [{ variant_id: v.id, quantity: 1 }],
      },
    })
  ).body.stock_transfer;
  const co = (await c.call('POST', '/companies', { company: { name: 'Evented', company_type: 'business' } })).body.company;
  await c.call('PUT', `/companies/${co.id}`, { company: { phone_number: '1' } });
  const ad = (await c.call('POST', '/addresses', { address: { company_id: co.id, address1: '1 Road' } })).body.address;
  await c.call('PUT', `/addresses/${ad.id}`, { address: { city: 'X' } });
  const ct = (await c.call('POST', '/contacts', { contact: { company_id: co.id, first_name: 'Eve' } })).body.contact;
  await c.call('PUT', `/contacts/${ct.id}`, { contact: { last_name: 'N' } });
  await c.call('DELETE', `/companies/${co.id}`);
  const lo = (await c.call('POST', '/locations', { location: { label: 'Evented' } })).body.location;
  await c.call('PUT', `/locations/${lo.id}`, { location: { label: 'Evented 2' } });
  const pr = (await c.call('POST', '/products', { product: { name: 'Doomed' } })).body.product;
  await c.call('DELETE', `/products/${pr.id}`);
  await c.call('PUT', `/accounts/${account.id}`, { account: { name: 'Evented Co' } });
  // Changes that no documented event signals: a variant renamed, an order voided, a purchase order voided.
  await c.call('PUT', `/variants/${v.id}`, { variant: { name: 'renamed' } });
  const voided = await order([{ variant_id: v.id, quantity: '1' }], { status: 'draft' });
  await c.call('POST', `/orders/${voided.id}/actions/void`);
  await c.admin('POST', 'deliveries/flush');
  const got = rx.got.map((g) => `${g.json.event} ${g.json.object_id}`);
  const expect = [
    `orders.create ${o.id}`,
    `orders.finalized ${o.id}`,
    `fulfillments.create ${part.id}`,
    `fulfillments.fulfilled ${part.id}`,
    `fulfillments.create ${rest.id}`,
    `fulfillments.fulfilled ${rest.id}`,
    `orders.fulfilled ${o.id}`,
    `orders.finalized ${paid.id}`,
    `invoices.create ${invoice.id}`,
    `payments.create ${payment.id}`,
    `invoices.create ${inv2.id}`,
    `invoices.destroy ${inv2.id}`,
    `fulfillment_returns.create ${ret.id}`,
    `fulfillment_returns.received ${ret.id}`,
    `purchase_orders.create ${po.id}`,
    `purchase_orders.received ${po.id}`,
    `procurements.create ${proc.id}`,
    `stock_adjustments.create ${adj.id}`,
    `stock_transfers.create ${tr.id}`,
    `companies.create ${co.id}`,
    `companies.update ${co.id}`,
    `companies.destroy ${co.id}`,
    `addresses.create ${ad.id}`,
    `addresses.update ${ad.id}`,
    `contacts.create ${ct.id}`,
    `contacts.update ${ct.id}`,
    `locations.create ${lo.id}`,
    `locations.update ${lo.id}`,
    `products.create ${pr.id}`,
    `products.destroy ${pr.id}`,
    `accounts.update ${account.id}`,
    `variants.create ${v.id}`,
  ];
  for (const e of expect) t.equal(got.filter((g) => g === e).length, 1, e);
  t.ok(got.includes(`variants.stock_level_update ${v.id}`), 'stock level updates (one per operation that moved it)');
  const names = new Set(rx.got.map((g) => g.json.event));
  t.same(
    [...names].filter((n) => !DOCUMENTED.some((d) => d.replace(/^[a-z_]+/, '') === n.replace(/^[a-z_]+/, ''))),
    [],
    'only documented actions',
  );
  t.notOk(
    got.some((g) => g.startsWith('orders.') && g.endsWith(` ${voided.id}`) && !g.startsWith('orders.create')),
    'a void fires nothing but its create',
  );
  t.equal(got.filter((g) => g === `orders.finalized ${invoiced.id}`).length, 1, 'invoicing finalizes');
});

t.test('Products: active, disabled (listed only with a status filter) or archived; quantity = on hand - committed', async (t) => {
  const c = await sandbox(t, { variants: 3 });
  const { product, mk, order } = await setup(c);
  const v = await mk();
  await order([{ variant_id: v.id, quantity: '3' }]);
  t.equal((await c.get(`/products/${product.id}`)).body.product.quantity, '11', '14 on hand - 3 committed');
  t.equal((await c.call('PUT', `/products/${product.id}`, { product: { status: 'disabled' } })).status, 204);
  t.notOk(
    (await c.get('/products?limit=250')).body.products.some((p: any) => p.id === product.id),
    'not in the default list',
  );
  t.same(
    (await c.get('/products?status=disabled')).body.products.map((p: any) => p.id),
    [product.id],
  );
  t.equal((await c.get(`/variants/${v.id}`)).body.variant.product_status, 'disabled');
  t.equal((await c.call('PUT', `/products/${product.id}`, { product: { status: 'bogus' } })).status, 422);
  await c.call('PUT', `/products/${product.id}`, { product: { status: 'active' } });
  t.ok(
    (await c.get('/products?limit=250')).body.products.some((p: any) => p.id === product.id),
    're-enabled',
  );
});

t.test('Variants: per-location available and the four totals; seeded costs', async (t) => {
  const c = await sandbox(t, { variants: 10 });
  const { loc, mk, order } = await setup(c);
  const v = await mk();
  await order([{ variant_id: v.id, quantity: '2.5' }]);
  const got = (await c.get(`/variants/${v.id}`)).body.variant;
  t.match(got, {
    stock_on_hand: '14',
    committed_stock: '2.5',
    incoming_stock: '0',
    available_stock: '11.5',
    moving_average_cost: '4',
    last_cost_price: '4.0',
  });
  t.equal(got.locations.find((l: any) => l.location_id === loc).available, '7.5');
  const seeded = (await c.get('/variants?composite=false&limit=10')).body.variants;
  t.ok(
    seeded.every((x: any) => x.moving_average_cost !== null && x.last_cost_price !== null),
    'seeded variants carry their costs',
  );
});

t.test('Fulfilments: fulfil with order_line_item_ids creates a packed fulfillment that PUT ships; without, everything ships', async (t) => {
  const c = await sandbox(t, { variants: 3 });
  const { loc, mk, order } = await setup(c);
  const v = await mk();
  const o = await order([
    { variant_id: v.id, quantity: '3' },
    { variant_id: v.id, quantity: '2' },
  ]);
  const [l1] = o.order_line_item_ids;
  const part = await c.call('POST', `/orders/${o.id}/actions/fulfil`, { order_line_item_ids: [{ id: l1, quantity: 2 }] });
  t.equal(part.status, 200);
  t.match(part.body.fulfillments, [{ status: 'packed' }]);
  t.equal((await stockAt(c, v.id, loc))!.stock_on_hand, '10', 'packed moves no stock');
  const shipped = await c.call('PUT', `/fulfillments/${part.body.fulfillments[0].id}`, { fulfillment: { status: 'fulfilled' } });
  t.equal(shipped.status, 204, 'documented: an update answers 204 with no body');
  t.equal(shipped.text, '');
  t.equal((await c.get(`/fulfillments/${part.body.fulfillments[0].id}`)).body.fulfillment.status, 'fulfilled');
  t.equal((await stockAt(c, v.id, loc))!.stock_on_hand, '8');
  const all = await c.call('POST', `/orders/${o.id}/actions/fulfil`);
  t.match(all.body.fulfillments, [{ status: 'fulfilled' }]);
  t.match((await c.get(`/orders/${o.id}`)).body.order, { status: 'fulfilled', fulfillment_status: 'shipped' });
  t.same(await stockAt(c, v.id, loc), {
    location_id: loc,
    stock_on_hand: '5',
    committed: '0',
    available: '5',
    incoming: null,
    bin_location: null,
    reorder_point: null,
  });
});

t.test(
  'Stock adjustments: location and reason required, price required when adding stock, moving average cost follows; no update',
  async (t) => {
    const c = await sandbox(t, { variants: 3 });
    const { loc, mk } = await setup(c);
    const v = await mk(); // 14 on hand at cost 4
    const post = (body: object) => c.call('POST', '/stock_adjustments', { stock_adjustment: body });
    const line = (extra: object) => ({ stock_adjustment_line_items: [{ variant_id: v.id, ...extra }] });
    t.same((await post({ reason: 'supplier', ...line({ quantity: 1, price: 1 }) })).body.errors, { stock_location_id: ["can't be blank"] });
    t.match((await post({ stock_location_id: loc, ...line({ quantity: -1 }) })).body.errors, { reason: [/can't be blank/] });
    t.match((await post({ stock_location_id: loc, reason: 'stock count', ...line({ quantity: -1 }) })).body.errors, {
      reason: [/is not included in the list/],
    });
    const noPrice = await post({ stock_location_id: loc, reason: 'supplier', ...line({ quantity: 6 }) });
    t.same([noPrice.status, Object.keys(noPrice.body)], [422, ['errors']]);
    t.same(noPrice.body.errors, { 'stock_adjustment_line_items[0]': ['price is required when quantity is greater than 0'] });
    t.equal((await stockAt(c, v.id, loc))!.stock_on_hand, '10', 'a refused adjustment moves nothing');
    const ok = await post({ stock_location_id: loc, reason: 'supplier', ...line({ quantity: 6, price: '14' }) });
    t.equal(ok.status, 201);
    t.match(ok.body.stock_adjustment, { reason: 'supplier', reason_label: 'Supplier', stock_adjustment_reason_id: Number });
    t.equal((await c.get(`/variants/${v.id}`)).body.variant.moving_average_cost, '7', '(14 x 4 + 6 x 14) / 20');
    const out = await post({ stock_location_id: loc, reason: 'shrinkage', ...line({ quantity: -2 }) });
    const lines = (await c.get(`/stock_adjustment_line_items?stock_adjustment_id=${out.body.stock_adjustment.id}`)).body
      .stock_adjustment_line_items;
    t.equal(lines[0].price, '7', 'a removal is valued at the moving average cost');
    const reasons = (await c.get('/stock_adjustment_reasons')).body.stock_adjustment_reasons;
    t.same(reasons.map((r: any) => r.reason_code).sort(), ['customer', 'damaged', 'production', 'promotion', 'shrinkage', 'supplier']);
    const byId = await post({
      stock_location_id: loc,
      stock_adjustment_reason_id: reasons.find((r: any) => r.reason_code === 'damaged').id,
      ...line({ quantity: -1 }),
    });
    t.equal(byId.body.stock_adjustment.reason, 'damaged');
    t.same((await post({ stock_location_id: loc, stock_adjustment_reason_id: 999, ...line({ quantity: -1 }) })).body.errors, {
      stock_adjustment_reason_id: ['does not exist'],
    });
    t.equal(
      (await c.call('PUT', `/stock_adjustments/${byId.body.stock_adjustment.id}`, { stock_adjustment: { notes: 'x' } })).status,
      404,
      'no update',
    );
    t.equal((await stockAt(c, v.id, loc))!.stock_on_hand, '13');
  },
);

t.test('Stock transfers: created active (no stock moves), receive moves the stock, revert creates the reversal', async (t) => {
  const c = await sandbox(t, { variants: 3 });
  const { loc, other, mk } = await setup(c);
  const v = await mk();
  const tr = (
    await c.call('POST', '/stock_transfers', {
      stock_transfer: {
        source_location_id: loc,
        destination_location_id: other,
        stock_transfer_line_items: [{ variant_id: v.id, quantity: 3 }],
      },
    })
  ).body.stock_transfer;
  t.match(tr, { status: 'active', received_at: null, adjustment_number: /^ST\d{4}$/, cached_quantity: '3.0' });
  t.equal((await stockAt(c, v.id, loc))!.stock_on_hand, '10');
  const rec = await c.call('POST', `/stock_transfers/${tr.id}/actions/receive`);
  t.equal(rec.status, 200);
  t.match(rec.body.stock_transfer, { status: 'received', received_at: /Z$/ });
  t.equal((await stockAt(c, v.id, loc))!.stock_on_hand, '7');
  t.equal((await stockAt(c, v.id, other))!.stock_on_hand, '7');
  t.equal((await c.call('POST', `/stock_transfers/${tr.id}/actions/receive`)).status, 422, 'received once');
  const rev = await c.call('POST', `/stock_transfers/${tr.id}/actions/revert`);
  t.match(rev.body.stock_transfer, {
    status: 'active',
    source_location_id: other,
    destination_location_id: loc,
    notes: `Reversal of Stock Transfer #${tr.adjustment_number}`,
  });
  await c.call('POST', `/stock_transfers/${rev.body.stock_transfer.id}/actions/receive`);
  t.equal((await stockAt(c, v.id, loc))!.stock_on_hand, '10', 'the reversal brings it back');
  t.equal((await c.call('POST', `/stock_transfers/${tr.id}/actions/explode`)).status, 404);
});

t.test('Updates: spec answers PUT /fulfillments/{id} with the record, documented with 204 like every update', async (t) => {
  for (const profile of PROFILES) {
    const c = await sandbox(t, { variants: 3, profile });
    const { mk, order } = await setup(c);
    const o = await order([{ variant_id: (await mk()).id, quantity: '1' }]);
    const f = (await c.call('POST', `/orders/${o.id}/actions/pack`)).body.fulfillment;
    const r = await c.call('PUT', `/fulfillments/${f.id}`, { fulfillment: { status: 'fulfilled', tracking_number: 'Z1' } });
    if (profile === 'spec') t.match([r.status, r.body.fulfillment], [200, { status: 'fulfilled', tracking_number: 'Z1' }], profile);
    else t.same([r.status, r.text], [204, ''], profile);
    t.match((await c.get(`/fulfillments/${f.id}`)).body.fulfillment, { status: 'fulfilled', tracking_number: 'Z1' }, `${profile}: updated`);
  }
});

t.test('Webhooks: PUT /webhooks/{id} changes the address or event (checked like a create)', async (t) => {
  const c = await sandbox(t, { variants: 3 });
  const rx = await receiver(t);
  const hook = (await c.call('POST', '/webhooks', { webhook: { address: 'https://example.com/old', event: 'product.create' } })).body
    .webhook;
  t.equal((await c.call('PUT', `/webhooks/${hook.id}`, { webhook: { address: rx.url } })).status, 204);
  t.equal((await c.get(`/webhooks/${hook.id}`)).body.webhook.address, rx.url);
  t.same((await c.call('PUT', `/webhooks/${hook.id}`, { webhook: { event: 'variant.update' } })).body, {
    errors: { event: ['is not included in the list'] },
  });
  t.equal((await c.call('PUT', `/webhooks/${hook.id}`, { webhook: { address: 'ftp://x' } })).status, 422);
  await c.call('POST', '/products', { product: { name: 'to the new address' } });
  t.equal((await rx.waitFor(1)).length, 1);
  const other = (await c.admin('POST', 'tokens', { application_id: 2 })).body.token;
  const r = await fetch(`${c.sb.url}/webhooks/${hook.id}`, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${other}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ webhook: { address: 'https://evil.example' } }),
  });
  t.equal(r.status, 403, "another application's webhook");
});

t.test(
  'Line items: by position; order_line_items by order_id (lists too) and order_status; purchase order lines by purchase_order_id',
  async (t) => {
    const c = await sandbox(t, { variants: 10 });
    const { mk, order, supplier } = await setup(c);
    const v = await mk();
    const a = await order([
      { variant_id: v.id, quantity: 1 },
      { variant_id: v.id, quantity: 2 },
      { variant_id: v.id, quantity: 3 },
    ]);
    const b = await order([{ variant_id: v.id, quantity: 4 }], { status: 'draft' });
    await c.call('PUT', `/order_line_items/${a.order_line_item_ids[0]}`, { order_line_item: { quantity: 5 } });
    const both = (await c.get(`/order_line_items?order_id=${a.id},${b.id}`)).body.order_line_items;
    t.same(
      both.map((l: any) => l.id),
      [...a.order_line_item_ids, ...b.order_line_item_ids],
      'by order, then position (not most recent first)',
    );
    t.same(
      both.filter((l: any) => l.order_id === a.id).map((l: any) => l.position),
      [0, 1, 2],
    );
    t.same(
      (await c.get(`/order_line_items?order_id=${a.id},${b.id}&order_status=draft`)).body.order_line_items.map((l: any) => l.id),
      b.order_line_item_ids,
    );
    const po = (
      await c.call('POST', '/purchase_orders', {
        purchase_order: {
          company_id: supplier.id,
          purchase_order_line_items: [
            { variant_id: v.id, quantity: 1 },
            { variant_id: v.id, quantity: 2 },
          ],
        },
      })
    ).body.purchase_order;
    t.same(
      (await c.get(`/purchase_order_line_items?purchase_order_id=${po.id}`)).body.purchase_order_line_items.map((l: any) => l.id),
      po.purchase_order_line_item_ids,
    );
  },
);

t.test('Orders: filterable by reference_number and order_number', async (t) => {
  const c = await sandbox(t, { variants: 10 });
  const { mk, order } = await setup(c);
  const v = await mk();
  const o = await order([{ variant_id: v.id, quantity: 1 }], { reference_number: 'web-1001' });
  await order([{ variant_id: v.id, quantity: 1 }], { reference_number: 'web-1002' });
  t.same(
    (await c.get('/orders?reference_number=web-1001')).body.orders.map((x: any) => x.id),
    [o.id],
  );
  t.same(
    (await c.get(`/orders?order_number=${o.order_number}`)).body.orders.map((x: any) => x.id),
    [o.id],
  );
});

t.test('Admin API: stock_moves lists every change of on hand, committed or incoming since a time, with its cause', async (t) => {
  const c = await sandbox(t, { variants: 10, manualClock: true });
  const { loc, mk, order } = await setup(c);
  const v = await mk();
  await c.admin('POST', 'clock', { advance_seconds: 10 });
  const since = (await c.admin('POST', 'clock', {})).body.now;
  const o = await order([{ variant_id: v.id, quantity: 2 }]);
  await c.call('POST', `/orders/${o.id}/actions/fulfil`);
  const moves = (await c.admin('GET', `stock_moves?since=${since}`)).body.stock_moves;
  t.same(
    moves.map((m: any) => [m.variant_id, m.location_id, m.cause]),
    [
      [v.id, loc, 'order.create'],
      [v.id, loc, 'order.fulfil'],
      [v.id, loc, 'order.fulfil'],
    ],
    'committed, then on hand and committed',
  );
  t.ok(moves.every((m: any) => m.at === since));
  t.same(
    moves.map((m: any) => [m.stock_on_hand, m.committed]).slice(1),
    [
      [String(Number(moves[0].stock_on_hand) - 2), '2'],
      [String(Number(moves[0].stock_on_hand) - 2), '0'],
    ],
    'each move carries the quantities after it',
  );
  t.same(
    (await c.admin('GET', `stock_moves?after=${moves[0].seq}`)).body.stock_moves.map((m: any) => m.seq),
    moves.slice(1).map((m: any) => m.seq),
    'after=<seq> lists only later moves',
  );
  t.equal((await c.admin('GET', 'stock_moves?after=x')).status, 400);
  const all = (await c.admin('GET', 'stock_moves')).body.stock_moves;
  t.ok(all.length > moves.length && all.some((m: any) => m.cause === 'variant.create'), 'without since: every move kept');
  t.equal((await c.admin('GET', 'stock_moves?since=yesterday')).status, 400);
  await c.admin('POST', 'activity', { operations: 30, kinds: ['place_order', 'adjust_stock'] });
  const later = (await c.admin('GET', `stock_moves?since=${since}`)).body.stock_moves;
  t.ok(
    later.some((m: any) => m.cause === 'stock_adjustment.create') && later.some((m: any) => m.cause === 'order.create'),
    'activity moves are kept with their cause',
  );
});

t.test('Merchant activity: produces every change a documented stock or order event signals', async (t) => {
  const c = await sandbox(t, { variants: 60, seed: 5 });
  const rx = await receiver(t);
  for (const event of DOCUMENTED) await c.call('POST', '/webhooks', { webhook: { address: rx.url, event } });
  const performed = (await c.admin('POST', 'activity', { operations: 400 })).body.performed;
  t.ok(performed.length > 300);
  await c.admin('POST', 'deliveries/flush');
  await rx.waitFor(performed.length);
  const names = new Set(rx.got.map((g) => g.json.event));
  for (const e of [
    'orders.create',
    'orders.finalized',
    'orders.fulfilled',
    'fulfillments.create',
    'fulfillments.fulfilled',
    'fulfillment_returns.create',
    'fulfillment_returns.received',
    'purchase_orders.received',
    'procurements.create',
    'stock_adjustments.create',
    'stock_transfers.create',
    'variants.create',
    'variants.stock_level_update',
    'products.create',
    'invoices.create',
    'payments.create',
    'companies.create',
    'companies.update',
    'addresses.update',
  ]) {
    t.ok(names.has(e), e);
  }
  const products = (await c.admin('GET', 'snapshot?resource=products')).body.products;
  t.ok(
    products.some((p: any) => p.status === 'disabled'),
    'some products disabled by the merchant',
  );
  const stock = (await c.admin('GET', 'snapshot?resource=variants')).body.variants.filter((v: any) => !v.composite);
  t.ok(stock.every((v: any) => new Decimal(v.available_stock).eq(new Decimal(v.stock_on_hand).minus(v.committed_stock))));
});
