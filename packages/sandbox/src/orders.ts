// Sales orders and their lines, and the order actions (invoice, pay, pack, fulfil, void). The aggregate is built in
// layers, one file each: OrderState (order-state.ts: total, statuses, commitments) < Fulfillments
// (fulfillments.ts: packing and shipping) < Invoices (invoices.ts: invoices and payments) < Orders.
import type { Decimal } from 'decimal.js';
import { ApiFail, parseDecimal, qty1, ZERO, type Row } from './store.ts';
import { RESOURCES, pickFields } from './resources.ts';
import { MAX_LINES_PER_REQUEST, type Body, type Core } from './core.ts';
import type { Inventory } from './stock.ts';
import type { Catalog } from './catalog.ts';
import { ORDER } from './order-state.ts';
import { Invoices } from './invoices.ts';

export class Orders extends Invoices {
  private readonly catalog: Catalog;

  constructor(core: Core, stock: Inventory, catalog: Catalog) {
    super(core, stock);
    this.catalog = catalog;
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
}
