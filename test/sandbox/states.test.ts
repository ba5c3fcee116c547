import t from 'tap';
import { productSetup, sandbox, stockAt, type Client } from './harness.ts';

const setup = (c: Client) => productSetup(c, { product: 'Test Tee', variant: () => ({ sku: `T-${Math.random()}` }) });

t.test('Variant: initial_stock_levels on create, per-location stock as decimal strings', async (t) => {
  const c = await sandbox(t);
  const { loc, other, mk } = await setup(c);
  const v = await mk({ keep_selling: true, max_online: '3', manage_stock: true });
  t.same(
    v.locations.map((l: any) => [l.location_id, l.stock_on_hand, l.committed]),
    [
      [loc, '10', null],
      [other, '4', null],
    ],
  );
  t.equal(v.stock_on_hand, '14');
  t.equal(v.stock_levels[loc], '10.0');
  t.equal(v.keep_selling, true);
  t.equal(v.max_online, '3');
  const plain = (await c.call('POST', '/variants', { variant: { product_id: v.product_id } })).body.variant;
  t.same(
    plain.locations.map((l: any) => [l.location_id, l.stock_on_hand]),
    [[loc, '0']],
    'new variants are added at the primary location',
  );
});

t.test('States: an active order commits stock; a draft does not; void releases it', async (t) => {
  const c = await sandbox(t);
  const { loc, mk, order } = await setup(c);
  const v = await mk();
  const draft = await order([{ variant_id: v.id, quantity: '2' }], { status: 'draft' });
  t.equal((await stockAt(c, v.id, loc))!.committed, null, 'draft commits nothing');
  t.equal((await c.call('PUT', `/orders/${draft.id}`, { order: { status: 'active' } })).status, 204);
  t.equal((await stockAt(c, v.id, loc))!.committed, '2');
  const o = await order([{ variant_id: v.id, quantity: '3' }]);
  t.equal(o.status, 'active');
  t.equal((await stockAt(c, v.id, loc))!.committed, '5');
  const voided = await c.call('POST', `/orders/${o.id}/actions/void`);
  t.equal(voided.status, 200);
  t.equal(voided.body.order.status, 'void');
  t.same(await stockAt(c, v.id, loc), {
    location_id: loc,
    stock_on_hand: '10',
    committed: '2',
    available: '8',
    incoming: null,
    bin_location: null,
    reorder_point: null,
  });
  t.equal((await c.call('POST', `/orders/${o.id}/actions/void`)).status, 422, 'void twice is refused');
});

t.test('States: pack creates a packed fulfillment of every unpacked line; fulfil ships (on hand and committed fall)', async (t) => {
  const c = await sandbox(t);
  const { loc, mk, order } = await setup(c);
  const v1 = await mk(),
    v2 = await mk();
  const o = await order([
    { variant_id: v1.id, quantity: '2' },
    { variant_id: v2.id, quantity: '1' },
  ]);
  const packed = await c.call('POST', `/orders/${o.id}/actions/pack`);
  t.equal(packed.status, 200);
  t.equal(packed.body.fulfillment.status, 'packed');
  t.equal(packed.body.fulfillment.fulfillment_line_item_ids.length, 2);
  t.equal((await stockAt(c, v1.id, loc))!.committed, '2', 'packing moves no stock');
  const ord = (await c.get(`/orders/${o.id}`)).body.order;
  t.equal(ord.packed_status, 'packed');
  t.equal((await c.call('POST', `/orders/${o.id}/actions/pack`)).status, 422, 'nothing left to pack');
  const shipped = await c.call('POST', `/orders/${o.id}/actions/fulfil`);
  t.equal(shipped.status, 200);
  t.same(
    shipped.body.fulfillments.map((f: any) => f.status),
    ['fulfilled'],
  );
  const s1 = (await stockAt(c, v1.id, loc))!;
  t.equal(s1.stock_on_hand, '8');
  t.equal(s1.committed, '0');
  const after = (await c.get(`/orders/${o.id}`)).body.order;
  t.equal(after.status, 'fulfilled');
  t.equal(after.fulfillment_status, 'shipped');
});

