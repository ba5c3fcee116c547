// Purchase orders: incoming stock while active, received whole into a procurement.
import type { Decimal } from 'decimal.js';
import { ApiFail, D, invalid, parseDecimal, qty1, ZERO, type Row } from './store.ts';
import { RESOURCES, pickFields } from './resources.ts';
import { Part, MAX_LINES_PER_REQUEST, type Body, type Core, type Lifecycle } from './core.ts';
import type { Inventory } from './stock.ts';

/** Purchase order statuses; `received` only by the receive action. */
const PURCHASE_ORDER: Lifecycle = { created: ['draft', 'active'], moves: { draft: ['active', 'void'], active: ['void', 'draft'] } };

export class Purchasing extends Part {
  private readonly stock: Inventory;

  constructor(core: Core, stock: Inventory) {
    super(core);
    this.stock = stock;
  }

  private addPurchaseLines(po: Row, items: unknown, errors: Record<string, string[]>): (() => void)[] {
    const work: (() => void)[] = [];
    if (items == null) return work;
    if (!Array.isArray(items)) {
      errors.purchase_order_line_items = ['must be an array'];
      return work;
    }
    if (items.length > MAX_LINES_PER_REQUEST) {
      errors.purchase_order_line_items = [`too many line items in one request (at most ${MAX_LINES_PER_REQUEST})`];
      return work;
    }
    items.forEach((item: Body, i) => {
      const bad = (m: string) => (errors[`purchase_order_line_items[${i}]`] ??= []).push(m);
      const q = parseDecimal(item?.quantity);
      if (!q || q.lte(0)) return bad('quantity must be greater than 0');
      const variant = typeof item.variant_id === 'number' ? this.store.variants.get(item.variant_id) : undefined;
      if (!variant) return bad('variant_id does not exist');
      const price = parseDecimal(item.price ?? (variant._prices as Record<string, string | null>).buy ?? 0) ?? ZERO;
      work.push(() => {
        const line = this.store.purchase_order_line_items.insert({
          ...this.stamp(),
          purchase_order_id: po.id,
          variant_id: variant.id,
          procurement_id: null,
          tax_type_id: null,
          quantity: qty1(q),
          position: (po.purchase_order_line_item_ids as number[]).length,
          tax_rate_override: null,
          price: qty1(price),
          label: item.label ?? null,
          freeform: false,
          base_price: null,
          extra_cost_value: '0.0',
          image_url: null,
          tax_rate: null,
        });
        (po.purchase_order_line_item_ids as number[]).push(line.id);
      });
    });
    return work;
  }

