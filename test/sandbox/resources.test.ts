import t from 'tap';
import { sandbox } from './harness.ts';

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

t.test('Endpoints: accounts/current and PUT /accounts/{id} (204, omitted fields unchanged)', async (t) => {
  const c = await sandbox(t, { variants: 3 });
  const a = (await c.get('/accounts/current')).body.account;
  t.match(a, {
    id: Number,
    created_at: ISO_MS,
    name: String,
    primary_location_id: Number,
    location_ids: Array,
    user_ids: Array,
    default_tax_rate: String,
    logo_url: null,
  });
  const r = await c.call('PUT', `/accounts/${a.id}`, { account: { name: 'Renamed', id: 99 } });
  t.equal(r.status, 204);
  t.equal(r.text, '');
  const b = (await c.get('/accounts/current')).body.account;
  t.equal(b.name, 'Renamed');
  t.equal(b.id, a.id);
  t.equal(b.time_zone, a.time_zone);
  t.equal((await c.call('PUT', `/accounts/${a.id}`, { account: { default_tax_treatment: 'sideways' } })).status, 422);
});

t.test('Endpoints: addresses CRUD with company_id filter; DELETE is permanent', async (t) => {
  const c = await sandbox(t, { variants: 3 });
  const co = (await c.call('POST', '/companies', { company: { name: 'Addr Co', company_type: 'business' } })).body.company;
  const r = await c.call('POST', '/addresses', { address: { company_id: co.id, address1: '1 Way', country: 'Singapore', label: 'HQ' } });
  t.equal(r.status, 201);
  const a = r.body.address;
  t.match(a, { company_id: co.id, status: 'active', country_code: 'SG', label: 'HQ', created_at: ISO_MS });
  t.equal(
    (await c.call('POST', '/addresses', { address: { company_id: co.id, address1: '2 Way', label: 'HQ' } })).status,
    422,
    'label unique per company',
  );
  t.equal((await c.call('PUT', `/addresses/${a.id}`, { address: { city: 'Jurong' } })).status, 204);
  t.equal((await c.get(`/addresses/${a.id}`)).body.address.city, 'Jurong');
  t.same(
    (await c.get(`/addresses?company_id=${co.id}`)).body.addresses.map((x: any) => x.id),
    [a.id],
  );
  t.same((await c.get(`/companies/${co.id}`)).body.company.address_ids, [a.id]);
  t.equal((await c.call('DELETE', `/addresses/${a.id}`)).status, 204);
  t.equal((await c.get(`/addresses/${a.id}`)).status, 404);
  t.same((await c.get(`/addresses?company_id=${co.id}&status=archived`)).body.addresses, [], 'gone for good, not archived');
});

t.test('Endpoints: companies with their filters; status active or disabled', async (t) => {
  const c = await sandbox(t, { variants: 3 });
  const made = (
    await c.call('POST', '/companies', {
      company: { name: 'Disabled Co', company_type: 'supplier', company_code: 'DIS-1', tags: ['a', 'b'], default_price_type_id: 'buy' },
    })
  ).body.company;
  t.match(made, {
    status: 'active',
    address_ids: [],
    contact_ids: [],
    note_ids: [],
    tags: ['a', 'b'],
    default_price_type_id: 'buy',
    default_price_list_id: null,
    default_document_theme_id: null,
  });
  await c.call('PUT', `/companies/${made.id}`, { company: { status: 'disabled' } });
  t.notOk(
    (await c.get('/companies?limit=250')).body.companies.some((x: any) => x.id === made.id),
    'default lists show active',
  );
  t.same(
    (await c.get('/companies?status=disabled')).body.companies.map((x: any) => x.id),
    [made.id],
  );
  t.same(
    (await c.get('/companies?company_code=DIS-1&status=disabled')).body.companies.map((x: any) => x.id),
    [made.id],
  );
  t.equal(
    (await c.call('POST', '/companies', { company: { name: 'Dup', company_type: 'business', company_code: 'DIS-1' } })).status,
    422,
    'company_code unique',
  );
});

