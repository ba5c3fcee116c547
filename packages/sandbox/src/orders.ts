// Sales orders and what follows them: line items, packing and shipping (fulfillments), invoices, payments.
import type { Decimal } from 'decimal.js';
import { ApiFail, D, parseDecimal, qty1, ZERO, type Row } from './store.ts';
import { RESOURCES, pickFields } from './resources.ts';
import { Part, MAX_LINES_PER_REQUEST, type Body, type Core, type Lifecycle } from './core.ts';
import type { Inventory } from './stock.ts';
import type { Catalog } from './catalog.ts';

/** Order statuses (real-service-notes §5), with the events of the statuses a client must hear about (§2). */
const ORDER: Lifecycle = {
  created: ['draft', 'active'],
  moves: { draft: ['active', 'finalized', 'void'], active: ['finalized', 'void', 'draft'], finalized: ['void'] },
  reached: { finalized: 'order.finalized', fulfilled: 'order.fulfilled' },
};
const FULFILLMENT: Lifecycle = { created: ['packed', 'fulfilled'], moves: { packed: ['fulfilled', 'void'] } };

export class Orders extends Part {
  private readonly stock: Inventory;
  private readonly catalog: Catalog;

  constructor(core: Core, stock: Inventory, catalog: Catalog) {
    super(core);
    this.stock = stock;
    this.catalog = catalog;
  }

  private lines(order: Row): Row[] {
    return (order.order_line_item_ids as number[]).map((id) => this.store.order_line_items.get(id)!);
  }

