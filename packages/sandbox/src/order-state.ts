// An order's derived state, the base of the order aggregate (orders.ts): its total, its packed, shipped and
// invoiced statuses, the fulfilled status and the stock its open lines commit. Every change to an order or to one
// of its documents (fulfillments.ts, invoices.ts) ends in refreshOrder.
import type { Decimal } from 'decimal.js';
import { D, ZERO, type Row } from './store.ts';
import { Part, type Core, type Lifecycle } from './core.ts';
import type { Inventory } from './stock.ts';

/** Order statuses (real-service-notes §5), with the events of the statuses a client must hear about (§2). */
export const ORDER: Lifecycle = {
  created: ['draft', 'active'],
  moves: { draft: ['active', 'finalized', 'void'], active: ['finalized', 'void', 'draft'], finalized: ['void'] },
  reached: { finalized: 'order.finalized', fulfilled: 'order.fulfilled' },
};

export class OrderState extends Part {
  protected readonly stock: Inventory;

  constructor(core: Core, stock: Inventory) {
    super(core);
    this.stock = stock;
  }

  protected lines(order: Row): Row[] {
    return (order.order_line_item_ids as number[]).map((id) => this.store.order_line_items.get(id)!);
  }

  protected refreshOrder(order: Row): void {
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
}