t.test('Endpoints: contacts (company_id and first_name required; online_ordering filter)', async (t) => {
  const c = await sandbox(t, { variants: 3 });
  const co = (await c.get('/companies?limit=1')).body.companies[0];
  const r = await c.call('POST', '/contacts', {
    contact: { company_id: co.id, first_name: 'Ann', online_ordering: true, iguana_admin: true },
  });
  t.equal(r.status, 201);
  t.match(r.body.contact, {
    first_name: 'Ann',
    online_ordering: true,
    iguana_admin: false,
    invitation_accepted_at: null,
    status: 'active',
  });
  t.same(
    (await c.get(`/contacts?online_ordering=true`)).body.contacts.map((x: any) => x.id),
    [r.body.contact.id],
  );
  t.same((await c.call('POST', '/contacts', { contact: { first_name: 'NoCo' } })).body.errors, { company_id: ["can't be blank"] });
  t.equal((await c.call('DELETE', `/contacts/${r.body.contact.id}`)).status, 204);
});

t.test('Endpoints: currencies (iso required; rate as a decimal string)', async (t) => {
  const c = await sandbox(t, { variants: 3 });
  const r = await c.call('POST', '/currencies', { currency: { iso: 'eur', rate: 0.62, symbol: '€' } });
  t.equal(r.status, 201);
  t.match(r.body.currency, { iso: 'EUR', rate: '0.62', status: 'active', precision: 2, format: '%u%n' });
  t.equal((await c.call('POST', '/currencies', { currency: { iso: 'EURO' } })).status, 422);
  t.equal((await c.call('PUT', `/currencies/${r.body.currency.id}`, { currency: { rate: '0.7' } })).status, 204);
  t.equal((await c.get(`/currencies/${r.body.currency.id}`)).body.currency.rate, '0.7');
  t.ok((await c.get('/currencies')).body.currencies.some((x: any) => x.iso === 'EUR'));
});

t.test('Endpoints: locations, products and variants CRUD; DELETE archives', async (t) => {
  const c = await sandbox(t, { variants: 3 });
  const loc = (await c.call('POST', '/locations', { location: { label: 'Annex', city: 'Auckland', country: 'NZ' } })).body.location;
  t.match(loc, { label: 'Annex', holds_stock: true, status: 'active' });
  t.equal((await c.call('PUT', `/locations/${loc.id}`, { location: { label: 'Annex 2' } })).status, 204);
  const p = (await c.call('POST', '/products', { product: { name: 'Prod', brand: 'B' } })).body.product;
  const v = (
    await c.call('POST', '/variants', {
      variant: {
        product_id: p.id,
        sku: 'S-1',
        retail_price: '9.5',
        initial_cost_price: '4',
        initial_stock_levels: [{ location_id: loc.id, stock_on_hand: '2' }],
      },
    })
  ).body.variant;
  t.match(v, {
    sku: 'S-1',
    retail_price: '9.5',
    prices: { retail: '9.5' },
    product_name: 'Prod',
    last_cost_price: '4.0',
    stock_levels: { [loc.id]: '2.0' },
  });
  t.same(
    (await c.get(`/variants?sku=S-1`)).body.variants.map((x: any) => x.id),
    [v.id],
  );
  t.equal((await c.call('PUT', `/variants/${v.id}`, { variant: { sku: 'S-2', stock_on_hand: '999', locations: [] } })).status, 204);
  const after = (await c.get(`/variants/${v.id}`)).body.variant;
  t.equal(after.sku, 'S-2');
  t.equal(after.stock_on_hand, '2', 'stock is read-only');
  t.equal((await c.call('POST', '/variants', { variant: { sku: 'orphan' } })).status, 422, 'product_id required');
  t.equal((await c.call('DELETE', `/products/${p.id}`)).status, 204);
  t.equal((await c.get(`/variants/${v.id}`)).body.variant.status, 'archived', 'archiving a product archives its variants');
  t.equal((await c.call('DELETE', `/locations/${loc.id}`)).status, 204);
  t.equal((await c.get(`/locations/${loc.id}`)).body.location.status, 'archived');
});

