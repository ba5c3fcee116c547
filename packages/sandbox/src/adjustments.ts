// Stock adjustments (counted stock written back, with reasons and costs) and stock transfers between locations.
import type { Decimal } from 'decimal.js';
import { ApiFail, D, parseDecimal, qty1, ZERO, type Row } from './store.ts';
import { RESOURCES, pickFields } from './resources.ts';
import { Part, MAX_LINES_PER_REQUEST, type Body, type Core } from './core.ts';
import type { Inventory } from './stock.ts';

/** The documented adjustment reasons (tradegecko/smaug: locales/stock_adjustment.en.yml), seeded as system reasons. */
export const ADJUSTMENT_REASONS = ['supplier', 'customer', 'damaged', 'shrinkage', 'promotion', 'production'] as const;

export class Adjustments extends Part {
  private readonly stock: Inventory;

  constructor(core: Core, stock: Inventory) {
    super(core);
    this.stock = stock;
  }

  private stockLines(body: Body, field: string, errors: Record<string, string[]>, signed: boolean): [Row, Decimal, Body][] {
    const out: [Row, Decimal, Body][] = [];
    const items = body[field];
    if (!Array.isArray(items) || !items.length) {
      errors[field] = ["can't be blank"];
      return out;
    }
    if (items.length > MAX_LINES_PER_REQUEST) {
      errors[field] = [`too many line items in one request (at most ${MAX_LINES_PER_REQUEST})`];
      return out;
    }
    items.forEach((e: Body, i) => {
      const key = `${field}[${i}]`;
      const v = typeof e?.variant_id === 'number' ? this.store.variants.get(e.variant_id) : undefined;
      const q = parseDecimal(e?.quantity);
      if (!v) return void (errors[key] ??= []).push('variant_id does not exist');
      if (v.composite) return void (errors[key] ??= []).push('a composite variant holds no stock of its own');
      if (!q || q.isZero() || (!signed && q.lt(0)))
        return void (errors[key] ??= []).push(signed ? 'quantity must not be 0' : 'quantity must be greater than 0');
      out.push([v, q, e]);
    });
    return out;
  }

  /** `reason` (a documented code) or `stock_adjustment_reason_id`: the reason row, or an error. */
  private adjustmentReason(f: Record<string, unknown>, errors: Record<string, string[]>): Row | undefined {
    if (f.stock_adjustment_reason_id != null)
      return this.need('stock_adjustment_reasons', f.stock_adjustment_reason_id, 'stock_adjustment_reason_id', errors);
    if (f.reason == null || f.reason === '') {
      errors.reason = [`can't be blank (one of ${ADJUSTMENT_REASONS.join(', ')}, or a stock_adjustment_reason_id)`];
      return undefined;
    }
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
      ...this.stamp(),
      stock_location_id: f.stock_location_id,
      reason: reason!.reason_code,
      reason_label: reason!.name,
      stock_adjustment_reason_id: reason!.id,
      notes: f.notes ?? null,
      adjustment_number: f.adjustment_number ?? `SA${String(++this.store.counters.stock_adjustment).padStart(4, '0')}`,
      stock_adjustment_line_item_ids: [],
    });
    items.forEach(([v, q], i) => {
      const price = prices[i] ?? (v.moving_average_cost == null ? null : D(v.moving_average_cost));
      const li = this.store.stock_adjustment_line_items.insert({
        ...this.stamp(),
        stock_adjustment_id: adj.id,
        variant_id: v.id,
        quantity: qty1(q),
        price: price === null ? null : price.toString(),
      });
      (adj.stock_adjustment_line_item_ids as number[]).push(li.id);
      if (q.gt(0)) this.stock.receiveCost(v.id, q, prices[i]!);
      this.stock.moveOnHand(v.id, adj.stock_location_id, q);
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
    if (f.source_location_id != null && f.source_location_id === f.destination_location_id)
      errors.destination_location_id = ['must differ from the source location'];
    const items = this.stockLines(body, 'stock_transfer_line_items', errors, false);
    this.check(errors);
    return this.newTransfer(
      f.source_location_id as number,
      f.destination_location_id as number,
      items.map(([v, q]) => [v.id, q]),
      f,
    );
  }

  private newTransfer(source: number, destination: number, lines: [number, Decimal][], f: Record<string, unknown>): Row {
    const tr = this.store.stock_transfers.insert({
      ...this.stamp(),
      source_location_id: source,
      destination_location_id: destination,
      notes: f.notes ?? null,
      status: 'active',
      adjustment_number: f.adjustment_number ?? `ST${String(++this.store.counters.stock_transfer).padStart(4, '0')}`,
      received_at: null,
      transacted_at: f.transacted_at ?? null,
      cached_quantity: qty1(lines.reduce((sum, [, q]) => sum.plus(q), ZERO)),
      stock_transfer_line_item_ids: [],
    });
    for (const [variantId, q] of lines) {
      const li = this.store.stock_transfer_line_items.insert({
        ...this.stamp(),
        stock_transfer_id: tr.id,
        variant_id: variantId,
        quantity: qty1(q),
      });
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
      if (tr.status !== 'active')
        throw new ApiFail(422, `A ${tr.status} stock transfer cannot be received`, { status: [`is ${tr.status}`] });
      tr.status = 'received';
      tr.received_at = this.now();
      tr.transacted_at ??= tr.received_at;
      this.touch(tr);
      for (const li of lines) {
        this.stock.moveOnHand(li.variant_id, tr.source_location_id, D(li.quantity).neg());
        this.stock.moveOnHand(li.variant_id, tr.destination_location_id, D(li.quantity));
      }
      return tr;
    }
    if (action === 'revert') {
      if (tr.status !== 'received')
        throw new ApiFail(422, 'Only a received stock transfer can be reverted', { status: [`is ${tr.status}`] });
      return this.newTransfer(
        tr.destination_location_id,
        tr.source_location_id,
        lines.map((li) => [li.variant_id, D(li.quantity)]),
        { notes: `Reversal of Stock Transfer #${tr.adjustment_number}` },
      );
    }
    throw new ApiFail(404, `Unknown stock transfer action ${action}`);
  }
}