t.test('States: fulfil with none packed creates a fulfilled fulfillment; the fulfill spelling works too', async (t) => {
  const c = await sandbox(t);
  const { loc, mk, order } = await setup(c);
  const v = await mk();
  const o = await order([{ variant_id: v.id, quantity: '4' }]);
  const r = await c.call('POST', `/orders/${o.id}/actions/fulfill`);
  t.equal(r.status, 200);
  t.equal(r.body.fulfillments[0].status, 'fulfilled');
  t.equal((await stockAt(c, v.id, loc))!.stock_on_hand, '6');
  t.equal((await c.call('POST', `/orders/${o.id}/actions/fulfil`)).status, 422, 'a fulfilled order has nothing to fulfil');
});

t.test('States: fulfil ships packed fulfillments and creates a fulfilled one for the unpacked rest', async (t) => {
  const c = await sandbox(t);
  const { mk, order } = await setup(c);
  const v1 = await mk(),
    v2 = await mk();
  const o = await order([
    { variant_id: v1.id, quantity: '2' },
    { variant_id: v2.id, quantity: '1' },
  ]);
  const [l1] = o.order_line_item_ids;
  await c.call('POST', '/fulfillments', { fulfillment: { order_id: o.id, fulfillment_line_items: [{ order_line_item_id: l1 }] } });
  const r = await c.call('POST', `/orders/${o.id}/actions/fulfil`);
  t.equal(r.body.fulfillments.length, 2);
  t.ok(r.body.fulfillments.every((f: any) => f.status === 'fulfilled'));
  t.equal((await c.get(`/orders/${o.id}`)).body.order.fulfillment_status, 'shipped');
});

t.test('States: partial packing through POST /fulfillments and through pack with quantities', async (t) => {
  const c = await sandbox(t);
  const { loc, mk, order } = await setup(c);
  const v1 = await mk(),
    v2 = await mk();
  const o = await order([
    { variant_id: v1.id, quantity: '5' },
    { variant_id: v2.id, quantity: '1' },
  ]);
  const [l1, l2] = o.order_line_item_ids;
  const f = await c.call('POST', '/fulfillments', {
    fulfillment: { order_id: o.id, packed_at: '2026-01-02', fulfillment_line_items: [{ order_line_item_id: l1, quantity: 2 }] },
  });
  t.equal(f.status, 201);
  t.equal(f.body.fulfillment.status, 'packed');
  t.equal(f.body.fulfillment.stock_location_id, loc, "stock location defaults to the order's");
  const flis = (await c.get(`/fulfillments/${f.body.fulfillment.id}?include=fulfillment_line_items`)).body.fulfillment_line_items;
  t.same(
    flis.map((x: any) => [x.order_line_item_id, x.quantity]),
    [[l1, '2.0']],
  );
  t.equal((await c.get(`/orders/${o.id}`)).body.order.packed_status, 'partial');
  const p = await c.call('POST', `/orders/${o.id}/actions/pack`, { order_line_item_ids: [{ id: l1, quantity: '3' }] });
  t.equal(p.status, 200);
  const bad = await c.call('POST', `/orders/${o.id}/actions/pack`, { order_line_item_ids: [{ id: l1, quantity: '1' }] });
  t.equal(bad.status, 422, 'more than the unpacked quantity is refused');
  t.ok(bad.body.errors);
  const rest = await c.call('POST', `/orders/${o.id}/actions/pack`);
  t.same(
    (await c.get(`/fulfillments/${rest.body.fulfillment.id}?include=fulfillment_line_items`)).body.fulfillment_line_items.map(
      (x: any) => x.order_line_item_id,
    ),
    [l2],
  );
});

