// The seeded account: locations, currencies, users, customers and suppliers with addresses and contacts,
// products with variants stocked at several locations, bundles, a few open purchase orders and orders.
// Same seed, same catalog. Seeding goes through the service with events switched off.
import { Decimal } from 'decimal.js';
import { Random } from './random.ts';
import { Store, Table, type Stock } from './store.ts';
import type { Service } from './service.ts';
import { ADJUSTMENT_REASONS } from './adjustments.ts';

export interface SeedOptions {
  seed: number;
  variants: number;
  locations: number;
}

const CITIES = [
  ['Singapore', 'SG'],
  ['Auckland', 'NZ'],
  ['Sydney', 'AU'],
  ['London', 'GB'],
  ['Berlin', 'DE'],
  ['Austin', 'US'],
] as const;
const WORDS = ['Gecko', 'Hummingbird', 'Falcon', 'Otter', 'Maple', 'Cedar', 'Aurora', 'Summit', 'Harbor', 'Willow', 'Ember', 'Nova'];
const TYPES = ['Guitar', 'Amplifier', 'Sofa', 'Lamp', 'T-shirt', 'Bag', 'Cheese', 'Coffee', 'Headphones', 'Chair'];
const SIZES = ['S', 'M', 'L', 'XL'];
const COLOURS = ['Red', 'Blue', 'Black', 'White', 'Green'];

export function newStore(clockStart: number): Store {
  const store = new Store();
  const t = new Date(clockStart - 400 * 86400_000).toISOString();
  store.account = {
    id: 1,
    created_at: t,
    updated_at: t,
    contact_email: 'owner@sandbox.example',
    contact_mobile: null,
    contact_phone: '555-555-555',
    country: 'SG',
    default_order_price_list_id: 'wholesale',
    default_purchase_order_price_list_id: 'buy',
    default_sales_ledger_account_on: 'company',
    default_tax_treatment: 'exclusive',
    default_document_theme_id: null,
    industry: 'Retail',
    name: 'Sandbox Trading Co.',
    tax_label: 'GST',
    tax_number: '',
    tax_number_label: 'GST Number',
    website: null,
    logo_url: null,
    stock_level_warn: true,
    time_zone: 'Asia/Singapore',
    primary_location_id: 1,
    primary_billing_location_id: 1,
    default_currency_id: 1,
    default_payment_method_id: 1,
    default_payment_term_id: 1,
    billing_contact_id: 1,
    default_sales_order_tax_type_id: 1,
    default_purchase_order_tax_type_id: 1,
    default_tax_exempt_id: 1,
    default_tax_type_id: 1,
    default_tax_rate: '7.0',
    default_tax_type: 'exclusive',
    default_order_price_type_id: 'wholesale',
    default_purchase_order_price_type_id: 'buy',
    location_ids: [],
    user_ids: [],
  };
  return store;
}

