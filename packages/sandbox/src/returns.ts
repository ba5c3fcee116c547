// Fulfillment returns: created `returning`, received (restocking) or voided.
import type { Decimal } from 'decimal.js';
import { D, invalid, parseDecimal, qty1, type Row } from './store.ts';
import { RESOURCES, pickFields } from './resources.ts';
import { Part, type Body, type Core, type Errors, type Lifecycle } from './core.ts';
import type { Inventory } from './stock.ts';

const RETURN: Lifecycle = { created: ['returning'], moves: { returning: ['received', 'void'] } };

export class Returns extends Part {
  private readonly stock: Inventory;

  constructor(core: Core, stock: Inventory) {
    super(core);
    this.stock = stock;
  }

  createReturn(body: Body): Row {
    const f = pickFields(RESOURCES.fulfillment_returns!, body, { create: true });
    const errors: Record<string, string[]> = {};
    const order = this.need('orders', f.order_id, 'order_id', errors);
    if (f.location_id != null) this.need('locations', f.location_id, 'location_id', errors);
    const items: [Row, Decimal][] = [];
    const spec = body.fulfillment_return_line_items;
    if (!Array.isArray(spec) || !spec.length) errors.fulfillment_return_line_items = ["can't be blank"];
    else if (order)
      spec.forEach((e: Body, i) => {
        const line = typeof e?.order_line_item_id === 'number' ? this.store.order_line_items.get(e.order_line_item_id) : undefined;
        const q = parseDecimal(e?.quantity);
        const key = `fulfillment_return_line_items[${i}]`;
        if (!line || line.order_id !== order.id) return void (errors[key] ??= []).push('order_line_item_id is not a line of this order');
        if (!q || q.lte(0)) return void (errors[key] ??= []).push('quantity must be greater than 0');
        const returnable = (line._shipped as Decimal).minus(line._returned as Decimal);
        if (q.gt(returnable))
          return void (errors[key] ??= []).push(`quantity exceeds the shipped, unreturned quantity ${returnable.toString()}`);
        items.push([line, q]);
      });
    this.check(errors);
    const ret = this.store.fulfillment_returns.insert({
      ...this.stamp(),
      order_id: order!.id,
      location_id: (f.location_id as number | undefined) ?? order!.stock_location_id,
      delivery_type: null,
      exchange_rate: '1.0',
      notes: null,
      received_at: null,
      tracking_company: null,
      tracking_number: null,
      tracking_url: null,
      ...f,
      status: 'returning',
      credit_note_number: `CN${String(++this.store.counters.credit_note).padStart(4, '0')}`,
      order_number: order!.order_number,
      company_id: order!.company_id,
      fulfillment_return_line_item_ids: [],
    });
    ret.status = 'returning';
    for (const [line, q] of items) {
      const rli = this.store.fulfillment_return_line_items.insert({
        ...this.stamp(),
        fulfillment_return_id: ret.id,
        order_line_item_id: line.id,
        variant_id: line.variant_id,
        quantity: qty1(q),
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
    const errors: Errors = {};
    this.checkMove(RETURN, ret, to, errors);
    this.check(errors);
    if (f.location_id !== undefined && ret.status !== 'returning') throw invalid({ location_id: ['cannot change after receipt'] });
    const { status, ...rest } = f;
    Object.assign(ret, rest);
    if (status === 'received' && ret.status === 'returning') {
      ret.status = 'received';
      ret.received_at = typeof f.received_at === 'string' ? f.received_at : this.now();
      for (const rid of ret.fulfillment_return_line_item_ids as number[]) {
        const rli = this.store.fulfillment_return_line_items.get(rid)!;
        if (rli.variant_id != null) this.stock.moveOnHand(rli.variant_id, ret.location_id, D(rli.quantity));
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
}
