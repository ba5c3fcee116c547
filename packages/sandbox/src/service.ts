// The merchant's account as a set of operations. The HTTP routes, the admin API and the activity generator all
// go through these, so every change moves stock the same way and fires the same events.
import { Decimal } from 'decimal.js';
import { ApiFail, D, invalid, parseDecimal, qty1, ZERO, type Row, type Stock, type Store } from './store.ts';
import { RESOURCES, pickFields } from './resources.ts';
import { ALL_EVENTS, profileEvents, type Profile } from './profile.ts';
import type { Clock } from './clock.ts';

export const APPLICATION_ID = 1;
export const MAX_LINES_PER_REQUEST = 250;

/** Events of the order statuses a client must hear about (real-service-notes §2). */
const ORDER_STATUS_EVENTS: Record<string, string> = { finalized: 'order.finalized', fulfilled: 'order.fulfilled' };

/** The documented adjustment reasons (tradegecko/smaug: locales/stock_adjustment.en.yml), seeded as system reasons. */
export const ADJUSTMENT_REASONS = ['supplier', 'customer', 'damaged', 'shrinkage', 'promotion', 'production'] as const;

type Body = Record<string, any>;

export class Service {
  readonly store: Store;
  readonly clock: Clock;
  readonly events: ReadonlySet<string>;
  private pending: Map<string, [string, number]> | null = null;
  /** What the running operation is (`order.create`, `order.fulfil`...): the cause of its stock moves. */
  private cause: string | null = null;
  /** True while seeding: no events at all. */
  muted = false;
  private readonly onEvent: (event: string, id: number) => void;

  constructor(store: Store, clock: Clock, profile: Profile, onEvent: (event: string, id: number) => void) {
    this.store = store;
    this.clock = clock;
    this.events = profileEvents(profile);
    this.onEvent = onEvent;
  }


  /**
   * Runs one operation, named `cause` (`<resource>.<create|update|destroy|action>`, the cause of its stock
   * moves); its events are fired once each, after it succeeded.
   */
  run<T>(cause: string, fn: () => T): T {
    if (this.pending) return fn();
    this.pending = new Map();
    this.cause = cause;
    try {
      const out = fn();
      const fired = [...this.pending.values()];
      this.pending = null;
      for (const [e, id] of fired) this.onEvent(e, id);
      return out;
    } finally {
      this.pending = null;
      this.cause = null;
    }
  }

  fire(event: string, id: number): void {
    if (!ALL_EVENTS.has(event)) throw new Error(`sandbox bug: ${event} is neither a spec nor a documented event`);
    if (this.muted || !this.events.has(event)) return;
    if (this.pending) this.pending.set(`${event}:${id}`, [event, id]);
    else this.onEvent(event, id);
  }

  now(): string {
    return this.clock.iso();
  }
  today(): string {
    return this.now().slice(0, 10);
  }
  private stamp(): { created_at: string; updated_at: string } {
    const t = this.now();
    return { created_at: t, updated_at: t };
  }
  private touch(row: Row): void {
    row.updated_at = this.now();
  }

  // ---- lookups -------------------------------------------------------------------------------------------

  find(plural: string, id: number): Row {
    const row = this.store.table(plural)?.get(id);
    if (!row) throw new ApiFail(404, `${RESOURCES[plural]?.singular ?? plural} ${id} not found`);
    return row;
  }
  private need(plural: string, id: unknown, field: string, errors: Record<string, string[]>): Row | undefined {
    if (id === undefined || id === null) return undefined;
    const row = typeof id === 'number' ? this.store.table(plural)?.get(id) : undefined;
    if (!row) (errors[field] ??= []).push('does not exist');
    return row;
  }
  private check(errors: Record<string, string[]>): void {
    if (Object.keys(errors).length) throw invalid(errors);
  }

  // ---- stock ---------------------------------------------------------------------------------------------

  private stockAt(v: Row, loc: number): Stock {
    const map = v._stock as Map<number, Stock>;
    let s = map.get(loc);
    if (!s) {
      s = { soh: ZERO, committed: null, incoming: null, bin_location: null, reorder_point: null };
      map.set(loc, s);
    }
    return s;
  }

  /** Physical variants (and amounts) that `quantity` of variant `v` moves: a bundle moves its components. */
  private expand(variantId: number, quantity: Decimal, out: Map<number, Decimal>): void {
    const v = this.store.variants.get(variantId);
    if (!v) return;
    if (v.composite) {
      for (const p of this.store.compositions.get(v.id) ?? []) this.expand(p.component_id, quantity.times(p.quantity), out);
      return;
    }
    if (v.manage_stock === false) return;
    out.set(v.id, (out.get(v.id) ?? ZERO).plus(quantity));
  }

  stockChanged(variantId: number): void {
    const v = this.store.variants.get(variantId);
    if (!v) return;
    this.touch(v);
    // The product's `quantity` changes too, but its updated_at does not (a recorded response shows it:
    // tradegecko/gecko: spec/vcr_cassettes/products_sideloaded.yml).
    this.fire('variant.stock_level_update', variantId);
    for (const b of this.store.bundlesOf.get(variantId) ?? []) {
      const bundle = this.store.variants.get(b);
      if (bundle) { this.touch(bundle); this.fire('variant.stock_level_update', b); }
    }
  }

  private moveStock(field: 'soh' | 'committed' | 'incoming', variantId: number, loc: number, delta: Decimal): void {
    if (delta.isZero()) return;
    const v = this.store.variants.get(variantId)!;
    const s = this.stockAt(v, loc);
    s[field] = (s[field] ?? ZERO).plus(delta);
    if (!this.muted) this.store.recordMove(variantId, loc, s, this.now(), this.cause ?? 'unknown');
    this.stockChanged(variantId);
  }

  /** Moves on hand by `quantity` of variant (bundles: components) at a location. */
  private moveOnHand(variantId: number, loc: number, quantity: Decimal): void {
    const moves = new Map<number, Decimal>();
    this.expand(variantId, quantity, moves);
    for (const [id, q] of moves) this.moveStock('soh', id, loc, q);
  }

  /** Brings an order's commitments in line with its state: active and finalized orders commit what is unshipped. */
  private syncCommitments(order: Row): void {
    const want = new Map<string, Decimal>();
    if (order.status === 'active' || order.status === 'finalized') {
      for (const id of order.order_line_item_ids as number[]) {
        const line = this.store.order_line_items.get(id)!;
        if (line.freeform || line.variant_id == null) continue;
        const open = D(line.quantity).minus(line._shipped as Decimal);
        if (open.lte(0)) continue;
        this.hold(want, line.variant_id, open, order.stock_location_id);
      }
    }
    this.settle('committed', order._commit as Map<string, Decimal>, want);
    order._commit = want;
  }

  /** Brings a purchase order's incoming stock in line with its state: an active order brings in its lines. */
  private syncIncoming(po: Row): void {
    const want = new Map<string, Decimal>();
    if (po.status === 'active') {
      for (const id of po.purchase_order_line_item_ids as number[]) {
        const line = this.store.purchase_order_line_items.get(id)!;
        if (line.variant_id == null) continue;
        this.hold(want, line.variant_id, D(line.quantity), po.stock_location_id);
      }
    }
    this.settle('incoming', po._incoming as Map<string, Decimal>, want);
    po._incoming = want;
  }

  /** Adds `quantity` of a variant (a bundle: its components) at a location to a document's holdings. */
  private hold(holdings: Map<string, Decimal>, variantId: number, quantity: Decimal, loc: number): void {
    const moves = new Map<number, Decimal>();
    this.expand(variantId, quantity, moves);
    for (const [vid, q] of moves) {
      const key = `${vid}:${loc}`;
      holdings.set(key, (holdings.get(key) ?? ZERO).plus(q));
    }
  }

  /** Moves `field` stock by the difference between what a document held and now holds. */
  private settle(field: 'committed' | 'incoming', had: Map<string, Decimal>, want: Map<string, Decimal>): void {
    for (const key of new Set([...had.keys(), ...want.keys()])) {
      const delta = (want.get(key) ?? ZERO).minus(had.get(key) ?? ZERO);
      const [vid, loc] = key.split(':').map(Number) as [number, number];
      this.moveStock(field, vid, loc, delta);
    }
  }

  // ---- simple resources ----------------------------------------------------------------------------------