t.test(
  'Endpoints: order line items, fulfillments, invoices, purchase order line items, stock adjustments are listable and readable',
  async (t) => {
    const c = await sandbox(t, { variants: 30 });
    const o = (await c.get('/orders?limit=1')).body.orders[0];
    await c.call('POST', `/orders/${o.id}/actions/pay`);
    await c.call('POST', `/orders/${o.id}/actions/fulfil`);
    const f = (await c.get(`/fulfillments?order_id=${o.id}`)).body.fulfillments;
    t.equal(f.length, 1);
    t.match(f[0], { status: 'fulfilled', receipt: {}, exchange_rate: '1.0', shipped_at: ISO_MS });
    const fli = (await c.get(`/fulfillment_line_items?fulfillment_id=${f[0].id}`)).body.fulfillment_line_items;
    t.equal(fli.length, f[0].fulfillment_line_item_ids.length);
    t.match(fli[0], { order_line_item_id: Number, variant_id: Number, quantity: /^\d+\.\d$/ });
    const inv = (await c.get(`/invoices?order_id=${o.id}&include=invoice_line_items`)).body;
    t.equal(inv.invoices.length, 1);
    t.equal(inv.invoice_line_items.length, o.order_line_item_ids.length);
    const line = (await c.get(`/order_line_items/${o.order_line_item_ids[0]}`)).body.order_line_item;
    t.match(line, { order_id: o.id, quantity: /\.\d$/, freeform: false, fulfillment_line_item_ids: [Number] });
    const poId = (await c.get('/purchase_orders?limit=1')).body.purchase_orders[0].id;
    const po = (await c.get(`/purchase_orders/${poId}?include=purchase_order_line_items`)).body;
    t.ok(po.purchase_order.purchase_order_line_item_ids.length && po.purchase_order_line_items.length);
    const pol = (await c.get(`/purchase_order_line_items?purchase_order_id=${poId}`)).body.purchase_order_line_items;
    t.same(
      pol.map((x: any) => x.id),
      po.purchase_order.purchase_order_line_item_ids,
      'in position order',
    );
    const v = (await c.get('/variants?composite=false&limit=1')).body.variants[0];
    const adj = (
      await c.call('POST', '/stock_adjustments', {
        stock_adjustment: {
          stock_location_id: v.locations[0].location_id,
          reason: 'damaged',
          stock_adjustment_line_items: [{ variant_id: v.id, quantity: -1 }],
        },
      })
    ).body.stock_adjustment;
    t.same(
      (await c.get('/stock_adjustments')).body.stock_adjustments.map((x: any) => x.id),
      [adj.id],
    );
    t.equal(
      (await c.get(`/stock_adjustments/${adj.id}?include=stock_adjustment_line_items`)).body.stock_adjustment_line_items[0].quantity,
      '-1.0',
    );
    t.equal((await c.get('/users?limit=1')).body.users.length, 1);
    t.ok(Array.isArray((await c.get('/price_lists')).body.price_lists));
  },
);

t.test('Endpoints: order line items and purchase order line items by their own paths', async (t) => {
  const c = await sandbox(t, { variants: 30 });
  const o = (await c.get('/orders?limit=1')).body.orders[0];
  const v = (await c.get('/variants?composite=false&limit=1')).body.variants[0];
  const r = await c.call('POST', '/order_line_items', { order_line_item: { order_id: o.id, variant_id: v.id, quantity: '2' } });
  t.equal(r.status, 201);
  t.equal((await c.call('PUT', `/order_line_items/${r.body.order_line_item.id}`, { order_line_item: { quantity: '3' } })).status, 204);
  t.equal((await c.get(`/order_line_items/${r.body.order_line_item.id}`)).body.order_line_item.quantity, '3.0');
  t.equal((await c.call('DELETE', `/order_line_items/${r.body.order_line_item.id}`)).status, 204);
  t.notOk((await c.get(`/orders/${o.id}`)).body.order.order_line_item_ids.includes(r.body.order_line_item.id));
  const po = (await c.get('/purchase_orders?limit=1')).body.purchase_orders[0];
  const pl = await c.call('POST', '/purchase_order_line_items', {
    purchase_order_line_item: { purchase_order_id: po.id, variant_id: v.id, quantity: 5 },
  });
  t.equal(pl.status, 201);
  t.equal(pl.body.purchase_order_line_item.quantity, '5.0');
});

