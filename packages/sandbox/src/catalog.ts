// The catalogue and the parties: companies, addresses, contacts, currencies, locations, products, variants,
// webhooks, the account; plain PUTs.
import type { Decimal } from 'decimal.js';
import { invalid, parseDecimal, qty1, ZERO, type Row, type Stock } from './store.ts';
import { RESOURCES, pickFields } from './resources.ts';
import { Part, type Body, type Core } from './core.ts';
import { ALL_EVENTS } from './profile.ts';
import type { Inventory } from './stock.ts';

export class Catalog extends Part {
  private readonly stock: Inventory;

  constructor(core: Core, stock: Inventory) {
    super(core);
    this.stock = stock;
  }

  private variantNullsCache: Record<string, null> | null = null;
  private variantNulls(): Record<string, null> {
    if (!this.variantNullsCache) {
      const { buy_price: _b, retail_price: _r, wholesale_price: _w, ...rest } = this.nulls('variants');
      this.variantNullsCache = rest;
    }
    return this.variantNullsCache;
  }

  createCompany(body: Body): Row {
    const f = pickFields(RESOURCES.companies!, body, { create: true });
    const errors: Record<string, string[]> = {};
    if (!['business', 'supplier', 'consumer'].includes(f.company_type as string)) errors.company_type = ['is not included in the list'];
    if (f.status != null && !['active', 'disabled', 'archived'].includes(f.status as string))
      errors.status = ['is not included in the list'];
    if (f.company_code && this.store.companies.order.some((c) => c.company_code === f.company_code))
      errors.company_code = ['has already been taken'];
    this.check(errors);
    const row = this.store.companies.insert({
      ...this.stamp(),
      ...this.nulls('companies'),
      default_document_theme_id: null,
      tags: [],
      ...f,
      status: (f.status as string) ?? 'active',
      address_ids: [],
      contact_ids: [],
      note_ids: [],
    });
    this.fire('company.create', row.id);
    return row;
  }

  createAddress(body: Body): Row {
    const f = pickFields(RESOURCES.addresses!, body, { create: true });
    const errors: Record<string, string[]> = {};
    const company = this.need('companies', f.company_id, 'company_id', errors);
    if (company && f.label && (company.address_ids as number[]).some((id) => this.store.addresses.get(id)?.label === f.label)) {
      errors.label = ['has already been taken'];
    }
    this.check(errors);
    const country = f.country as string | null | undefined;
    const row = this.store.addresses.insert({
      ...this.stamp(),
      ...this.nulls('addresses'),
      ...f,
      status: 'active',
      country_code: (f.country_code as string | undefined) ?? countryCode(country),
    });
    (company!.address_ids as number[]).push(row.id);
    this.touch(company!);
    this.fire('address.create', row.id);
    return row;
  }

  createContact(body: Body): Row {
    const f = pickFields(RESOURCES.contacts!, body, { create: true });
    const errors: Record<string, string[]> = {};
    const company = this.need('companies', f.company_id, 'company_id', errors);
    this.check(errors);
    const row = this.store.contacts.insert({
      ...this.stamp(),
      ...this.nulls('contacts'),
      ...f,
      online_ordering: f.online_ordering ?? false,
      status: 'active',
      iguana_admin: false,
      invitation_accepted_at: null,
    });
    (company!.contact_ids as number[]).push(row.id);
    this.touch(company!);
    this.fire('contact.create', row.id);
    return row;
  }

  createCurrency(body: Body): Row {
    const f = pickFields(RESOURCES.currencies!, body, { create: true });
    if (typeof f.iso !== 'string' || !/^[A-Za-z]{3}$/.test(f.iso)) throw invalid({ iso: ['is the wrong length (should be 3 characters)'] });
    f.iso = (f.iso as string).toUpperCase();
    if (this.store.currencies.order.some((c) => c.iso === f.iso && c.status === 'active'))
      throw invalid({ iso: ['has already been taken'] });
    return this.store.currencies.insert({
      ...this.stamp(),
      ...this.nulls('currencies'),
      delimiter: ',',
      separator: '.',
      format: '%u%n',
      precision: 2,
      subunit: 100,
      rate: '1.0',
      symbol: '$',
      name: f.iso,
      ...f,
      status: 'active',
    });
  }