  private nullsCache = new Map<string, Record<string, null>>();
  private variantNullsCache: Record<string, null> | null = null;
  private variantNulls(): Record<string, null> {
    if (!this.variantNullsCache) {
      const { buy_price: _b, retail_price: _r, wholesale_price: _w, ...rest } = this.nulls('variants');
      this.variantNullsCache = rest;
    }
    return this.variantNullsCache;
  }
  /** Every writable field of a resource as null: a new record renders all its fields. */
  private nulls(plural: string): Record<string, null> {
    let n = this.nullsCache.get(plural);
    if (!n) this.nullsCache.set(plural, (n = Object.fromEntries(Object.keys(RESOURCES[plural]!.writable).map((k) => [k, null]))));
    return n;
  }

  createCompany(body: Body): Row {
    const f = pickFields(RESOURCES.companies!, body, { create: true });
    const errors: Record<string, string[]> = {};
    if (!['business', 'supplier', 'consumer'].includes(f.company_type as string)) errors.company_type = ['is not included in the list'];
    if (f.status != null && !['active', 'disabled', 'archived'].includes(f.status as string)) errors.status = ['is not included in the list'];
    if (f.company_code && this.store.companies.order.some((c) => c.company_code === f.company_code)) errors.company_code = ['has already been taken'];
    this.check(errors);
    const row = this.store.companies.insert({
      ...this.stamp(), ...this.nulls('companies'), default_document_theme_id: null, tags: [], ...f,
      status: (f.status as string) ?? 'active', address_ids: [], contact_ids: [], note_ids: [],
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
      ...this.stamp(), ...this.nulls('addresses'), ...f, status: 'active',
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
      ...this.stamp(), ...this.nulls('contacts'), ...f, online_ordering: f.online_ordering ?? false, status: 'active',
      iguana_admin: false, invitation_accepted_at: null,
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
    if (this.store.currencies.order.some((c) => c.iso === f.iso && c.status === 'active')) throw invalid({ iso: ['has already been taken'] });
    return this.store.currencies.insert({
      ...this.stamp(), ...this.nulls('currencies'), delimiter: ',', separator: '.', format: '%u%n', precision: 2,
      subunit: 100, rate: '1.0', symbol: '$', name: f.iso, ...f, status: 'active',
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
      ...this.stamp(), ...this.nulls('products'), ...f, status: 'active', search_cache: null, variant_ids: [],
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
      else for (const e of body.initial_stock_levels) {
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
        if (!comp || comp.composite || !q || q.lte(0)) (errors.composition ??= []).push('component is not a stock variant with a positive quantity');
        else parts.push({ component_id: comp.id, quantity: q });
      }
    }
    if (product && product.status === 'archived') errors.product_id = ['is archived'];
    this.check(errors);
    const cost = parseDecimal(body.initial_cost_price);
    const prices: Record<string, string | null> = {
      buy: (f.buy_price as string | undefined) ?? null, retail: (f.retail_price as string | undefined) ?? null,
      wholesale: (f.wholesale_price as string | undefined) ?? null,
    };
    // Prices live in _prices (rendered as *_price, prices, variant_prices); no delete on the row, which would
    // turn 100,000 records into slow dictionary-mode objects.
    const { buy_price: _b, retail_price: _r, wholesale_price: _w, ...fields } = f;
    const row = this.store.variants.insert({
      ...this.stamp(), ...this.variantNulls(), default_ledger_account_id: null, composite: false, is_online: false,
      keep_selling: false, manage_stock: true, online_ordering: false, sellable: true, taxable: true,
      last_cost_price: cost ? qty1(cost) : null, moving_average_cost: cost ? cost.toString() : null,
      position: (product!.variant_ids as number[]).length + 1, name: product!.name, sku: null, status: 'active',
      image_ids: [], online_id: null, reorder_point: null, ...fields, _prices: prices, _stock: new Map<number, Stock>(),
    });
    if (!row.composite) {
      const stock = row._stock as Map<number, Stock>;
      if (!levels.length) levels.push([this.store.account.primary_location_id, ZERO]);
      for (const [loc, q] of levels) {
        stock.set(loc, { soh: q, committed: null, incoming: null, bin_location: null, reorder_point: null });
        if (!q.isZero() && !this.muted) this.store.recordMove(row.id, loc, stock.get(loc)!, this.now(), this.cause ?? 'unknown');
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
    return this.store.webhooks.insert({ ...this.stamp(), event: f.event, address: f.address, oauth_application_id: applicationId, _failingSince: null });
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
    if (typeof f.event === 'string' && !this.events.has(f.event)) errors.event = ['is not included in the list'];
    if (typeof f.address === 'string' && !(/^https?:\/\//.test(f.address) && URL.canParse(f.address))) errors.address = ['is not a valid URL'];
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
      if (f.company_type !== undefined && !['business', 'supplier', 'consumer'].includes(f.company_type as string)) errors.company_type = ['is not included in the list'];
      if (f.status !== undefined && !['active', 'disabled', 'archived'].includes(f.status as string)) errors.status = ['is not included in the list'];
    }
    if ('company_id' in f && f.company_id !== row.company_id) errors.company_id = ['cannot be changed'];
    for (const req of def.required ?? []) if (req in f && (f[req] === null || f[req] === '')) (errors[req] ??= []).push("can't be blank");
    if (plural === 'variants' && 'product_id' in f && f.product_id !== row.product_id) errors.product_id = ['cannot be changed'];
    this.check(errors);
    if (plural === 'variants') {
      const prices = row._prices as Record<string, string | null>;
      for (const k of ['buy', 'retail', 'wholesale']) if (`${k}_price` in f) { prices[k] = f[`${k}_price`] as string | null; delete f[`${k}_price`]; }
      const stockBefore = row.manage_stock;
      Object.assign(row, f);
      if (f.manage_stock !== undefined && f.manage_stock !== stockBefore) this.stockChanged(row.id);
    } else {
      Object.assign(row, f);
      if (plural === 'products') for (const vid of row.variant_ids as number[]) { const v = this.store.variants.get(vid); if (v) this.touch(v); }
      if (plural === 'addresses' && f.country !== undefined && body.country_code === undefined) row.country_code = countryCode(f.country as string);
    }
    this.touch(row);
    const event = `${def.singular}.update`;
    if (ALL_EVENTS.has(event)) this.fire(event, id);
    return row;
  }

  updateAccount(body: Body): void {
    const writable = [
      'contact_email', 'contact_mobile', 'contact_phone', 'country', 'default_order_price_list_id', 'default_purchase_order_price_list_id',
      'default_sales_ledger_account_on', 'default_tax_treatment', 'default_document_theme_id', 'industry', 'name', 'tax_label',
      'tax_number', 'tax_number_label', 'website', 'stock_level_warn', 'time_zone', 'primary_location_id', 'primary_billing_location_id',
      'default_currency_id', 'default_payment_method_id', 'default_payment_term_id', 'billing_contact_id',
      'default_sales_order_tax_type_id', 'default_purchase_order_tax_type_id', 'default_tax_exempt_id', 'default_tax_type_id',
      'default_tax_type', 'default_order_price_type_id', 'default_purchase_order_price_type_id',
    ];
    const errors: Record<string, string[]> = {};
    if (body.default_tax_treatment !== undefined && !['inclusive', 'exclusive'].includes(body.default_tax_treatment)) errors.default_tax_treatment = ['is not included in the list'];
    if (body.default_sales_ledger_account_on !== undefined && !['company', 'variant', 'channel'].includes(body.default_sales_ledger_account_on)) errors.default_sales_ledger_account_on = ['is not included in the list'];
    if (body.country !== undefined && !(typeof body.country === 'string' && /^[A-Z]{2}$/.test(body.country))) errors.country = ['is not a valid ISO 3166-1 alpha-2 code'];
    if (body.primary_location_id !== undefined && !this.store.locations.get(body.primary_location_id)) errors.primary_location_id = ['does not exist'];
    this.check(errors);
    for (const k of writable) if (k in body) this.store.account[k] = body[k];
    this.touch(this.store.account);
    this.fire('account.update', this.store.account.id);
  }

  /** DELETE: soft (archived / deleted) or permanent, per resource. */
  destroy(plural: string, id: number): void {
    const def = RESOURCES[plural];
    if (!def?.deletion) throw new ApiFail(404, `DELETE is not supported on ${plural}`);
    const row = this.find(plural, id);
    if (plural === 'orders') return this.deleteOrder(row);
    if (plural === 'fulfillments') return this.deleteFulfillment(row);
    if (plural === 'purchase_orders') return this.deletePurchaseOrder(row);
    if (plural === 'order_line_items') return this.deleteOrderLine(row);
    if (plural === 'purchase_order_line_items') return this.deletePurchaseLine(row);
    if (def.deletion === 'permanent') {
      if (plural === 'companies') {
        for (const a of row.address_ids as number[]) this.store.addresses.remove(a);
        for (const c of row.contact_ids as number[]) this.store.contacts.remove(c);
      }
      if (plural === 'addresses' || plural === 'contacts') {
        const company = this.store.companies.get(row.company_id);
        if (company) {
          const key = plural === 'addresses' ? 'address_ids' : 'contact_ids';
          company[key] = (company[key] as number[]).filter((x) => x !== id);
          this.touch(company);
        }
      }
      if (plural === 'invoices') this.deleteInvoice(row);
      this.store.table(plural)!.remove(id);
      this.fireDestroy(def.singular, id);
      return;
    }
    if (row.status === 'archived') return;
    row.status = 'archived';
    this.touch(row);
    if (plural === 'products') {
      for (const vid of row.variant_ids as number[]) {
        const v = this.store.variants.get(vid);
        if (v && v.status !== 'archived') { v.status = 'archived'; this.touch(v); }
      }
    }
    this.fireDestroy(def.singular, id);
  }

  /** `<resource>.destroy` exists for companies, invoices and products only (real-service-notes §2). */
  private fireDestroy(singular: string, id: number): void {
    const event = `${singular}.destroy`;
    if (ALL_EVENTS.has(event)) this.fire(event, id);
  }

  // ---- orders --------------------------------------------------------------------------------------------

  private lines(order: Row): Row[] {
    return (order.order_line_item_ids as number[]).map((id) => this.store.order_line_items.get(id)!);
  }

  private addOrderLines(order: Row, items: unknown, errors: Record<string, string[]>): (() => void)[] {
    const work: (() => void)[] = [];
    if (items == null) return work;
    if (!Array.isArray(items)) { errors.order_line_items = ['must be an array']; return work; }
    if (items.length > MAX_LINES_PER_REQUEST) { errors.order_line_items = [`too many line items in one request (at most ${MAX_LINES_PER_REQUEST})`]; return work; }
    items.forEach((item: Body, i) => {
      const bad = (m: string) => (errors[`order_line_items[${i}]`] ??= []).push(m);
      if (typeof item !== 'object' || item === null) return bad('is invalid');
      const q = parseDecimal(item.quantity);
      if (!q || q.lte(0)) bad('quantity must be greater than 0');
      const price = item.price == null ? null : parseDecimal(item.price);
      if (item.price != null && !price) bad('price is not a number');
      if (item.id != null) {
        const line = this.store.order_line_items.get(item.id);
        if (!line || line.order_id !== order.id) return bad('id is not a line of this order');
        if (q && q.lt(line._packed as Decimal)) return bad('quantity cannot be less than the packed quantity');
        work.push(() => { if (q) line.quantity = qty1(q); if (price) line.price = price.toString(); this.touch(line); });
        return;
      }
      const freeform = item.freeform === true || item.freeform === 'true';
      let variant: Row | undefined;
      if (!freeform) {
        variant = typeof item.variant_id === 'number' ? this.store.variants.get(item.variant_id) : undefined;
        if (!variant) return bad('variant_id does not exist');
        if (variant.status === 'archived') return bad('variant_id is archived');
      } else if (!item.label) return bad('label is required on a freeform line');
      if (!q) return;
      work.push(() => {
        const line = this.store.order_line_items.insert({
          ...this.stamp(), order_id: order.id, variant_id: variant?.id ?? null, tax_type_id: null, discount: item.discount != null ? String(item.discount) : null,
          quantity: qty1(q), price: price ? price.toString() : ((variant?._prices as Record<string, string | null> | undefined)?.wholesale ?? '0.0'),
          tax_rate_override: null, freeform, label: item.label ?? null, position: (order.order_line_item_ids as number[]).length,
          line_type: null, image_url: null, tax_rate: null, fulfillment_line_item_ids: [], invoice_line_item_ids: [],
          _shipped: ZERO, _packed: ZERO, _invoiced: ZERO, _returned: ZERO,
        });
        (order.order_line_item_ids as number[]).push(line.id);
      });
    });
    return work;
  }

  private refreshOrder(order: Row): void {
    let total = ZERO;
    let packed = 0, shipped = 0, partPacked = 0, partShipped = 0, invoiced = 0, partInvoiced = 0;
    const lines = this.lines(order).filter((l) => !l.freeform);
    for (const l of this.lines(order)) total = total.plus(D(l.quantity).times(D(l.price ?? 0)));
    for (const l of lines) {
      const q = D(l.quantity);
      const p = l._packed as Decimal, s = l._shipped as Decimal, inv = l._invoiced as Decimal;
      if (p.gte(q)) packed++; else if (p.gt(0)) partPacked++;
      if (s.gte(q)) shipped++; else if (s.gt(0)) partShipped++;
      if (inv.gte(q)) invoiced++; else if (inv.gt(0)) partInvoiced++;
    }
    const n = lines.length;
    const state = (full: number, part: number, all: string, some: string, none: string) =>
      n > 0 && full === n ? all : full + part > 0 ? some : none;
    order.packed_status = state(packed, partPacked, 'packed', 'partial', 'unpacked');
    order.fulfillment_status = state(shipped, partShipped, 'shipped', 'partial', 'unshipped');
    if (order.invoice_ids.length) order.invoice_status = state(invoiced, partInvoiced, 'invoiced', 'partial', 'uninvoiced');
    order.total = total.toString();
    order.cached_total = order.total;
    if (n > 0 && shipped === n && (order.status === 'active' || order.status === 'finalized')) order.status = 'fulfilled';
    this.syncCommitments(order);
    this.touch(order);
    this.statusEvents(order, ORDER_STATUS_EVENTS);
  }

  /**
   * Fires the event of a status a record has newly reached (`order.finalized`...), whichever path got it
   * there: every operation on the record ends here, so no path can miss or repeat one.
   */
  private statusEvents(row: Row, events: Record<string, string>): void {
    if (row._status === row.status) return;
    row._status = row.status;
    const event = events[row.status];
    if (event) this.fire(event, row.id);
  }

  private orderParties(body: Body, errors: Record<string, string[]>, f: Record<string, unknown>): (() => Partial<Row>) {
    // Nested company / addresses are created only when the whole order is valid.
    let companyId = f.company_id as number | undefined;
    if (companyId != null) this.need('companies', companyId, 'company_id', errors);
    if (companyId == null && body.company == null) errors.company_id = ["can't be blank"];
    if (body.company != null && companyId == null && body.shipping_address == null && f.shipping_address_id == null) errors.shipping_address = ["can't be blank when a new company is given"];
    for (const k of ['shipping_address_id', 'billing_address_id'] as const) {
      const a = this.need('addresses', f[k], k, errors);
      if (a && companyId != null && a.company_id !== companyId) (errors[k] ??= []).push('belongs to another company');
    }
    for (const k of ['shipping_address', 'billing_address'] as const) {
      if (body[k] != null && (typeof body[k] !== 'object' || !body[k].address1)) errors[`${k}.address1`] = ["can't be blank"];
    }
    if (body.company != null && (typeof body.company !== 'object' || !body.company.name)) errors['company.name'] = ["can't be blank"];
    return () => {
      if (companyId == null) companyId = this.createCompany({ company_type: 'consumer', ...body.company }).id;
      let ship = f.shipping_address_id as number | undefined;
      let bill = f.billing_address_id as number | undefined;
      if (ship == null && body.shipping_address) ship = this.createAddress({ ...body.shipping_address, company_id: companyId }).id;
      if (bill == null && body.billing_address) bill = this.createAddress({ ...body.billing_address, company_id: companyId }).id;
      return { company_id: companyId, shipping_address_id: ship ?? null, billing_address_id: bill ?? ship ?? null };
    };
  }

  createOrder(body: Body): Row {
    const f = pickFields(RESOURCES.orders!, body, { create: true });
    const errors: Record<string, string[]> = {};
    const status = (f.status as string | undefined) ?? 'draft';
    if (!['draft', 'active'].includes(status)) errors.status = ['must be draft or active on creation'];
    const loc = (f.stock_location_id as number | undefined) ?? this.store.account.primary_location_id;
    if (!this.store.locations.get(loc)) errors.stock_location_id = ['does not exist'];
    let currency = this.store.currencies.get(this.store.account.default_currency_id);
    if (f.currency_iso != null) {
      currency = this.store.currencies.order.find((c) => c.iso === String(f.currency_iso).toUpperCase() && c.status === 'active');
      if (!currency) errors.currency_iso = ['does not match a currency; create the currency first'];
    }
    if (f.order_number && this.store.orders.order.some((o) => o.order_number === f.order_number)) errors.order_number = ['has already been taken'];
    const parties = this.orderParties(body, errors, f);
    const placeholder = { id: -1, order_line_item_ids: [] } as unknown as Row;
    this.addOrderLines(placeholder, body.order_line_items, errors);
    this.check(errors);
    delete f.currency_iso;
    const order = this.store.orders.insert({
      ...this.stamp(), fulfillment_ids: [], invoice_ids: [], return_ids: [], company_id: null, contact_id: null,
      shipping_address_id: null, billing_address_id: null, user_id: 1, assignee_id: null, stock_location_id: loc,
      currency_id: currency?.id ?? null, currency_iso: currency?.iso ?? null,
      order_number: f.order_number ?? `SO${String(++this.store.counters.order).padStart(4, '0')}`,
      phone_number: null, email: null, notes: null, reference_number: null, status, payment_status: 'unpaid',
      invoice_status: 'uninvoiced', invoice_numbers: {}, packed_status: 'unpacked', fulfillment_status: 'unshipped',
      return_status: 'not_returned', tax_type: this.store.account.default_tax_treatment ?? 'exclusive', default_price_type_id: 'wholesale',
      issued_at: this.today(), ship_at: null, tags: [], tax_override: null, tax_label: 'GST', tracking_number: null,
      source_id: null, source_url: null, total: '0', source: null, url: null, cached_total: '0', order_line_item_ids: [],
      ...f, ...parties(), _commit: new Map<string, Decimal>(),
    });
    order.status = status;
    order._status = status;
    for (const w of this.addOrderLines(order, body.order_line_items, {})) w();
    this.refreshOrder(order);
    order.updated_at = order.created_at;
    this.fire('order.create', order.id);
    return order;
  }

  updateOrder(id: number, body: Body): Row {
    const order = this.find('orders', id);
    const f = pickFields(RESOURCES.orders!, body, { create: false });
    const errors: Record<string, string[]> = {};
    const closed = ['fulfilled', 'void', 'deleted'].includes(order.status);
    if (f.status !== undefined && f.status !== order.status) {
      const allowed: Record<string, string[]> = { draft: ['active', 'finalized', 'void'], active: ['finalized', 'void', 'draft'], finalized: ['void'] };
      if (!(allowed[order.status] ?? []).includes(f.status as string)) errors.status = [`cannot change from ${order.status} to ${f.status}`];
      if (f.status === 'draft' && this.lines(order).some((l) => (l._packed as Decimal).gt(0))) errors.status = ['cannot return to draft once packed'];
      if (f.status === 'void' && this.lines(order).some((l) => (l._shipped as Decimal).gt(0))) errors.status = ['cannot void a partly shipped order'];
    }
    if (body.order_line_items != null && closed) errors.order_line_items = [`cannot be changed on a ${order.status} order`];
    if (f.stock_location_id !== undefined && !this.store.locations.get(f.stock_location_id as number)) errors.stock_location_id = ['does not exist'];
    if (f.stock_location_id !== undefined && f.stock_location_id !== order.stock_location_id && order.packed_status !== 'unpacked') errors.stock_location_id = ['cannot change once packed'];
    for (const k of ['shipping_address_id', 'billing_address_id'] as const) this.need('addresses', f[k], k, errors);
    if (f.company_id !== undefined) this.need('companies', f.company_id, 'company_id', errors);
    if (f.currency_iso !== undefined) {
      const c = this.store.currencies.order.find((x) => x.iso === String(f.currency_iso).toUpperCase() && x.status === 'active');
      if (!c) errors.currency_iso = ['does not match a currency; create the currency first'];
      else { f.currency_id = c.id; f.currency_iso = c.iso; }
    }
    const work = this.addOrderLines(order, body.order_line_items, errors);
    this.check(errors);
    const voiding = f.status === 'void' && order.status !== 'void';
    Object.assign(order, f);
    for (const w of work) w();
    if (voiding) this.voidFulfillmentsOf(order);
    this.refreshOrder(order);
    return order;
  }

  private deleteOrder(order: Row): void {
    if (order.status === 'deleted') return;
    if (order.status === 'fulfilled' || this.lines(order).some((l) => (l._shipped as Decimal).gt(0))) throw new ApiFail(422, 'A shipped order cannot be deleted; void or return it instead', { status: ['cannot delete a shipped order'] });
    this.voidFulfillmentsOf(order);
    order.status = 'deleted';
    this.refreshOrder(order);
  }

  private voidFulfillmentsOf(order: Row): void {
    for (const fid of order.fulfillment_ids as number[]) {
      const ful = this.store.fulfillments.get(fid)!;
      if (ful.status === 'packed') this.unpack(ful, 'void');
    }
  }

  private deleteOrderLine(line: Row): void {
    const order = this.store.orders.get(line.order_id)!;
    if (['fulfilled', 'void', 'deleted'].includes(order.status)) throw new ApiFail(422, `Lines of a ${order.status} order cannot be removed`, { order_id: [`order is ${order.status}`] });
    if ((line._packed as Decimal).gt(0)) throw new ApiFail(422, 'A packed line cannot be removed', { quantity: ['is packed'] });
    order.order_line_item_ids = (order.order_line_item_ids as number[]).filter((x) => x !== line.id);
    this.store.order_line_items.remove(line.id);
    this.refreshOrder(order);
  }

  createOrderLine(body: Body): Row {
    const order = this.find('orders', body.order_id);
    const before = new Set(order.order_line_item_ids as number[]);
    this.updateOrder(order.id, { order_line_items: [body] });
    const id = (order.order_line_item_ids as number[]).find((x) => !before.has(x))!;
    return this.store.order_line_items.get(id)!;
  }

  updateOrderLine(id: number, body: Body): Row {
    const line = this.find('order_line_items', id);
    this.updateOrder(line.order_id, { order_line_items: [{ quantity: line.quantity, ...body, id }] });
    return line;
  }

  /** Which quantities of which lines an action or a fulfillment covers; default: every unpacked remainder. */
  private selection(order: Row, spec: unknown, field: string): [Row, Decimal][] {
    const open = (l: Row) => D(l.quantity).minus(l._packed as Decimal);
    if (spec == null || (Array.isArray(spec) && spec.length === 0)) {
      return this.lines(order).filter((l) => !l.freeform && open(l).gt(0)).map((l) => [l, open(l)]);
    }
    const entries: [unknown, unknown][] = Array.isArray(spec)
      ? spec.map((e: any) => typeof e === 'object' && e !== null ? [e.order_line_item_id ?? e.id, e.quantity] : [e, undefined])
      : typeof spec === 'object' ? Object.entries(spec as object).map(([k, v]) => [Number(k), v]) : [];
    const errors: Record<string, string[]> = {};
    const out: [Row, Decimal][] = [];
    entries.forEach(([id, q], i) => {
      const line = typeof id === 'number' ? this.store.order_line_items.get(id) : undefined;
      if (!line || line.order_id !== order.id) return void (errors[`${field}[${i}]`] ??= []).push('order_line_item_id is not a line of this order');
      const want = q === undefined ? open(line) : parseDecimal(q);
      if (!want || want.lte(0)) return void (errors[`${field}[${i}]`] ??= []).push('quantity must be greater than 0');
      if (want.gt(open(line))) return void (errors[`${field}[${i}]`] ??= []).push(`quantity exceeds the unpacked quantity ${open(line).toString()}`);
      out.push([line, want]);
    });
    if (!entries.length) errors[field] = ['is invalid'];
    this.check(errors);
    return out;
  }

  private packable(order: Row): void {
    if (order.status !== 'active' && order.status !== 'finalized') {
      throw new ApiFail(422, `A ${order.status} order cannot be packed or fulfilled`, { status: [`is ${order.status}; must be active or finalized`] });
    }
  }

  private newFulfillment(order: Row, items: [Row, Decimal][], f: Record<string, unknown>): Row {
    const loc = (f.stock_location_id as number | undefined) ?? order.stock_location_id;
    const ful = this.store.fulfillments.insert({
      ...this.stamp(), order_id: order.id, shipping_address_id: order.shipping_address_id, billing_address_id: order.billing_address_id,
      status: 'packed', exchange_rate: '1.0', packed_at: this.today(), shipped_at: null, received_at: null,
      delivery_type: null, tracking_number: null, notes: null, tracking_url: null, tracking_company: null, receipt: {},
      destination_url: null, fulfillment_line_item_ids: [], ...f, stock_location_id: loc,
    });
    ful.status = 'packed';
    for (const [line, q] of items) {
      const v = line.variant_id != null ? this.store.variants.get(line.variant_id) : undefined;
      const fli = this.store.fulfillment_line_items.insert({
        ...this.stamp(), fulfillment_id: ful.id, order_line_item_id: line.id, variant_id: line.variant_id, variant_sku: v?.sku ?? null,
        quantity: qty1(q), base_price: line.price ?? null,
      });
      (ful.fulfillment_line_item_ids as number[]).push(fli.id);
      (line.fulfillment_line_item_ids as number[]).push(fli.id);
      line._packed = (line._packed as Decimal).plus(q);
      this.touch(line);
    }
    (order.fulfillment_ids as number[]).push(ful.id);
    this.fire('fulfillment.create', ful.id);
    return ful;
  }

  private ship(ful: Row, tracking: Record<string, unknown>): void {
    const order = this.store.orders.get(ful.order_id)!;
    for (const [k, v] of Object.entries(tracking)) if (v !== undefined) ful[k] = v;
    ful.status = 'fulfilled';
    ful.shipped_at = typeof tracking.shipped_at === 'string' ? tracking.shipped_at : this.now();
    for (const id of ful.fulfillment_line_item_ids as number[]) {
      const fli = this.store.fulfillment_line_items.get(id)!;
      const line = this.store.order_line_items.get(fli.order_line_item_id)!;
      line._shipped = (line._shipped as Decimal).plus(D(fli.quantity));
      if (line.variant_id != null) this.moveOnHand(line.variant_id, ful.stock_location_id, D(fli.quantity).neg());
    }
    this.touch(ful);
    this.fire('fulfillment.fulfilled', ful.id);
    this.refreshOrder(order);
  }

  private unpack(ful: Row, status: 'void' | 'deleted'): void {
    for (const id of ful.fulfillment_line_item_ids as number[]) {
      const fli = this.store.fulfillment_line_items.get(id)!;
      const line = this.store.order_line_items.get(fli.order_line_item_id);
      if (line) line._packed = (line._packed as Decimal).minus(D(fli.quantity));
    }
    ful.status = status;
    this.touch(ful);
  }

  createFulfillment(body: Body): Row {
    const f = pickFields(RESOURCES.fulfillments!, body, { create: true });
    const errors: Record<string, string[]> = {};
    const order = this.need('orders', f.order_id, 'order_id', errors);
    if (f.stock_location_id != null) this.need('locations', f.stock_location_id, 'stock_location_id', errors);
    if (f.status != null && !['packed', 'fulfilled'].includes(f.status as string)) errors.status = ['must be packed or fulfilled on creation'];
    this.check(errors);
    this.packable(order!);
    const items = this.selection(order!, body.fulfillment_line_items, 'fulfillment_line_items');
    if (!items.length) throw new ApiFail(422, 'Nothing left to pack on this order', { fulfillment_line_items: ['nothing left to pack'] });
    const { status, tracking_company, tracking_number, tracking_url, ...rest } = f;
    const ful = this.newFulfillment(order!, items, rest);
    if (status === 'fulfilled') this.ship(ful, { tracking_company, tracking_number, tracking_url });
    else Object.assign(ful, Object.fromEntries(Object.entries({ tracking_company, tracking_number, tracking_url }).filter(([, v]) => v !== undefined)));
    this.refreshOrder(order!);
    return ful;
  }

  updateFulfillment(id: number, body: Body): Row {
    const ful = this.find('fulfillments', id);
    const f = pickFields(RESOURCES.fulfillments!, body, { create: false });
    delete f.order_id;
    const errors: Record<string, string[]> = {};
    const to = f.status as string | undefined;
    if (to !== undefined && to !== ful.status) {
      const ok = (ful.status === 'packed' && ['fulfilled', 'void'].includes(to));
      if (!ok) errors.status = [`cannot change from ${ful.status} to ${to}`];
    }
    if (f.stock_location_id !== undefined && f.stock_location_id !== ful.stock_location_id && ful.status !== 'packed') errors.stock_location_id = ['cannot change after shipping'];
    if (f.stock_location_id != null) this.need('locations', f.stock_location_id, 'stock_location_id', errors);
    this.check(errors);
    const { status, ...rest } = f;
    Object.assign(ful, rest);
    const order = this.store.orders.get(ful.order_id)!;
    if (status === 'fulfilled' && ful.status === 'packed') this.ship(ful, {});
    else if (status === 'void' && ful.status === 'packed') { this.unpack(ful, 'void'); this.refreshOrder(order); }
    else this.touch(ful);
    return ful;
  }

  private deleteFulfillment(ful: Row): void {
    if (ful.status === 'fulfilled') throw new ApiFail(422, 'A shipped fulfillment cannot be deleted', { status: ['is fulfilled'] });
    if (ful.status === 'deleted') return;
    if (ful.status === 'packed') this.unpack(ful, 'deleted');
    else { ful.status = 'deleted'; this.touch(ful); }
    this.refreshOrder(this.store.orders.get(ful.order_id)!);
  }

  orderAction(id: number, action: string, body: Body): Record<string, unknown> {
    const order = this.find('orders', id);
    const spec = body.order_line_item_ids ?? body.order_line_items ?? body.fulfillment_line_items;
    switch (action) {
      case 'invoice': return { invoice: this.invoice(order, false) };
      case 'pay': {
        if (order.payment_status === 'paid') throw new ApiFail(422, 'The order is already paid', { payment_status: ['is paid'] });
        if (['void', 'deleted'].includes(order.status)) throw new ApiFail(422, `A ${order.status} order cannot be paid`, { status: [`is ${order.status}`] });
        if (order.invoice_status !== 'invoiced') this.invoice(order, true);
        order.payment_status = 'paid';
        this.pay(order);
        this.refreshOrder(order);
        return { order };
      }
      case 'pack': {
        this.packable(order);
        const items = this.selection(order, spec, 'order_line_item_ids');
        if (!items.length) throw new ApiFail(422, 'Nothing left to pack on this order', { order_line_item_ids: ['nothing left to pack'] });
        const ful = this.newFulfillment(order, items, {});
        this.refreshOrder(order);
        return { fulfillment: ful };
      }
      case 'fulfil':
      case 'fulfill': {
        this.packable(order);
        const done: Row[] = [];
        const items = this.selection(order, spec, 'order_line_item_ids');
        if (spec != null) {
          // With a selection: a packed fulfillment of those quantities, shipped later by PUT /fulfillments/{id}
          // (tradegecko/smaug: source/guides/3pl.html.md.erb).
          if (items.length) done.push(this.newFulfillment(order, items, {}));
        } else {
          // Without one: every packed fulfillment ships, and a fulfilled one covers the unpacked rest.
          for (const fid of order.fulfillment_ids as number[]) {
            const ful = this.store.fulfillments.get(fid)!;
            if (ful.status === 'packed') { this.ship(ful, {}); done.push(ful); }
          }
          if (items.length) {
            const ful = this.newFulfillment(order, items, {});
            this.ship(ful, {});
            done.push(ful);
          }
        }
        if (!done.length) throw new ApiFail(422, 'Nothing left to fulfil on this order', { order_line_item_ids: ['nothing left to fulfil'] });
        this.refreshOrder(order);
        return { fulfillments: done };
      }
      case 'void': {
        if (!['draft', 'active', 'finalized'].includes(order.status)) throw new ApiFail(422, `A ${order.status} order cannot be voided`, { status: [`is ${order.status}`] });
        if (this.lines(order).some((l) => (l._shipped as Decimal).gt(0))) throw new ApiFail(422, 'A partly shipped order cannot be voided', { fulfillment_status: ['is partial'] });
        this.voidFulfillmentsOf(order);
        order.status = 'void';
        this.refreshOrder(order);
        return { order };
      }
      default:
        throw new ApiFail(404, `Unknown order action ${action}`);
    }
  }

  private invoice(order: Row, quiet: boolean): Row {
    if (['void', 'deleted'].includes(order.status)) throw new ApiFail(422, `A ${order.status} order cannot be invoiced`, { status: [`is ${order.status}`] });
    const lines = this.lines(order).filter((l) => D(l.quantity).gt(l._invoiced as Decimal));
    if (!lines.length) {
      if (quiet) return this.store.invoices.get((order.invoice_ids as number[]).at(-1)!)!;
      throw new ApiFail(422, 'The order is already fully invoiced', { invoice_status: ['is invoiced'] });
    }
    const number = `INV${String(++this.store.counters.invoice).padStart(4, '0')}`;
    const due = new Date(this.clock.now() + 30 * 86400_000).toISOString().slice(0, 10);
    const inv = this.store.invoices.insert({
      ...this.stamp(), document_url: null, order_id: order.id, shipping_address_id: order.shipping_address_id,
      billing_address_id: order.billing_address_id, payment_term_id: null, invoice_number: number, invoiced_at: this.today(),
      due_at: due, notes: null, exchange_rate: '1.0', destination_url: null, invoice_line_item_ids: [],
    });
    lines.forEach((l, position) => {
      const q = D(l.quantity).minus(l._invoiced as Decimal);
      const ili = this.store.invoice_line_items.insert({ ...this.stamp(), quantity: qty1(q), position, invoice_id: inv.id, order_line_item_id: l.id, ledger_account_id: null });
      (inv.invoice_line_item_ids as number[]).push(ili.id);
      (l.invoice_line_item_ids as number[]).push(ili.id);
      l._invoiced = D(l.quantity);
      this.touch(l);
    });
    (order.invoice_ids as number[]).push(inv.id);
    order.invoice_numbers = { ...order.invoice_numbers, [inv.id]: number };
    order.invoice_status = 'invoiced';
    if (order.status === 'draft' || order.status === 'active') order.status = 'finalized';
    this.refreshOrder(order);
    this.fire('invoice.create', inv.id);
    return inv;
  }

  /** A payment of the order's latest invoice (the pay action; real-service-notes §2 payment.create). */
  private pay(order: Row): void {
    const invoiceId = (order.invoice_ids as number[]).at(-1) ?? null;
    const payment = this.store.payments.insert({
      ...this.stamp(), invoice_id: invoiceId, order_id: order.id, amount: order.total, paid_at: this.now(),
      payment_method_id: this.store.account.default_payment_method_id, reference: null, exchange_rate: '1.0', status: 'active',
    });
    this.fire('payment.create', payment.id);
  }

  createInvoice(body: Body): Row {
    const errors: Record<string, string[]> = {};
    const order = this.need('orders', body.order_id, 'order_id', errors);
    if (body.order_id == null) errors.order_id = ["can't be blank"];
    this.check(errors);
    return this.invoice(order!, false);
  }

  private deleteInvoice(inv: Row): void {
    const order = this.store.orders.get(inv.order_id);
    for (const id of inv.invoice_line_item_ids as number[]) {
      const ili = this.store.invoice_line_items.get(id)!;
      const line = this.store.order_line_items.get(ili.order_line_item_id);
      if (line) {
        line._invoiced = (line._invoiced as Decimal).minus(D(ili.quantity));
        line.invoice_line_item_ids = (line.invoice_line_item_ids as number[]).filter((x) => x !== id);
        this.touch(line);
      }
      this.store.invoice_line_items.remove(id);
    }
    if (order) {
      order.invoice_ids = (order.invoice_ids as number[]).filter((x) => x !== inv.id);
      const numbers = { ...order.invoice_numbers };
      delete numbers[inv.id];
      order.invoice_numbers = numbers;
      order.invoice_status = order.invoice_ids.length ? 'partial' : 'uninvoiced';
      this.refreshOrder(order);
    }
  }

  // ---- returns -------------------------------------------------------------------------------------------

  createReturn(body: Body): Row {
    const f = pickFields(RESOURCES.fulfillment_returns!, body, { create: true });
    const errors: Record<string, string[]> = {};
    const order = this.need('orders', f.order_id, 'order_id', errors);
    if (f.location_id != null) this.need('locations', f.location_id, 'location_id', errors);
    const items: [Row, Decimal][] = [];
    const spec = body.fulfillment_return_line_items;
    if (!Array.isArray(spec) || !spec.length) errors.fulfillment_return_line_items = ["can't be blank"];
    else if (order) spec.forEach((e: Body, i) => {
      const line = typeof e?.order_line_item_id === 'number' ? this.store.order_line_items.get(e.order_line_item_id) : undefined;
      const q = parseDecimal(e?.quantity);
      const key = `fulfillment_return_line_items[${i}]`;
      if (!line || line.order_id !== order.id) return void (errors[key] ??= []).push('order_line_item_id is not a line of this order');
      if (!q || q.lte(0)) return void (errors[key] ??= []).push('quantity must be greater than 0');
      const returnable = (line._shipped as Decimal).minus(line._returned as Decimal);
      if (q.gt(returnable)) return void (errors[key] ??= []).push(`quantity exceeds the shipped, unreturned quantity ${returnable.toString()}`);
      items.push([line, q]);
    });
    this.check(errors);
    const ret = this.store.fulfillment_returns.insert({
      ...this.stamp(), order_id: order!.id, location_id: (f.location_id as number | undefined) ?? order!.stock_location_id,
      delivery_type: null, exchange_rate: '1.0', notes: null, received_at: null, tracking_company: null, tracking_number: null,
      tracking_url: null, ...f, status: 'returning',
      credit_note_number: `CN${String(++this.store.counters.credit_note).padStart(4, '0')}`,
      order_number: order!.order_number, company_id: order!.company_id, fulfillment_return_line_item_ids: [],
    });
    ret.status = 'returning';
    for (const [line, q] of items) {
      const rli = this.store.fulfillment_return_line_items.insert({
        ...this.stamp(), fulfillment_return_id: ret.id, order_line_item_id: line.id, variant_id: line.variant_id, quantity: qty1(q),
      });
      (ret.fulfillment_return_line_item_ids as number[]).push(rli.id);
      line._returned = (line._returned as Decimal).plus(q);
    }
    (order!.return_ids as number[]).push(ret.id);
    order!.return_status = 'returning';
    this.touch(order!);
    this.fire('fulfillment_return.create', ret.id);
    return ret;
  }

  updateReturn(id: number, body: Body): Row {
    const ret = this.find('fulfillment_returns', id);
    const f = pickFields(RESOURCES.fulfillment_returns!, body, { create: false });
    delete f.order_id;
    const to = f.status as string | undefined;
    if (to !== undefined && to !== ret.status && !(ret.status === 'returning' && ['received', 'void'].includes(to))) {
      throw invalid({ status: [`cannot change from ${ret.status} to ${to}`] });
    }
    if (f.location_id !== undefined && ret.status !== 'returning') throw invalid({ location_id: ['cannot change after receipt'] });
    const { status, ...rest } = f;
    Object.assign(ret, rest);
    if (status === 'received' && ret.status === 'returning') {
      ret.status = 'received';
      ret.received_at = typeof f.received_at === 'string' ? f.received_at : this.now();
      for (const rid of ret.fulfillment_return_line_item_ids as number[]) {
        const rli = this.store.fulfillment_return_line_items.get(rid)!;
        if (rli.variant_id != null) this.moveOnHand(rli.variant_id, ret.location_id, D(rli.quantity));
      }
      const order = this.store.orders.get(ret.order_id)!;
      order.return_status = 'returned';
      this.touch(order);
      this.fire('fulfillment_return.received', ret.id);
    } else if (status === 'void' && ret.status === 'returning') {
      ret.status = 'void';
      for (const rid of ret.fulfillment_return_line_item_ids as number[]) {
        const rli = this.store.fulfillment_return_line_items.get(rid)!;
        const line = this.store.order_line_items.get(rli.order_line_item_id);
        if (line) line._returned = (line._returned as Decimal).minus(D(rli.quantity));
      }
    }
    this.touch(ret);
    return ret;
  }

  // ---- purchase orders -----------------------------------------------------------------------------------

  private addPurchaseLines(po: Row, items: unknown, errors: Record<string, string[]>): (() => void)[] {
    const work: (() => void)[] = [];
    if (items == null) return work;
    if (!Array.isArray(items)) { errors.purchase_order_line_items = ['must be an array']; return work; }
    if (items.length > MAX_LINES_PER_REQUEST) { errors.purchase_order_line_items = [`too many line items in one request (at most ${MAX_LINES_PER_REQUEST})`]; return work; }
    items.forEach((item: Body, i) => {
      const bad = (m: string) => (errors[`purchase_order_line_items[${i}]`] ??= []).push(m);
      const q = parseDecimal(item?.quantity);
      if (!q || q.lte(0)) return bad('quantity must be greater than 0');
      const variant = typeof item.variant_id === 'number' ? this.store.variants.get(item.variant_id) : undefined;
      if (!variant) return bad('variant_id does not exist');
      const price = parseDecimal(item.price ?? (variant._prices as Record<string, string | null>).buy ?? 0) ?? ZERO;
      work.push(() => {
        const line = this.store.purchase_order_line_items.insert({
          ...this.stamp(), purchase_order_id: po.id, variant_id: variant.id, procurement_id: null, tax_type_id: null,
          quantity: qty1(q), position: (po.purchase_order_line_item_ids as number[]).length, tax_rate_override: null,
          price: qty1(price), label: item.label ?? null, freeform: false, base_price: null, extra_cost_value: '0.0',
          image_url: null, tax_rate: null,
        });
        (po.purchase_order_line_item_ids as number[]).push(line.id);
      });
    });
    return work;
  }

  private refreshPurchaseOrder(po: Row): void {
    let total = ZERO, count = ZERO;
    for (const id of po.purchase_order_line_item_ids as number[]) {
      const l = this.store.purchase_order_line_items.get(id)!;
      total = total.plus(D(l.quantity).times(D(l.price)));
      count = count.plus(D(l.quantity));
    }
    po.total = total.toString();
    po.cached_total = po.total;
    po.cached_quantity = qty1(count);
    this.syncIncoming(po);
    this.touch(po);
  }

  createPurchaseOrder(body: Body): Row {
    const f = pickFields(RESOURCES.purchase_orders!, body, { create: true });
    const errors: Record<string, string[]> = {};
    const status = (f.status as string | undefined) ?? 'draft';
    if (!['draft', 'active'].includes(status)) errors.status = ['must be draft or active on creation'];
    const company = this.need('companies', f.company_id, 'company_id', errors);
    if (f.company_id == null) errors.company_id = ["can't be blank"];
    const loc = (f.stock_location_id as number | undefined) ?? this.store.account.primary_location_id;
    if (!this.store.locations.get(loc)) errors.stock_location_id = ['does not exist'];
    let currency = this.store.currencies.get(this.store.account.default_currency_id);
    if (f.currency_iso != null) {
      currency = this.store.currencies.order.find((c) => c.iso === String(f.currency_iso).toUpperCase() && c.status === 'active');
      if (!currency) errors.currency_iso = ['does not match a currency; create the currency first'];
    }
    this.addPurchaseLines({ id: -1, purchase_order_line_item_ids: [] } as unknown as Row, body.purchase_order_line_items, errors);
    this.check(errors);
    const { currency_iso: _iso, ...rest } = f;
    const po = this.store.purchase_orders.insert({
      ...this.stamp(), document_url: null, company_id: company!.id, supplier_address_id: (company!.address_ids as number[])[0] ?? null,
      stock_location_id: loc, billing_address_id: loc, currency_id: currency?.id ?? null, status, procurement_status: 'unprocured',
      order_number: `PO${String(++this.store.counters.purchase_order).padStart(4, '0')}`, reference_number: null, notes: null,
      email: null, tax_treatment: 'exclusive', due_at: null, default_price_list_id: 'buy', destination_url: null, total: '0',
      cached_quantity: '0.0', cached_total: '0', default_price_type_id: 'buy', tax_type: 'exclusive',
      purchase_order_line_item_ids: [], procurement_ids: [], ...rest, _incoming: new Map<string, Decimal>(),
    });
    po.status = status;
    for (const w of this.addPurchaseLines(po, body.purchase_order_line_items, {})) w();
    this.refreshPurchaseOrder(po);
    po.updated_at = po.created_at;
    this.fire('purchase_order.create', po.id);
    return po;
  }

  updatePurchaseOrder(id: number, body: Body): Row {
    const po = this.find('purchase_orders', id);
    const f = pickFields(RESOURCES.purchase_orders!, body, { create: false });
    const errors: Record<string, string[]> = {};
    if (f.status !== undefined && f.status !== po.status) {
      const allowed: Record<string, string[]> = { draft: ['active', 'void'], active: ['void', 'draft'] };
      if (!(allowed[po.status] ?? []).includes(f.status as string)) errors.status = [`cannot change from ${po.status} to ${f.status}${f.status === 'received' ? ' (use the receive action)' : ''}`];
    }
    if (body.purchase_order_line_items != null && !['draft', 'active'].includes(po.status)) errors.purchase_order_line_items = [`cannot be changed on a ${po.status} purchase order`];
    if (f.stock_location_id !== undefined && !this.store.locations.get(f.stock_location_id as number)) errors.stock_location_id = ['does not exist'];
    if (f.company_id !== undefined) this.need('companies', f.company_id, 'company_id', errors);
    const work = this.addPurchaseLines(po, body.purchase_order_line_items, errors);
    this.check(errors);
    delete f.currency_iso;
    Object.assign(po, f);
    for (const w of work) w();
    this.refreshPurchaseOrder(po);
    return po;
  }

  private deletePurchaseOrder(po: Row): void {
    if (po.status === 'received') throw new ApiFail(422, 'A received purchase order cannot be deleted', { status: ['is received'] });
    if (po.status === 'deleted') return;
    po.status = 'deleted';
    this.refreshPurchaseOrder(po);
  }

  private deletePurchaseLine(line: Row): void {
    const po = this.store.purchase_orders.get(line.purchase_order_id)!;
    if (!['draft', 'active'].includes(po.status)) throw new ApiFail(422, `Lines of a ${po.status} purchase order cannot be removed`, { purchase_order_id: [`is ${po.status}`] });
    po.purchase_order_line_item_ids = (po.purchase_order_line_item_ids as number[]).filter((x) => x !== line.id);
    this.store.purchase_order_line_items.remove(line.id);
    this.refreshPurchaseOrder(po);
  }

  createPurchaseLine(body: Body): Row {
    const po = this.find('purchase_orders', body.purchase_order_id);
    const before = new Set(po.purchase_order_line_item_ids as number[]);
    this.updatePurchaseOrder(po.id, { purchase_order_line_items: [body] });
    return this.store.purchase_order_line_items.get((po.purchase_order_line_item_ids as number[]).find((x) => !before.has(x))!)!;
  }

  updatePurchaseLine(id: number, body: Body): Row {
    const line = this.find('purchase_order_line_items', id);
    const po = this.store.purchase_orders.get(line.purchase_order_id)!;
    if (!['draft', 'active'].includes(po.status)) throw invalid({ purchase_order_id: [`is ${po.status}`] });
    const q = body.quantity === undefined ? undefined : parseDecimal(body.quantity);
    if (q === null || (q && q.lte(0))) throw invalid({ quantity: ['must be greater than 0'] });
    const price = body.price === undefined ? undefined : parseDecimal(body.price);
    if (price === null) throw invalid({ price: ['is not a number'] });
    if (q) line.quantity = qty1(q);
    if (price) line.price = qty1(price);
    if (typeof body.label === 'string') line.label = body.label;
    this.touch(line);
    this.refreshPurchaseOrder(po);
    return line;
  }

  receivePurchaseOrder(id: number, body: Body): Row {
    const po = this.find('purchase_orders', id);
    // A body naming lines or quantities asks for a partial receipt, which the service does not support.
    if (body && /line_item|quantity/.test(JSON.stringify(body))) throw new ApiFail(422, 'Partial receiving is not supported; receive the whole purchase order', { purchase_order_line_items: ['partial receiving is not supported'] });
    if (!['draft', 'active'].includes(po.status)) throw new ApiFail(422, `A ${po.status} purchase order cannot be received`, { status: [`is ${po.status}`] });
    const proc = this.store.procurements.insert({
      ...this.stamp(), purchase_order_id: po.id, received_at: this.now(), status: 'received',
      procurement_number: `PR${String(++this.store.counters.procurement).padStart(4, '0')}`, purchase_order_line_item_ids: [...po.purchase_order_line_item_ids],
    });
    po.status = 'received';
    this.refreshPurchaseOrder(po); // releases incoming
    for (const lid of po.purchase_order_line_item_ids as number[]) {
      const line = this.store.purchase_order_line_items.get(lid)!;
      line.procurement_id = proc.id;
      this.touch(line);
      if (line.variant_id == null) continue;
      this.receiveCost(line.variant_id, D(line.quantity), D(line.price));
      this.moveOnHand(line.variant_id, po.stock_location_id, D(line.quantity));
    }
    po.procurement_status = 'procured';
    (po.procurement_ids as number[]).push(proc.id);
    this.fire('purchase_order.received', po.id);
    this.fire('procurement.create', proc.id);
    return proc;
  }

  // ---- stock adjustments and transfers -------------------------------------------------------------------

  /** Moving average cost after `quantity` came in at `price` (documented: adjustments and receipts move it). */
  private receiveCost(variantId: number, quantity: Decimal, price: Decimal): void {
    const v = this.store.variants.get(variantId);
    if (!v || v.composite) return;
    let onHand = ZERO;
    for (const st of (v._stock as Map<number, Stock>).values()) onHand = onHand.plus(st.soh);
    const mac = v.moving_average_cost == null ? null : D(v.moving_average_cost);
    const next = mac === null || onHand.lte(0) ? price : onHand.times(mac).plus(quantity.times(price)).div(onHand.plus(quantity));
    v.moving_average_cost = next.toDecimalPlaces(4).toString();
    this.touch(v);
  }

  private stockLines(body: Body, field: string, errors: Record<string, string[]>, signed: boolean): [Row, Decimal, Body][] {
    const out: [Row, Decimal, Body][] = [];
    const items = body[field];
    if (!Array.isArray(items) || !items.length) { errors[field] = ["can't be blank"]; return out; }
    if (items.length > MAX_LINES_PER_REQUEST) { errors[field] = [`too many line items in one request (at most ${MAX_LINES_PER_REQUEST})`]; return out; }
    items.forEach((e: Body, i) => {
      const key = `${field}[${i}]`;
      const v = typeof e?.variant_id === 'number' ? this.store.variants.get(e.variant_id) : undefined;
      const q = parseDecimal(e?.quantity);
      if (!v) return void (errors[key] ??= []).push('variant_id does not exist');
      if (v.composite) return void (errors[key] ??= []).push('a composite variant holds no stock of its own');
      if (!q || q.isZero() || (!signed && q.lt(0))) return void (errors[key] ??= []).push(signed ? 'quantity must not be 0' : 'quantity must be greater than 0');
      out.push([v, q, e]);
    });
    return out;
  }

  /** `reason` (a documented code) or `stock_adjustment_reason_id`: the reason row, or an error. */
  private adjustmentReason(f: Record<string, unknown>, errors: Record<string, string[]>): Row | undefined {
    if (f.stock_adjustment_reason_id != null) return this.need('stock_adjustment_reasons', f.stock_adjustment_reason_id, 'stock_adjustment_reason_id', errors);
    if (f.reason == null || f.reason === '') { errors.reason = [`can't be blank (one of ${ADJUSTMENT_REASONS.join(', ')}, or a stock_adjustment_reason_id)`]; return undefined; }
    const row = this.store.stock_adjustment_reasons.order.find((r) => r.reason_code === f.reason);
    if (!row) errors.reason = [`is not included in the list (${ADJUSTMENT_REASONS.join(', ')})`];
    return row;
  }

  createStockAdjustment(body: Body): Row {
    const f = pickFields(RESOURCES.stock_adjustments!, body, { create: true });
    const errors: Record<string, string[]> = {};
    this.need('locations', f.stock_location_id, 'stock_location_id', errors);
    const reason = this.adjustmentReason(f, errors);
    const items = this.stockLines(body, 'stock_adjustment_line_items', errors, true);
    const prices = items.map(([, q, e], i) => {
      // A line that adds stock needs its price; one that removes stock is valued at the moving average cost.
      if (q.lte(0)) return null;
      const price = e.price == null ? null : parseDecimal(e.price);
      if (e.price == null) (errors[`stock_adjustment_line_items[${i}]`] ??= []).push('price is required when quantity is greater than 0');
      else if (!price || price.lt(0)) (errors[`stock_adjustment_line_items[${i}]`] ??= []).push('price is not a number');
      return price;
    });
    this.check(errors);
    const adj = this.store.stock_adjustments.insert({
      ...this.stamp(), stock_location_id: f.stock_location_id, reason: reason!.reason_code, reason_label: reason!.name,
      stock_adjustment_reason_id: reason!.id, notes: f.notes ?? null,
      adjustment_number: f.adjustment_number ?? `SA${String(++this.store.counters.stock_adjustment).padStart(4, '0')}`,
      stock_adjustment_line_item_ids: [],
    });
    items.forEach(([v, q], i) => {
      const price = prices[i] ?? (v.moving_average_cost == null ? null : D(v.moving_average_cost));
      const li = this.store.stock_adjustment_line_items.insert({
        ...this.stamp(), stock_adjustment_id: adj.id, variant_id: v.id, quantity: qty1(q), price: price === null ? null : price.toString(),
      });
      (adj.stock_adjustment_line_item_ids as number[]).push(li.id);
      if (q.gt(0)) this.receiveCost(v.id, q, prices[i]!);
      this.moveOnHand(v.id, adj.stock_location_id, q);
    });
    this.fire('stock_adjustment.create', adj.id);
    return adj;
  }

  /** Created `active`; the stock moves when it is received (real-service-notes §5). */
  createStockTransfer(body: Body): Row {
    const f = pickFields(RESOURCES.stock_transfers!, body, { create: true });
    const errors: Record<string, string[]> = {};
    this.need('locations', f.source_location_id, 'source_location_id', errors);
    this.need('locations', f.destination_location_id, 'destination_location_id', errors);
    if (f.source_location_id != null && f.source_location_id === f.destination_location_id) errors.destination_location_id = ['must differ from the source location'];
    const items = this.stockLines(body, 'stock_transfer_line_items', errors, false);
    this.check(errors);
    return this.newTransfer(f.source_location_id as number, f.destination_location_id as number, items.map(([v, q]) => [v.id, q]), f);
  }

  private newTransfer(source: number, destination: number, lines: [number, Decimal][], f: Record<string, unknown>): Row {
    const tr = this.store.stock_transfers.insert({
      ...this.stamp(), source_location_id: source, destination_location_id: destination, notes: f.notes ?? null, status: 'active',
      adjustment_number: f.adjustment_number ?? `ST${String(++this.store.counters.stock_transfer).padStart(4, '0')}`,
      received_at: null, transacted_at: f.transacted_at ?? null, cached_quantity: qty1(lines.reduce((sum, [, q]) => sum.plus(q), ZERO)),
      stock_transfer_line_item_ids: [],
    });
    for (const [variantId, q] of lines) {
      const li = this.store.stock_transfer_line_items.insert({ ...this.stamp(), stock_transfer_id: tr.id, variant_id: variantId, quantity: qty1(q) });
      (tr.stock_transfer_line_item_ids as number[]).push(li.id);
    }
    this.fire('stock_transfer.create', tr.id);
    return tr;
  }

  /** `receive` moves the stock; `revert` of a received transfer creates its reversal (an active transfer back). */
  transferAction(id: number, action: string): Row {
    const tr = this.find('stock_transfers', id);
    const lines = (tr.stock_transfer_line_item_ids as number[]).map((lid) => this.store.stock_transfer_line_items.get(lid)!);
    if (action === 'receive') {
      if (tr.status !== 'active') throw new ApiFail(422, `A ${tr.status} stock transfer cannot be received`, { status: [`is ${tr.status}`] });
      tr.status = 'received';
      tr.received_at = this.now();
      tr.transacted_at ??= tr.received_at;
      this.touch(tr);
      for (const li of lines) {
        this.moveOnHand(li.variant_id, tr.source_location_id, D(li.quantity).neg());
        this.moveOnHand(li.variant_id, tr.destination_location_id, D(li.quantity));
      }
      return tr;
    }
    if (action === 'revert') {
      if (tr.status !== 'received') throw new ApiFail(422, 'Only a received stock transfer can be reverted', { status: [`is ${tr.status}`] });
      return this.newTransfer(tr.destination_location_id, tr.source_location_id, lines.map((li) => [li.variant_id, D(li.quantity)]),
        { notes: `Reversal of Stock Transfer #${tr.adjustment_number}` });
    }
    throw new ApiFail(404, `Unknown stock transfer action ${action}`);
  }
}

const COUNTRY_CODES: Record<string, string> = {
  singapore: 'SG', 'new zealand': 'NZ', australia: 'AU', 'united states': 'US', usa: 'US', 'united kingdom': 'GB',
  germany: 'DE', france: 'FR', malaysia: 'MY', canada: 'CA', japan: 'JP',
};
function countryCode(country: string | null | undefined): string | null {
  if (!country) return null;
  if (/^[A-Za-z]{2}$/.test(country)) return country.toUpperCase();
  return COUNTRY_CODES[country.toLowerCase()] ?? null;
}