t.test('Endpoints: variants/composition filters (ids, bundle_sku / sku, component_id)', async (t) => {
  const c = await sandbox(t, { variants: 60 });
  const all = (await c.get('/variants/composition?limit=250')).body.composition;
  t.ok(all.length > 0);
  const first = all[0];
  t.same(Object.keys(first).sort(), ['bundle_id', 'bundle_sku', 'component_id', 'component_sku', 'quantity']);
  const bySku = (await c.get(`/variants/composition?bundle_sku=${first.bundle_sku}`)).body.composition;
  t.ok(bySku.every((x: any) => x.bundle_id === first.bundle_id));
  t.same((await c.get(`/variants/composition?sku=${first.bundle_sku}`)).body.composition, bySku);
  const byComp = (await c.get(`/variants/composition?component_id[]=${first.component_id}&include=bundle`)).body;
  t.ok(byComp.composition.every((x: any) => x.component_id === first.component_id));
  t.ok(byComp.variants.some((v: any) => v.id === first.bundle_id));
  t.equal((await c.get(`/variants/composition/${first.component_id}`)).status, 404, 'a component is not a bundle');
});

t.test('Endpoints: records render in the style of the real service', async (t) => {
  const c = await sandbox(t, { variants: 30 });
  const v = (await c.get('/variants?composite=false&limit=50')).body.variants;
  for (const key of [
    'committed_stock',
    'incoming_stock',
    'stock_on_hand',
    'variant_prices',
    'prices',
    'stock_levels',
    'committed_stock_levels',
    'incoming_stock_levels',
    'locations',
    'product_name',
    'product_status',
    'product_type',
    'opt1',
    'upc',
    'default_ledger_account_id',
    'moving_average_cost',
  ]) {
    t.ok(key in v[0], `variant has ${key}`);
  }
  t.ok(
    v.some((x: any) => x.locations.some((l: any) => l.committed === null)),
    'committed null where never committed',
  );
  t.ok(
    v.some((x: any) => Object.values(x.committed_stock_levels).includes('-0.0')),
    'zero commitment rendered as "-0.0"',
  );
  const o = (await c.get('/orders?limit=1')).body.orders[0];
  for (const key of [
    'order_number',
    'payment_status',
    'invoice_status',
    'packed_status',
    'fulfillment_status',
    'invoice_numbers',
    'default_price_type_id',
    'issued_at',
    'total',
    'cached_total',
    'fulfillment_ids',
    'invoice_ids',
    'order_line_item_ids',
    'currency_id',
  ]) {
    t.ok(key in o, `order has ${key}`);
  }
  t.match(o.issued_at, /^\d{4}-\d\d-\d\d$/);
});

t.test('Common behaviour: updated_at moves whenever a record as rendered changes (incremental sweeps see it)', async (t) => {
  const c = await sandbox(t, { variants: 30, manualClock: true });
  await c.admin('POST', 'clock', { set: '2031-01-01T00:00:00.000Z' });
  const since = '2031-01-01T00:00:00.000Z';
  const o = (await c.get('/orders?limit=1')).body.orders[0];
  await c.call('POST', `/orders/${o.id}/actions/fulfil`);
  const lines = (await c.get(`/order_line_items?order_id=${o.id}&updated_at_min=${since}`)).body.order_line_items;
  t.equal(lines.length, o.order_line_item_ids.length, 'shipped lines (new fulfillment_line_item_ids)');
  const line = (await c.get(`/order_line_items/${o.order_line_item_ids[0]}`)).body.order_line_item;
  const v = (await c.get(`/variants/${line.variant_id}`)).body.variant;
  t.equal(v.updated_at, since, 'the variant whose stock moved');
  t.same(
    (await c.get(`/products?ids=${v.product_id}&updated_at_min=${since}`)).body.products,
    [],
    'not its product, whose quantity changed (tradegecko/gecko: spec/vcr_cassettes/products_sideloaded.yml)',
  );
  const before = (await c.get(`/variants?limit=250&updated_at_min=${since}`)).body.variants.length;
  t.ok(before >= 1);
  const co = (await c.get('/companies?limit=1')).body.companies[0];
  await c.call('POST', '/addresses', { address: { company_id: co.id, address1: 'x', label: 'New' } });
  t.equal((await c.get(`/companies/${co.id}`)).body.company.updated_at, since, 'a company gaining an address');
});