  createLocation(body: Body): Row {
    const f = pickFields(RESOURCES.locations!, body, { create: true });
    const row = this.store.locations.insert({ ...this.stamp(), ...this.nulls('locations'), holds_stock: true, ...f, status: 'active' });
    this.fire('location.create', row.id);
    return row;
  }

  createProduct(body: Body): Row {
    const f = pickFields(RESOURCES.products!, body, { create: true });
    const row = this.store.products.insert({
      ...this.stamp(),
      ...this.nulls('products'),
      ...f,
      status: 'active',
      search_cache: null,
      variant_ids: [],
    });
    this.fire('product.create', row.id);
    return row;
  }

  createVariant(body: Body): Row {
    const f = pickFields(RESOURCES.variants!, body, { create: true });
    const errors: Record<string, string[]> = {};
    const product = this.need('products', f.product_id, 'product_id', errors);
    const levels: [number, Decimal][] = [];
    if (body.initial_stock_levels != null) {
      if (!Array.isArray(body.initial_stock_levels)) errors.initial_stock_levels = ['must be an array'];
      else
        for (const e of body.initial_stock_levels) {
          const loc = e?.location_id ?? e?.stock_location_id;
          const q = parseDecimal(e?.stock_on_hand ?? e?.quantity);
          if (!this.store.locations.get(loc)) (errors.initial_stock_levels ??= []).push(`location ${loc} does not exist`);
          else if (!q) (errors.initial_stock_levels ??= []).push('stock_on_hand is not a number');
          else levels.push([loc, q]);
        }
    }
    const parts: { component_id: number; quantity: Decimal }[] = [];
    if (f.composite && Array.isArray(body.composition)) {
      for (const c of body.composition) {
        const comp = this.store.variants.get(c?.component_id);
        const q = parseDecimal(c?.quantity ?? 1);
        if (!comp || comp.composite || !q || q.lte(0))
          (errors.composition ??= []).push('component is not a stock variant with a positive quantity');
        else parts.push({ component_id: comp.id, quantity: q });
      }
    }
    if (product && product.status === 'archived') errors.product_id = ['is archived'];
    this.check(errors);
    const cost = parseDecimal(body.initial_cost_price);
    const prices: Record<string, string | null> = {
      buy: (f.buy_price as string | undefined) ?? null,
      retail: (f.retail_price as string | undefined) ?? null,
      wholesale: (f.wholesale_price as string | undefined) ?? null,
    };
    // Prices live in _prices (rendered as *_price, prices, variant_prices); no delete on the row, which would
    // turn 100,000 records into slow dictionary-mode objects.
    const { buy_price: _b, retail_price: _r, wholesale_price: _w, ...fields } = f;
    const row = this.store.variants.insert({
      ...this.stamp(),
      ...this.variantNulls(),
      default_ledger_account_id: null,
      composite: false,
      is_online: false,
      keep_selling: false,
      manage_stock: true,
      online_ordering: false,
      sellable: true,
      taxable: true,
      last_cost_price: cost ? qty1(cost) : null,
      moving_average_cost: cost ? cost.toString() : null,
      position: (product!.variant_ids as number[]).length + 1,
      name: product!.name,
      sku: null,
      status: 'active',
      image_ids: [],
      online_id: null,
      reorder_point: null,
      ...fields,
      _prices: prices,
      _stock: new Map<number, Stock>(),
    });
    if (!row.composite) {
      const stock = row._stock as Map<number, Stock>;
      if (!levels.length) levels.push([this.store.account.primary_location_id, ZERO]);
      for (const [loc, q] of levels) {
        stock.set(loc, { soh: q, committed: null, incoming: null, bin_location: null, reorder_point: null });
        if (!q.isZero()) this.core.recordMove(row.id, loc, stock.get(loc)!);
      }
    } else if (parts.length) {
      this.store.compositions.set(row.id, parts);
      for (const p of parts) {
        let set = this.store.bundlesOf.get(p.component_id);
        if (!set) this.store.bundlesOf.set(p.component_id, (set = new Set()));
        set.add(row.id);
      }
    }
    (product!.variant_ids as number[]).push(row.id);
    this.touch(product!);
    this.fire('variant.create', row.id);
    return row;
  }