  private addOrderLines(order: Row, items: unknown, errors: Record<string, string[]>): (() => void)[] {
    const work: (() => void)[] = [];
    if (items == null) return work;
    if (!Array.isArray(items)) {
      errors.order_line_items = ['must be an array'];
      return work;
    }
    if (items.length > MAX_LINES_PER_REQUEST) {
      errors.order_line_items = [`too many line items in one request (at most ${MAX_LINES_PER_REQUEST})`];
      return work;
    }
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
        if (q?.lt(line._packed as Decimal)) return bad('quantity cannot be less than the packed quantity');
        work.push(() => {
          if (q) line.quantity = qty1(q);
          if (price) line.price = price.toString();
          this.touch(line);
        });
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
          ...this.stamp(),
          order_id: order.id,
          variant_id: variant?.id ?? null,
          tax_type_id: null,
          discount: item.discount != null ? String(item.discount) : null,
          quantity: qty1(q),
          price: price ? price.toString() : ((variant?._prices as Record<string, string | null> | undefined)?.wholesale ?? '0.0'),
          tax_rate_override: null,
          freeform,
          label: item.label ?? null,
          position: (order.order_line_item_ids as number[]).length,
          line_type: null,
          image_url: null,
          tax_rate: null,
          fulfillment_line_item_ids: [],
          invoice_line_item_ids: [],
          _shipped: ZERO,
          _packed: ZERO,
          _invoiced: ZERO,
          _returned: ZERO,
        });
        (order.order_line_item_ids as number[]).push(line.id);
      });
    });
    return work;
  }

  private refreshOrder(order: Row): void {
    let total = ZERO;
    let packed = 0,
      shipped = 0,
      partPacked = 0,
      partShipped = 0,
      invoiced = 0,
      partInvoiced = 0;
    const lines = this.lines(order).filter((l) => !l.freeform);
    for (const l of this.lines(order)) total = total.plus(D(l.quantity).times(D(l.price ?? 0)));
    for (const l of lines) {
      const q = D(l.quantity);
      const p = l._packed as Decimal,
        s = l._shipped as Decimal,
        inv = l._invoiced as Decimal;
      if (p.gte(q)) packed++;
      else if (p.gt(0)) partPacked++;
      if (s.gte(q)) shipped++;
      else if (s.gt(0)) partShipped++;
      if (inv.gte(q)) invoiced++;
      else if (inv.gt(0)) partInvoiced++;
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
    this.reached(ORDER, order);
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
        this.stock.hold(want, line.variant_id, open, order.stock_location_id);
      }
    }
    this.stock.settle('committed', order._commit as Map<string, Decimal>, want);
    order._commit = want;
  }

  private orderParties(body: Body, errors: Record<string, string[]>, f: Record<string, unknown>): () => Partial<Row> {
    // Nested company / addresses are created only when the whole order is valid.
    let companyId = f.company_id as number | undefined;
    if (companyId != null) this.need('companies', companyId, 'company_id', errors);
    if (companyId == null && body.company == null) errors.company_id = ["can't be blank"];
    if (body.company != null && companyId == null && body.shipping_address == null && f.shipping_address_id == null)
      errors.shipping_address = ["can't be blank when a new company is given"];
    for (const k of ['shipping_address_id', 'billing_address_id'] as const) {
      const a = this.need('addresses', f[k], k, errors);
      if (a && companyId != null && a.company_id !== companyId) (errors[k] ??= []).push('belongs to another company');
    }
    for (const k of ['shipping_address', 'billing_address'] as const) {
      if (body[k] != null && (typeof body[k] !== 'object' || !body[k].address1)) errors[`${k}.address1`] = ["can't be blank"];
    }
    if (body.company != null && (typeof body.company !== 'object' || !body.company.name)) errors['company.name'] = ["can't be blank"];
    return () => {
      if (companyId == null) companyId = this.catalog.createCompany({ company_type: 'consumer', ...body.company }).id;
      let ship = f.shipping_address_id as number | undefined;
      let bill = f.billing_address_id as number | undefined;
      if (ship == null && body.shipping_address) ship = this.catalog.createAddress({ ...body.shipping_address, company_id: companyId }).id;
      if (bill == null && body.billing_address) bill = this.catalog.createAddress({ ...body.billing_address, company_id: companyId }).id;
      return { company_id: companyId, shipping_address_id: ship ?? null, billing_address_id: bill ?? ship ?? null };
    };
  }

  createOrder(body: Body): Row {
    const f = pickFields(RESOURCES.orders!, body, { create: true });
    const errors: Record<string, string[]> = {};
    const status = this.createdStatus(ORDER, f.status, 'draft', errors);
    const loc = (f.stock_location_id as number | undefined) ?? this.store.account.primary_location_id;
    if (!this.store.locations.get(loc)) errors.stock_location_id = ['does not exist'];
    const currency =
      f.currency_iso != null ? this.currency(f.currency_iso, errors) : this.store.currencies.get(this.store.account.default_currency_id);
    if (f.order_number && this.store.orders.order.some((o) => o.order_number === f.order_number))
      errors.order_number = ['has already been taken'];
    const parties = this.orderParties(body, errors, f);
    const placeholder = { id: -1, order_line_item_ids: [] } as unknown as Row;
    this.addOrderLines(placeholder, body.order_line_items, errors);
    this.check(errors);
    delete f.currency_iso;
    const order = this.store.orders.insert({
      ...this.stamp(),
      fulfillment_ids: [],
      invoice_ids: [],
      return_ids: [],
      company_id: null,
      contact_id: null,
      shipping_address_id: null,
      billing_address_id: null,
      user_id: 1,
      assignee_id: null,
      stock_location_id: loc,
      currency_id: currency?.id ?? null,
      currency_iso: currency?.iso ?? null,
      order_number: f.order_number ?? `SO${String(++this.store.counters.order).padStart(4, '0')}`,
      phone_number: null,
      email: null,
      notes: null,
      reference_number: null,
      status,
      payment_status: 'unpaid',
      invoice_status: 'uninvoiced',
      invoice_numbers: {},
      packed_status: 'unpacked',
      fulfillment_status: 'unshipped',
      return_status: 'not_returned',
      tax_type: this.store.account.default_tax_treatment ?? 'exclusive',
      default_price_type_id: 'wholesale',
      issued_at: this.today(),
      ship_at: null,
      tags: [],
      tax_override: null,
      tax_label: 'GST',
      tracking_number: null,
      source_id: null,
      source_url: null,
      total: '0',
      source: null,
      url: null,
      cached_total: '0',
      order_line_item_ids: [],
      ...f,
      ...parties(),
      _commit: new Map<string, Decimal>(),
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
      this.checkMove(ORDER, order, f.status, errors);
      if (f.status === 'draft' && this.lines(order).some((l) => (l._packed as Decimal).gt(0)))
        errors.status = ['cannot return to draft once packed'];
      if (f.status === 'void' && this.lines(order).some((l) => (l._shipped as Decimal).gt(0)))
        errors.status = ['cannot void a partly shipped order'];
    }
    if (body.order_line_items != null && closed) errors.order_line_items = [`cannot be changed on a ${order.status} order`];
    if (f.stock_location_id !== undefined && !this.store.locations.get(f.stock_location_id as number))
      errors.stock_location_id = ['does not exist'];
    if (f.stock_location_id !== undefined && f.stock_location_id !== order.stock_location_id && order.packed_status !== 'unpacked')
      errors.stock_location_id = ['cannot change once packed'];
    for (const k of ['shipping_address_id', 'billing_address_id'] as const) this.need('addresses', f[k], k, errors);
    if (f.company_id !== undefined) this.need('companies', f.company_id, 'company_id', errors);
    if (f.currency_iso !== undefined) {
      const c = this.currency(f.currency_iso, errors);
      if (c) {
        f.currency_id = c.id;
        f.currency_iso = c.iso;
      }
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

  deleteOrder(order: Row): void {
    if (order.status === 'deleted') return;
    if (order.status === 'fulfilled' || this.lines(order).some((l) => (l._shipped as Decimal).gt(0)))
      throw new ApiFail(422, 'A shipped order cannot be deleted; void or return it instead', { status: ['cannot delete a shipped order'] });
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

  deleteOrderLine(line: Row): void {
    const order = this.store.orders.get(line.order_id)!;
    if (['fulfilled', 'void', 'deleted'].includes(order.status))
      throw new ApiFail(422, `Lines of a ${order.status} order cannot be removed`, { order_id: [`order is ${order.status}`] });
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
      return this.lines(order)
        .filter((l) => !l.freeform && open(l).gt(0))
        .map((l) => [l, open(l)]);
    }
    const entries: [unknown, unknown][] = Array.isArray(spec)
      ? spec.map((e: any) => (typeof e === 'object' && e !== null ? [e.order_line_item_id ?? e.id, e.quantity] : [e, undefined]))
      : typeof spec === 'object'
        ? Object.entries(spec as object).map(([k, v]) => [Number(k), v])
        : [];
    const errors: Record<string, string[]> = {};
    const out: [Row, Decimal][] = [];
    entries.forEach(([id, q], i) => {
      const line = typeof id === 'number' ? this.store.order_line_items.get(id) : undefined;
      if (!line || line.order_id !== order.id)
        return void (errors[`${field}[${i}]`] ??= []).push('order_line_item_id is not a line of this order');
      const want = q === undefined ? open(line) : parseDecimal(q);
      if (!want || want.lte(0)) return void (errors[`${field}[${i}]`] ??= []).push('quantity must be greater than 0');
      if (want.gt(open(line)))
        return void (errors[`${field}[${i}]`] ??= []).push(`quantity exceeds the unpacked quantity ${open(line).toString()}`);
      out.push([line, want]);
    });
    if (!entries.length) errors[field] = ['is invalid'];
    this.check(errors);
    return out;
  }

  private packable(order: Row): void {
    if (order.status !== 'active' && order.status !== 'finalized') {
      throw new ApiFail(422, `A ${order.status} order cannot be packed or fulfilled`, {
        status: [`is ${order.status}; must be active or finalized`],
      });
    }
  }

  private newFulfillment(order: Row, items: [Row, Decimal][], f: Record<string, unknown>): Row {
    const loc = (f.stock_location_id as number | undefined) ?? order.stock_location_id;
    const ful = this.store.fulfillments.insert({
      ...this.stamp(),
      order_id: order.id,
      shipping_address_id: order.shipping_address_id,
      billing_address_id: order.billing_address_id,
      status: 'packed',
      exchange_rate: '1.0',
      packed_at: this.today(),
      shipped_at: null,
      received_at: null,
      delivery_type: null,
      tracking_number: null,
      notes: null,
      tracking_url: null,
      tracking_company: null,
      receipt: {},
      destination_url: null,
      fulfillment_line_item_ids: [],
      ...f,
      stock_location_id: loc,
    });
    ful.status = 'packed';
    for (const [line, q] of items) {
      const v = line.variant_id != null ? this.store.variants.get(line.variant_id) : undefined;
      const fli = this.store.fulfillment_line_items.insert({
        ...this.stamp(),
        fulfillment_id: ful.id,
        order_line_item_id: line.id,
        variant_id: line.variant_id,
        variant_sku: v?.sku ?? null,
        quantity: qty1(q),
        base_price: line.price ?? null,
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
      if (line.variant_id != null) this.stock.moveOnHand(line.variant_id, ful.stock_location_id, D(fli.quantity).neg());
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
    this.createdStatus(FULFILLMENT, f.status, 'packed', errors);
    this.check(errors);
    this.packable(order!);
    const items = this.selection(order!, body.fulfillment_line_items, 'fulfillment_line_items');
    if (!items.length) throw new ApiFail(422, 'Nothing left to pack on this order', { fulfillment_line_items: ['nothing left to pack'] });
    const { status, tracking_company, tracking_number, tracking_url, ...rest } = f;
    const ful = this.newFulfillment(order!, items, rest);
    if (status === 'fulfilled') this.ship(ful, { tracking_company, tracking_number, tracking_url });
    else
      Object.assign(
        ful,
        Object.fromEntries(Object.entries({ tracking_company, tracking_number, tracking_url }).filter(([, v]) => v !== undefined)),
      );
    this.refreshOrder(order!);
    return ful;
  }

  updateFulfillment(id: number, body: Body): Row {
    const ful = this.find('fulfillments', id);
    const f = pickFields(RESOURCES.fulfillments!, body, { create: false });
    delete f.order_id;
    const errors: Record<string, string[]> = {};
    const to = f.status as string | undefined;
    this.checkMove(FULFILLMENT, ful, to, errors);
    if (f.stock_location_id !== undefined && f.stock_location_id !== ful.stock_location_id && ful.status !== 'packed')
      errors.stock_location_id = ['cannot change after shipping'];
    if (f.stock_location_id != null) this.need('locations', f.stock_location_id, 'stock_location_id', errors);
    this.check(errors);
    const { status, ...rest } = f;
    Object.assign(ful, rest);
    const order = this.store.orders.get(ful.order_id)!;
    if (status === 'fulfilled' && ful.status === 'packed') this.ship(ful, {});
    else if (status === 'void' && ful.status === 'packed') {
      this.unpack(ful, 'void');
      this.refreshOrder(order);
    } else this.touch(ful);
    return ful;
  }

  deleteFulfillment(ful: Row): void {
    if (ful.status === 'fulfilled') throw new ApiFail(422, 'A shipped fulfillment cannot be deleted', { status: ['is fulfilled'] });
    if (ful.status === 'deleted') return;
    if (ful.status === 'packed') this.unpack(ful, 'deleted');
    else {
      ful.status = 'deleted';
      this.touch(ful);
    }
    this.refreshOrder(this.store.orders.get(ful.order_id)!);
  }

  orderAction(id: number, action: string, body: Body): Record<string, unknown> {
    const order = this.find('orders', id);
    const spec = body.order_line_item_ids ?? body.order_line_items ?? body.fulfillment_line_items;
    switch (action) {
      case 'invoice':
        return { invoice: this.invoice(order, false) };
      case 'pay': {
        if (order.payment_status === 'paid') throw new ApiFail(422, 'The order is already paid', { payment_status: ['is paid'] });
        if (['void', 'deleted'].includes(order.status))
          throw new ApiFail(422, `A ${order.status} order cannot be paid`, { status: [`is ${order.status}`] });
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
            if (ful.status === 'packed') {
              this.ship(ful, {});
              done.push(ful);
            }
          }
          if (items.length) {
            const ful = this.newFulfillment(order, items, {});
            this.ship(ful, {});
            done.push(ful);
          }
        }
        if (!done.length)
          throw new ApiFail(422, 'Nothing left to fulfil on this order', { order_line_item_ids: ['nothing left to fulfil'] });
        this.refreshOrder(order);
        return { fulfillments: done };
      }
      case 'void': {
        if (!['draft', 'active', 'finalized'].includes(order.status))
          throw new ApiFail(422, `A ${order.status} order cannot be voided`, { status: [`is ${order.status}`] });
        if (this.lines(order).some((l) => (l._shipped as Decimal).gt(0)))
          throw new ApiFail(422, 'A partly shipped order cannot be voided', { fulfillment_status: ['is partial'] });
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
    if (['void', 'deleted'].includes(order.status))
      throw new ApiFail(422, `A ${order.status} order cannot be invoiced`, { status: [`is ${order.status}`] });
    const lines = this.lines(order).filter((l) => D(l.quantity).gt(l._invoiced as Decimal));
    if (!lines.length) {
      if (quiet) return this.store.invoices.get((order.invoice_ids as number[]).at(-1)!)!;
      throw new ApiFail(422, 'The order is already fully invoiced', { invoice_status: ['is invoiced'] });
    }
    const number = `INV${String(++this.store.counters.invoice).padStart(4, '0')}`;
    const due = new Date(this.clock.now() + 30 * 86400_000).toISOString().slice(0, 10);
    const inv = this.store.invoices.insert({
      ...this.stamp(),
      document_url: null,
      order_id: order.id,
      shipping_address_id: order.shipping_address_id,
      billing_address_id: order.billing_address_id,
      payment_term_id: null,
      invoice_number: number,
      invoiced_at: this.today(),
      due_at: due,
      notes: null,
      exchange_rate: '1.0',
      destination_url: null,
      invoice_line_item_ids: [],
    });
    lines.forEach((l, position) => {
      const q = D(l.quantity).minus(l._invoiced as Decimal);
      const ili = this.store.invoice_line_items.insert({
        ...this.stamp(),
        quantity: qty1(q),
        position,
        invoice_id: inv.id,
        order_line_item_id: l.id,
        ledger_account_id: null,
      });
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
      ...this.stamp(),
      invoice_id: invoiceId,
      order_id: order.id,
      amount: order.total,
      paid_at: this.now(),
      payment_method_id: this.store.account.default_payment_method_id,
      reference: null,
      exchange_rate: '1.0',
      status: 'active',
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

  deleteInvoice(inv: Row): void {
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
}
