// Invoices and payments of an order: an invoice of what is not invoiced yet, the pay action's payment, deleting an
// invoice. A layer of the order aggregate (orders.ts).
import type { Decimal } from 'decimal.js';
import { ApiFail, D, qty1, type Row } from './store.ts';
import type { Body } from './core.ts';
import { Fulfillments } from './fulfillments.ts';

export class Invoices extends Fulfillments {
  protected invoice(order: Row, quiet: boolean): Row {
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
  protected pay(order: Row): void {
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