  createWebhook(body: Body, applicationId: number): Row {
    const f = pickFields(RESOURCES.webhooks!, body, { create: true });
    this.checkWebhook(f);
    return this.store.webhooks.insert({
      ...this.stamp(),
      event: f.event,
      address: f.address,
      oauth_application_id: applicationId,
      _failingSince: null,
    });
  }

  /** PUT /webhooks/{id} (real-service-notes §6): a new address or event; failures so far are kept. */
  updateWebhook(id: number, body: Body): Row {
    const hook = this.find('webhooks', id);
    const f = pickFields(RESOURCES.webhooks!, body, { create: false });
    for (const req of ['address', 'event']) if (req in f && (f[req] == null || f[req] === '')) throw invalid({ [req]: ["can't be blank"] });
    this.checkWebhook(f);
    Object.assign(hook, f);
    this.touch(hook);
    return hook;
  }

  /** An event of this profile's list (422 otherwise, as the real service validates it) and an http(s) address. */
  private checkWebhook(f: Record<string, unknown>): void {
    const errors: Record<string, string[]> = {};
    if (typeof f.event === 'string' && !this.core.events.has(f.event)) errors.event = ['is not included in the list'];
    if (typeof f.address === 'string' && !(/^https?:\/\//.test(f.address) && URL.canParse(f.address)))
      errors.address = ['is not a valid URL'];
    this.check(errors);
  }

  /** PUT on the resources without special rules. */
  update(plural: string, id: number, body: Body): Row {
    const def = RESOURCES[plural]!;
    const row = this.find(plural, id);
    const f = pickFields(def, body, { create: false });
    const errors: Record<string, string[]> = {};
    if (plural === 'products' && f.status !== undefined && !['active', 'disabled'].includes(f.status as string)) {
      errors.status = ['must be active or disabled (DELETE archives)'];
    }
    if (plural === 'companies') {
      if (f.company_type !== undefined && !['business', 'supplier', 'consumer'].includes(f.company_type as string))
        errors.company_type = ['is not included in the list'];
      if (f.status !== undefined && !['active', 'disabled', 'archived'].includes(f.status as string))
        errors.status = ['is not included in the list'];
    }
    if ('company_id' in f && f.company_id !== row.company_id) errors.company_id = ['cannot be changed'];
    for (const req of def.required ?? []) if (req in f && (f[req] === null || f[req] === '')) (errors[req] ??= []).push("can't be blank");
    if (plural === 'variants' && 'product_id' in f && f.product_id !== row.product_id) errors.product_id = ['cannot be changed'];
    this.check(errors);
    if (plural === 'variants') {
      const prices = row._prices as Record<string, string | null>;
      for (const k of ['buy', 'retail', 'wholesale'])
        if (`${k}_price` in f) {
          prices[k] = f[`${k}_price`] as string | null;
          delete f[`${k}_price`];
        }
      const stockBefore = row.manage_stock;
      Object.assign(row, f);
      if (f.manage_stock !== undefined && f.manage_stock !== stockBefore) this.stock.stockChanged(row.id);
    } else {
      Object.assign(row, f);
      if (plural === 'products')
        for (const vid of row.variant_ids as number[]) {
          const v = this.store.variants.get(vid);
          if (v) this.touch(v);
        }
      if (plural === 'addresses' && f.country !== undefined && body.country_code === undefined)
        row.country_code = countryCode(f.country as string);
    }
    this.touch(row);
    const event = `${def.singular}.update`;
    if (ALL_EVENTS.has(event)) this.fire(event, id);
    return row;
  }

  updateAccount(body: Body): void {
    const writable = [
      'contact_email',
      'contact_mobile',
      'contact_phone',
      'country',
      'default_order_price_list_id',
      'default_purchase_order_price_list_id',
      'default_sales_ledger_account_on',
      'default_tax_treatment',
      'default_document_theme_id',
      'industry',
      'name',
      'tax_label',
      'tax_number',
      'tax_number_label',
      'website',
      'stock_level_warn',
      'time_zone',
      'primary_location_id',
      'primary_billing_location_id',
      'default_currency_id',
      'default_payment_method_id',
      'default_payment_term_id',
      'billing_contact_id',
      'default_sales_order_tax_type_id',
      'default_purchase_order_tax_type_id',
      'default_tax_exempt_id',
      'default_tax_type_id',
      'default_tax_type',
      'default_order_price_type_id',
      'default_purchase_order_price_type_id',
    ];
    const errors: Record<string, string[]> = {};
    if (body.default_tax_treatment !== undefined && !['inclusive', 'exclusive'].includes(body.default_tax_treatment))
      errors.default_tax_treatment = ['is not included in the list'];
    if (
      body.default_sales_ledger_account_on !== undefined &&
      !['company', 'variant', 'channel'].includes(body.default_sales_ledger_account_on)
    )
      errors.default_sales_ledger_account_on = ['is not included in the list'];
    if (body.country !== undefined && !(typeof body.country === 'string' && /^[A-Z]{2}$/.test(body.country)))
      errors.country = ['is not a valid ISO 3166-1 alpha-2 code'];
    if (body.primary_location_id !== undefined && !this.store.locations.get(body.primary_location_id))
      errors.primary_location_id = ['does not exist'];
    this.check(errors);
    for (const k of writable) if (k in body) this.store.account[k] = body[k];
    this.touch(this.store.account);
    this.fire('account.update', this.store.account.id);
  }

  /** `<resource>.destroy` exists for companies, invoices and products only (real-service-notes §2). */
  /** Permanent deletion's side effects: a company takes its addresses and contacts along; they leave it. */
  remove(plural: string, row: Row): void {
    if (plural === 'companies') {
      for (const a of row.address_ids as number[]) this.store.addresses.remove(a);
      for (const c of row.contact_ids as number[]) this.store.contacts.remove(c);
    }
    if (plural === 'addresses' || plural === 'contacts') {
      const company = this.store.companies.get(row.company_id);
      if (company) {
        const key = plural === 'addresses' ? 'address_ids' : 'contact_ids';
        company[key] = (company[key] as number[]).filter((x) => x !== row.id);
        this.touch(company);
      }
    }
  }

  /** Soft deletion: `archived`; archiving a product archives its variants. */
  archive(plural: string, row: Row): void {
    row.status = 'archived';
    this.touch(row);
    if (plural !== 'products') return;
    for (const vid of row.variant_ids as number[]) {
      const v = this.store.variants.get(vid);
      if (v && v.status !== 'archived') {
        v.status = 'archived';
        this.touch(v);
      }
    }
  }

  fireDestroy(singular: string, id: number): void {
    const event = `${singular}.destroy`;
    if (ALL_EVENTS.has(event)) this.fire(event, id);
  }
}

const COUNTRY_CODES: Record<string, string> = {
  singapore: 'SG',
  'new zealand': 'NZ',
  australia: 'AU',
  'united states': 'US',
  usa: 'US',
  'united kingdom': 'GB',
  germany: 'DE',
  france: 'FR',
  malaysia: 'MY',
  canada: 'CA',
  japan: 'JP',
};
function countryCode(country: string | null | undefined): string | null {
  if (!country) return null;
  if (/^[A-Za-z]{2}$/.test(country)) return country.toUpperCase();
  return COUNTRY_CODES[country.toLowerCase()] ?? null;
}