  private refreshPurchaseOrder(po: Row): void {
    let total = ZERO,
      count = ZERO;
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

  /** Brings a purchase order's incoming stock in line with its state: an active order brings in its lines. */
  private syncIncoming(po: Row): void {
    const want = new Map<string, Decimal>();
    if (po.status === 'active') {
      for (const id of po.purchase_order_line_item_ids as number[]) {
        const line = this.store.purchase_order_line_items.get(id)!;
        if (line.variant_id == null) continue;
        this.stock.hold(want, line.variant_id, D(line.quantity), po.stock_location_id);
      }
    }
    this.stock.settle('incoming', po._incoming as Map<string, Decimal>, want);
    po._incoming = want;
  }

  createPurchaseOrder(body: Body): Row {
    const f = pickFields(RESOURCES.purchase_orders!, body, { create: true });
    const errors: Record<string, string[]> = {};
    const status = this.createdStatus(PURCHASE_ORDER, f.status, 'draft', errors);
    const company = this.need('companies', f.company_id, 'company_id', errors);
    if (f.company_id == null) errors.company_id = ["can't be blank"];
    const loc = (f.stock_location_id as number | undefined) ?? this.store.account.primary_location_id;
    if (!this.store.locations.get(loc)) errors.stock_location_id = ['does not exist'];
    const currency =
      f.currency_iso != null ? this.currency(f.currency_iso, errors) : this.store.currencies.get(this.store.account.default_currency_id);
    this.addPurchaseLines({ id: -1, purchase_order_line_item_ids: [] } as unknown as Row, body.purchase_order_line_items, errors);
    this.check(errors);
    const { currency_iso: _iso, ...rest } = f;
    const po = this.store.purchase_orders.insert({
      ...this.stamp(),
      document_url: null,
      company_id: company!.id,
      supplier_address_id: (company!.address_ids as number[])[0] ?? null,
      stock_location_id: loc,
      billing_address_id: loc,
      currency_id: currency?.id ?? null,
      status,
      procurement_status: 'unprocured',
      order_number: `PO${String(++this.store.counters.purchase_order).padStart(4, '0')}`,
      reference_number: null,
      notes: null,
      email: null,
      tax_treatment: 'exclusive',
      due_at: null,
      default_price_list_id: 'buy',
      destination_url: null,
      total: '0',
      cached_quantity: '0.0',
      cached_total: '0',
      default_price_type_id: 'buy',
      tax_type: 'exclusive',
      purchase_order_line_item_ids: [],
      procurement_ids: [],
      ...rest,
      _incoming: new Map<string, Decimal>(),
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
    this.checkMove(PURCHASE_ORDER, po, f.status, errors, f.status === 'received' ? ' (use the receive action)' : '');
    if (body.purchase_order_line_items != null && !['draft', 'active'].includes(po.status))
      errors.purchase_order_line_items = [`cannot be changed on a ${po.status} purchase order`];
    if (f.stock_location_id !== undefined && !this.store.locations.get(f.stock_location_id as number))
      errors.stock_location_id = ['does not exist'];
    if (f.company_id !== undefined) this.need('companies', f.company_id, 'company_id', errors);
    const work = this.addPurchaseLines(po, body.purchase_order_line_items, errors);
    this.check(errors);
    delete f.currency_iso;
    Object.assign(po, f);
    for (const w of work) w();
    this.refreshPurchaseOrder(po);
    return po;
  }

  deletePurchaseOrder(po: Row): void {
    if (po.status === 'received') throw new ApiFail(422, 'A received purchase order cannot be deleted', { status: ['is received'] });
    if (po.status === 'deleted') return;
    po.status = 'deleted';
    this.refreshPurchaseOrder(po);
  }

  deletePurchaseLine(line: Row): void {
    const po = this.store.purchase_orders.get(line.purchase_order_id)!;
    if (!['draft', 'active'].includes(po.status))
      throw new ApiFail(422, `Lines of a ${po.status} purchase order cannot be removed`, { purchase_order_id: [`is ${po.status}`] });
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
    if (q === null || q?.lte(0)) throw invalid({ quantity: ['must be greater than 0'] });
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
    if (body && /line_item|quantity/.test(JSON.stringify(body)))
      throw new ApiFail(422, 'Partial receiving is not supported; receive the whole purchase order', {
        purchase_order_line_items: ['partial receiving is not supported'],
      });
    if (!['draft', 'active'].includes(po.status))
      throw new ApiFail(422, `A ${po.status} purchase order cannot be received`, { status: [`is ${po.status}`] });
    const proc = this.store.procurements.insert({
      ...this.stamp(),
      purchase_order_id: po.id,
      received_at: this.now(),
      status: 'received',
      procurement_number: `PR${String(++this.store.counters.procurement).padStart(4, '0')}`,
      purchase_order_line_item_ids: [...po.purchase_order_line_item_ids],
    });
    po.status = 'received';
    this.refreshPurchaseOrder(po); // releases incoming
    for (const lid of po.purchase_order_line_item_ids as number[]) {
      const line = this.store.purchase_order_line_items.get(lid)!;
      line.procurement_id = proc.id;
      this.touch(line);
      if (line.variant_id == null) continue;
      this.stock.receiveCost(line.variant_id, D(line.quantity), D(line.price));
      this.stock.moveOnHand(line.variant_id, po.stock_location_id, D(line.quantity));
    }
    po.procurement_status = 'procured';
    (po.procurement_ids as number[]).push(proc.id);
    this.fire('purchase_order.received', po.id);
    this.fire('procurement.create', proc.id);
    return proc;
  }
}
