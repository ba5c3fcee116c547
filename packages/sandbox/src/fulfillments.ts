// Packing and shipping an order (fulfillments): which quantities of which lines an action covers, packed
// fulfillments, shipping them (the stock leaves the location), voiding and deleting them. A layer of the order
// aggregate (orders.ts), on its derived state (order-state.ts).
import type { Decimal } from 'decimal.js';
import { ApiFail, D, parseDecimal, qty1, type Row } from './store.ts';
import { RESOURCES, pickFields } from './resources.ts';
import type { Body, Lifecycle } from './core.ts';
import { OrderState } from './order-state.ts';

const FULFILLMENT: Lifecycle = { created: ['packed', 'fulfilled'], moves: { packed: ['fulfilled', 'void'] } };

export class Fulfillments extends OrderState {
  protected voidFulfillmentsOf(order: Row): void {
    for (const fid of order.fulfillment_ids as number[]) {
      const ful = this.store.fulfillments.get(fid)!;
      if (ful.status === 'packed') this.unpack(ful, 'void');
    }
  }

  /** Which quantities of which lines an action or a fulfillment covers; default: every unpacked remainder. */
  protected selection(order: Row, spec: unknown, field: string): [Row, Decimal][] {
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

  protected packable(order: Row): void {
    if (order.status !== 'active' && order.status !== 'finalized') {
      throw new ApiFail(422, `A ${order.status} order cannot be packed or fulfilled`, {
        status: [`is ${order.status}; must be active or finalized`],
      });
    }
  }

  protected newFulfillment(order: Row, items: [Row, Decimal][], f: Record<string, unknown>): Row {
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

  protected ship(ful: Row, tracking: Record<string, unknown>): void {
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
}