t.test('States: fulfillment PUT to fulfilled stores tracking and ships; answer includes fulfillment_line_items', async (t) => {
  const c = await sandbox(t, { profile: 'spec' }); // the spec's update answer carries the record
  const { loc, mk, order } = await setup(c);
  const v = await mk();
  const o = await order([{ variant_id: v.id, quantity: '3' }]);
  const f = (await c.call('POST', `/orders/${o.id}/actions/pack`)).body.fulfillment;
  const r = await c.call('PUT', `/fulfillments/${f.id}`, {
    fulfillment: { status: 'fulfilled', tracking_company: 'DHL', tracking_number: 'Z123', tracking_url: 'https://track.example/Z123' },
  });
  t.equal(r.status, 200);
  t.match(r.body.fulfillment, {
    status: 'fulfilled',
    tracking_company: 'DHL',
    tracking_number: 'Z123',
    tracking_url: 'https://track.example/Z123',
  });
  t.equal(r.body.fulfillment_line_items.length, 1);
  t.same(await stockAt(c, v.id, loc), {
    location_id: loc,
    stock_on_hand: '7',
    committed: '0',
    available: '7',
    incoming: null,
    bin_location: null,
    reorder_point: null,
  });
  t.equal((await c.call('PUT', `/fulfillments/${f.id}`, { fulfillment: { status: 'packed' } })).status, 422, 'no way back from fulfilled');
});

t.test('States: invoice creates an invoice; pay marks paid and invoices when none exists', async (t) => {
  const c = await sandbox(t);
  const { mk, order } = await setup(c);
  const v = await mk();
  const o1 = await order([{ variant_id: v.id, quantity: '1' }]);
  const inv = await c.call('POST', `/orders/${o1.id}/actions/invoice`);
  t.equal(inv.status, 200);
  t.match(inv.body.invoice, { order_id: o1.id, invoice_number: /^INV\d+/ });
  const after = (await c.get(`/orders/${o1.id}`)).body.order;
  t.equal(after.invoice_status, 'invoiced');
  t.same(after.invoice_ids, [inv.body.invoice.id]);
  t.equal((await c.call('POST', `/orders/${o1.id}/actions/invoice`)).status, 422, 'fully invoiced');
  const o2 = await order([{ variant_id: v.id, quantity: '1' }]);
  const paid = await c.call('POST', `/orders/${o2.id}/actions/pay`);
  t.equal(paid.status, 200);
  t.equal(paid.body.order.payment_status, 'paid');
  t.equal(paid.body.order.invoice_status, 'invoiced');
  t.equal((await c.get(`/invoices?order_id=${o2.id}`)).body.invoices.length, 1);
});

t.test('States: a fulfillment return is created as returning with a credit note number', async (t) => {
  const c = await sandbox(t);
  const { loc, mk, order } = await setup(c);
  const v = await mk();
  const o = await order([{ variant_id: v.id, quantity: '3' }]);
  const line = o.order_line_item_ids[0];
  const early = await c.call('POST', '/fulfillment_returns', {
    fulfillment_return: { order_id: o.id, fulfillment_return_line_items: [{ order_line_item_id: line, quantity: '1' }] },
  });
  t.equal(early.status, 422, 'nothing shipped, nothing to return');
  await c.call('POST', `/orders/${o.id}/actions/fulfil`);
  const r = await c.call('POST', '/fulfillment_returns', {
    fulfillment_return: { order_id: o.id, fulfillment_return_line_items: [{ order_line_item_id: line, quantity: '2' }] },
  });
  t.equal(r.status, 201);
  t.match(r.body.fulfillment_return, {
    status: 'returning',
    credit_note_number: /^CN\d{4}$/,
    order_id: o.id,
    location_id: loc,
    exchange_rate: '1.0',
  });
  t.equal((await stockAt(c, v.id, loc))!.stock_on_hand, '7', 'returning moves no stock yet');
  const got = await c.call('PUT', `/fulfillment_returns/${r.body.fulfillment_return.id}`, { fulfillment_return: { status: 'received' } });
  t.equal(got.status, 204);
  t.equal((await stockAt(c, v.id, loc))!.stock_on_hand, '9', 'receiving the return restocks');
});