/** Fills a fresh store. Records are dated in the past, oldest first, one second apart. */
export function seed(store: Store, service: Service, opts: SeedOptions): void {
  const rng = new Random(opts.seed);
  const clock = service.clock;
  // Seeded records are stamped in the past: move the clock back while seeding, then restore it.
  const realNow = clock.now();
  const total = 10 + opts.locations + opts.variants * 2;
  let tick = realNow - total * 1000 - 86400_000;
  const at = () => new Date((tick += 1000)).toISOString();
  const stamped = <T extends { created_at: string; updated_at: string }>(row: T): T => {
    const s = at();
    row.created_at = s;
    row.updated_at = s;
    return row;
  };

  const t0 = at();
  const base = { created_at: t0, updated_at: t0 };
  store.currencies.insert({
    ...base,
    iso: 'SGD',
    name: 'Singapore Dollar',
    rate: '1.0',
    symbol: '$',
    separator: '.',
    delimiter: ',',
    precision: 2,
    format: '%u%n',
    subunit: 100,
    status: 'active',
  });
  store.currencies.insert({
    ...base,
    iso: 'USD',
    name: 'US Dollar',
    rate: '0.74',
    symbol: 'US$',
    separator: '.',
    delimiter: ',',
    precision: 2,
    format: '%u%n',
    subunit: 100,
    status: 'active',
  });
  store.users.insert({
    ...base,
    first_name: 'Sandbox',
    last_name: 'Owner',
    email: 'owner@sandbox.example',
    status: 'active',
    location: null,
    position: 'Owner',
    phone_number: null,
    mobile_phone: null,
    last_sign_in_at: t0,
    avatar_url: null,
    notification_email: false,
    sales_report_email: false,
    action_items_email: 'off',
    billing_contact: true,
    permissions: ['read_reports', 'read_products', 'write_stocks', 'write_orders', 'write_settings', 'write_companies'],
    account_id: 1,
  });
  store.payment_terms.insert({ ...base, name: 'NET30', due_in_days: 30, status: 'active', from: 'invoice' });
  store.payment_methods.insert({ ...base, name: 'Bank transfer', is_default: true });
  ADJUSTMENT_REASONS.forEach((code) =>
    store.stock_adjustment_reasons.insert({
      ...base,
      name: code[0]!.toUpperCase() + code.slice(1),
      reason_code: code,
      default_quantity: ['supplier', 'customer', 'production'].includes(code) ? 1 : -1,
      is_system: true,
      status: 'active',
    }),
  );
  store.tax_types.insert({
    ...base,
    name: 'GST',
    code: 'GST',
    status: 'active',
    xero_online_id: null,
    imported_from: null,
    effective_rate: '7.0',
    tax_component_ids: [],
  });

  for (let i = 0; i < Math.max(1, opts.locations); i++) {
    const [city, country] = CITIES[i % CITIES.length]!;
    const s = at();
    store.locations.insert({
      created_at: s,
      updated_at: s,
      label: i === 0 ? 'Primary Location' : `${city} Warehouse ${i}`,
      address1: `${10 + i} Harbour St`,
      address2: '',
      city,
      country,
      state: '',
      suburb: '',
      zip_code: String(100000 + i),
      phone_number: null,
      email: null,
      first_name: null,
      last_name: null,
      company_name: null,
      country_code: country,
      holds_stock: true,
      status: 'active',
    });
  }
  store.account.primary_location_id = store.locations.order[0]!.id;
  store.account.primary_billing_location_id = store.locations.order[0]!.id;
  const locIds = store.locations.order.map((l) => l.id);

  service.run('seed', () => {
    const companies = Math.max(4, Math.min(200, Math.ceil(opts.variants / 20)));
    for (let i = 0; i < companies; i++) {
      const supplier = i % 4 === 3;
      const name = `${rng.pick(WORDS)} ${supplier ? 'Supplies' : 'Store'} ${i + 1}`;
      const c = stamped(
        service.catalog.createCompany({
          name,
          company_type: supplier ? 'supplier' : i % 2 ? 'consumer' : 'business',
          company_code: `C${String(i + 1).padStart(4, '0')}`,
          email: `hello${i + 1}@example.com`,
        }),
      );
      const [city, country] = rng.pick(CITIES);
      stamped(
        service.catalog.createAddress({
          company_id: c.id,
          address1: `${rng.int(1, 99)} ${rng.pick(WORDS)} Road`,
          city,
          country,
          label: 'Shipping',
        }),
      );
      stamped(
        service.catalog.createContact({
          company_id: c.id,
          first_name: rng.pick(WORDS),
          last_name: 'Smith',
          email: `buyer${i + 1}@example.com`,
        }),
      );
    }

    const stockVariants: number[] = [];
    let made = 0;
    let productNo = 0;
    while (made < opts.variants) {
      productNo++;
      const type = rng.pick(TYPES);
      const name = `${rng.pick(WORDS)} ${type} ${productNo}`;
      const p = stamped(
        service.catalog.createProduct({
          name,
          product_type: type,
          brand: rng.pick(WORDS),
          supplier: `${rng.pick(WORDS)} Supplies`,
          opt1: 'Size',
          opt2: 'Colour',
          tags: type,
        }),
      );
      const bundle = stockVariants.length >= 4 && productNo % 10 === 0;
      const count = bundle ? 1 : Math.min(opts.variants - made, rng.int(1, 4));
      for (let k = 0; k < count; k++) {
        const price = new Decimal(rng.int(500, 50000)).div(100);
        const sku = `SKU-${String(made + 1).padStart(6, '0')}`;
        if (bundle) {
          const parts = [rng.pick(stockVariants), rng.pick(stockVariants)].filter((x, i, a) => a.indexOf(x) === i);
          const v = stamped(
            service.catalog.createVariant({
              product_id: p.id,
              name: `${name} Bundle`,
              sku,
              composite: true,
              retail_price: price.times(2).toString(),
              composition: parts.map((id, i) => ({ component_id: id, quantity: String(i + 1) })),
            }),
          );
          v.opt1 = 'Bundle';
        } else {
          const v = stamped(
            service.catalog.createVariant({
              product_id: p.id,
              name: `${name} ${SIZES[k % SIZES.length]}`,
              sku,
              opt1: SIZES[k % SIZES.length],
              opt2: rng.pick(COLOURS),
              retail_price: price.toString(),
              wholesale_price: price.times(0.6).toDecimalPlaces(2).toString(),
              buy_price: price.times(0.4).toDecimalPlaces(2).toString(),
              keep_selling: rng.chance(0.1),
              manage_stock: !rng.chance(0.03),
              max_online: rng.chance(0.1) ? String(rng.int(1, 20)) : null,
              initial_cost_price: price.times(0.4).toDecimalPlaces(2).toString(),
            }),
          );
          const stock = v._stock as Map<number, Stock>;
          stock.clear();
          for (const loc of locIds) {
            if (loc !== locIds[0] && !rng.chance(0.6)) continue;
            stock.set(loc, {
              soh: new Decimal(rng.int(-2, 120)),
              committed: rng.chance(0.5) ? null : new Decimal(0),
              incoming: null,
              bin_location: rng.chance(0.3) ? `A${rng.int(1, 30)}` : null,
              reorder_point: null,
            });
          }
          stockVariants.push(v.id);
        }
        made++;
      }
    }

    // A little history: open orders (committing stock) and open purchase orders (incoming stock).
    const customers = store.companies.order.filter((c) => c.company_type !== 'supplier');
    const suppliers = store.companies.order.filter((c) => c.company_type === 'supplier');
    const history = Math.min(50, Math.floor(stockVariants.length / 5));
    for (let i = 0; i < history && customers.length; i++) {
      const c = rng.pick(customers);
      const lines = Array.from({ length: rng.int(1, 3) }, () => ({ variant_id: rng.pick(stockVariants), quantity: String(rng.int(1, 5)) }));
      const o = stamped(
        service.orders.createOrder({
          company_id: c.id,
          shipping_address_id: c.address_ids[0],
          status: i % 5 === 0 ? 'draft' : 'active',
          order_line_items: lines,
          stock_location_id: rng.pick(locIds),
        }),
      );
      for (const id of o.order_line_item_ids) stamped(store.order_line_items.get(id)!);
    }
    for (let i = 0; i < Math.min(10, Math.floor(history / 5)) && suppliers.length; i++) {
      const lines = Array.from({ length: rng.int(1, 3) }, () => ({
        variant_id: rng.pick(stockVariants),
        quantity: String(rng.int(10, 50)),
      }));
      const po = stamped(
        service.purchasing.createPurchaseOrder({ company_id: rng.pick(suppliers).id, status: 'active', purchase_order_line_items: lines }),
      );
      for (const id of po.purchase_order_line_item_ids) stamped(store.purchase_order_line_items.get(id)!);
    }
  });
  // Records touched by the history above (stock, parents) got the current time; date them when seeding ended.
  const end = at();
  for (const name of Object.keys(store) as (keyof Store)[]) {
    const table = store[name];
    if (table instanceof Table) for (const r of table.order) if (r.updated_at > end) r.updated_at = end;
  }
}