t.test('States: purchase orders raise incoming while active; receive (whole only) raises on hand and returns a procurement', async (t) => {
  const c = await sandbox(t);
  const { loc, mk } = await setup(c);
  const v = await mk();
  const supplier = (await c.get('/companies?company_type=supplier&limit=1')).body.companies[0];
  const po = (
    await c.call('POST', '/purchase_orders', {
      purchase_order: {
        company_id: supplier.id,
        stock_location_id: loc,
        status: 'active',
        purchase_order_line_items: [{ variant_id: v.id, quantity: '20' }],
      },
    })
  ).body.purchase_order;
  t.equal(po.status, 'active');
  t.equal((await stockAt(c, v.id, loc))!.incoming, '20');
  const full = await c.get(`/purchase_orders/${po.id}?include=purchase_order_line_items`);
  t.same(
    full.body.purchase_order_line_items.map((l: any) => l.quantity),
    ['20.0'],
  );
  t.equal(
    (await c.call('POST', `/purchase_orders/${po.id}/actions/receive`, { purchase_order_line_items: [{ id: 1, quantity: 5 }] })).status,
    422,
    'partial receive refused',
  );
  const rec = await c.call('POST', `/purchase_orders/${po.id}/actions/receive`);
  t.equal(rec.status, 200);
  t.ok(Number.isInteger(rec.body.procurement.id));
  t.same(await stockAt(c, v.id, loc), {
    location_id: loc,
    stock_on_hand: '30',
    committed: null,
    available: '30',
    incoming: '0',
    bin_location: null,
    reorder_point: null,
  });
  t.equal((await c.get(`/purchase_orders/${po.id}`)).body.purchase_order.status, 'received');
  t.equal((await c.call('POST', `/purchase_orders/${po.id}/actions/receive`)).status, 422, 'received once only');
});

t.test('States: a stock adjustment changes on hand', async (t) => {
  const c = await sandbox(t);
  const { loc, other, mk } = await setup(c);
  const v = await mk();
  const r = await c.call('POST', '/stock_adjustments', {
    stock_adjustment: {
      stock_location_id: other,
      reason: 'damaged',
      stock_adjustment_line_items: [{ variant_id: v.id, quantity: '-1.5' }],
    },
  });
  t.equal(r.status, 201);
  t.equal(r.body.stock_adjustment.stock_adjustment_line_item_ids.length, 1);
  t.equal((await stockAt(c, v.id, other))!.stock_on_hand, '2.5');
  t.equal((await stockAt(c, v.id, loc))!.stock_on_hand, '10');
  const bad = await c.call('POST', '/stock_adjustments', {
    stock_adjustment: {
      stock_location_id: other,
      reason: 'supplier',
      stock_adjustment_line_items: [{ variant_id: 999999, quantity: '1', price: '1' }],
    },
  });
  t.equal(bad.status, 422);
});

t.test('States: manage_stock false moves no stock', async (t) => {
  const c = await sandbox(t);
  const { loc, mk, order } = await setup(c);
  const v = await mk({ manage_stock: false });
  const o = await order([{ variant_id: v.id, quantity: '2' }]);
  t.equal((await stockAt(c, v.id, loc))!.committed, null);
  await c.call('POST', `/orders/${o.id}/actions/fulfil`);
  t.equal((await stockAt(c, v.id, loc))!.stock_on_hand, '10');
});

t.test('States: a composite variant (bundle) moves its components; its own stock derives from them', async (t) => {
  const c = await sandbox(t);
  const { loc, mk, order, product } = await setup(c);
  const a = await mk(),
    b = await mk();
  const bundle = (
    await c.call('POST', '/variants', {
      variant: {
        product_id: product.id,
        sku: 'BUNDLE',
        composite: true,
        composition: [
          { component_id: a.id, quantity: '1' },
          { component_id: b.id, quantity: '2' },
        ],
      },
    })
  ).body.variant;
  const comp = await c.get(`/variants/composition/${bundle.id}?include=component`);
  t.same(
    comp.body.composition.map((x: any) => [x.bundle_id, x.component_id, x.quantity]),
    [
      [bundle.id, a.id, '1.0'],
      [bundle.id, b.id, '2.0'],
    ],
  );
  t.equal(comp.body.variants.length, 2);
  const list = await c.get(`/variants/composition?ids=${bundle.id}`);
  t.equal(list.body.composition.length, 2);
  t.equal((await stockAt(c, bundle.id, loc))!.stock_on_hand, '5', 'min(10/1, 10/2)');
  const o = await order([{ variant_id: bundle.id, quantity: '2' }]);
  t.equal((await stockAt(c, a.id, loc))!.committed, '2');
  t.equal((await stockAt(c, b.id, loc))!.committed, '4');
  await c.call('POST', `/orders/${o.id}/actions/fulfil`);
  t.equal((await stockAt(c, a.id, loc))!.stock_on_hand, '8');
  t.equal((await stockAt(c, b.id, loc))!.stock_on_hand, '6');
});

t.test('States: PUT /orders adds further line items; line items of a closed order are refused', async (t) => {
  const c = await sandbox(t);
  const { loc, mk, order } = await setup(c);
  const v = await mk();
  const o = await order([{ variant_id: v.id, quantity: '1' }]);
  t.equal((await c.call('PUT', `/orders/${o.id}`, { order: { order_line_items: [{ variant_id: v.id, quantity: 2 }] } })).status, 204);
  const after = (await c.get(`/orders/${o.id}?include=order_line_items`)).body;
  t.equal(after.order.order_line_item_ids.length, 2);
  t.equal((await stockAt(c, v.id, loc))!.committed, '3');
  await c.call('POST', `/orders/${o.id}/actions/void`);
  t.equal((await c.call('PUT', `/orders/${o.id}`, { order: { order_line_items: [{ variant_id: v.id, quantity: 2 }] } })).status, 422);
});

t.test('States: order creation with a nested company and shipping address; currency by ISO code', async (t) => {
  const c = await sandbox(t);
  const { mk } = await setup(c);
  const v = await mk();
  const r = await c.call('POST', '/orders', {
    order: {
      company: { name: 'Nested Ltd', company_type: 'consumer', email: 'n@example.com' },
      shipping_address: { address1: '1 Main St', city: 'Auckland', country: 'NZ', label: 'Ship' },
      issued_at: '21-11-2026',
      currency_iso: 'USD',
      status: 'active',
      order_line_items: [
        { variant_id: v.id, quantity: 1 },
        { freeform: true, label: 'Gift wrap', quantity: 1, price: '2.50' },
      ],
    },
  });
  t.equal(r.status, 201);
  const o = r.body.order;
  t.equal(o.issued_at, '2026-11-21', 'day-first date accepted');
  t.equal(o.billing_address_id, o.shipping_address_id, 'billing defaults to shipping');
  t.equal(o.currency_iso, 'USD');
  const co = (await c.get(`/companies/${o.company_id}`)).body.company;
  t.equal(co.name, 'Nested Ltd');
  const missing = await c.call('POST', '/orders', { order: { company_id: co.id, currency_iso: 'XYZ', order_line_items: [] } });
  t.equal(missing.status, 422);
  t.ok(missing.body.errors.currency_iso);
  const noShip = await c.call('POST', '/orders', { order: { company: { name: 'X' } } });
  t.equal(noShip.status, 422, 'a new company needs a shipping address');
});
