// The in-memory account: one table per resource, records kept in their API shape (fields whose name starts
// with `_` are internal and never rendered). Ids grow per table; creation order equals id order.
import { Decimal } from 'decimal.js';

export type Row = Record<string, any> & { id: number; created_at: string; updated_at: string };

export class Table<R extends Row = Row> {
  readonly rows = new Map<number, R>();
  /** Records in creation (id) order. */
  readonly order: R[] = [];
  private nextId: number;
  constructor(firstId: number) {
    this.nextId = firstId;
  }
  insert(fields: Omit<R, 'id'> & { id?: number }): R {
    const row = { id: this.nextId++, ...fields } as R;
    this.rows.set(row.id, row);
    this.order.push(row);
    return row;
  }
  get(id: number): R | undefined {
    return this.rows.get(id);
  }
  /** Its rows and next id, to be kept between runs (state.ts). */
  dump(): { nextId: number; rows: R[] } {
    return { nextId: this.nextId, rows: this.order };
  }
  /** Takes back what dump() gave; ids go on `gap` further (a state saved while running may miss the last ones). */
  load(kept: { nextId: number; rows: R[] }, gap: number): void {
    this.nextId = kept.nextId + gap;
    for (const row of kept.rows) {
      this.rows.set(row.id, row);
      this.order.push(row);
    }
  }
  /** Permanent deletion (the few resources the spec says are deleted for good). */
  remove(id: number): void {
    const row = this.rows.get(id);
    if (!row) return;
    this.rows.delete(id);
    const i = this.order.indexOf(row);
    if (i >= 0) this.order.splice(i, 1);
  }
}

/** An API error: status, message and, for 422, per-field messages. */
export class ApiFail extends Error {
  readonly status: number;
  readonly errors: Record<string, string[]> | undefined;
  readonly headers: Record<string, string> | undefined;
  constructor(status: number, message: string, errors?: Record<string, string[]>, headers?: Record<string, string>) {
    super(message);
    this.status = status;
    this.errors = errors;
    this.headers = headers;
  }
}

export function invalid(errors: Record<string, string[]>): ApiFail {
  const first = Object.entries(errors)[0]!;
  return new ApiFail(422, `Validation failed: ${first[0]} ${first[1][0]}`, errors);
}

export const D = (v: Decimal.Value): Decimal => new Decimal(v);
export const ZERO = new Decimal(0);

/** "10", "2.5", "-12": the form of the per-location quantities. */
export function qty(d: Decimal | null | undefined): string | null {
  return d == null ? null : d.toString();
}
/** "10.0", "2.5", "-0.0": the form of line item quantities and the *_levels maps. */
export function qty1(d: Decimal | null | undefined): string | null {
  if (d == null) return null;
  return d.isInteger() ? d.toFixed(1) : d.toString();
}

/** A decimal from a request value (string or number); null when it is not a finite decimal. */
export function parseDecimal(v: unknown): Decimal | null {
  if (typeof v === 'number' && Number.isFinite(v)) return new Decimal(String(v));
  if (typeof v === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(v)) return new Decimal(v.trim());
  return null;
}

export const PLURALS: Record<string, string> = {
  account: 'accounts',
  address: 'addresses',
  company: 'companies',
  contact: 'contacts',
  currency: 'currencies',
  location: 'locations',
  product: 'products',
  variant: 'variants',
  order: 'orders',
  order_line_item: 'order_line_items',
  fulfillment: 'fulfillments',
  fulfillment_line_item: 'fulfillment_line_items',
  fulfillment_return: 'fulfillment_returns',
  fulfillment_return_line_item: 'fulfillment_return_line_items',
  purchase_order: 'purchase_orders',
  purchase_order_line_item: 'purchase_order_line_items',
  procurement: 'procurements',
  stock_adjustment: 'stock_adjustments',
  stock_adjustment_line_item: 'stock_adjustment_line_items',
  stock_transfer: 'stock_transfers',
  stock_transfer_line_item: 'stock_transfer_line_items',
  invoice: 'invoices',
  invoice_line_item: 'invoice_line_items',
  webhook: 'webhooks',
  user: 'users',
  payment: 'payments',
  stock_adjustment_reason: 'stock_adjustment_reasons',
  payment_term: 'payment_terms',
  payment_method: 'payment_methods',
  tax_type: 'tax_types',
  price_list: 'price_lists',
  composition: 'composition',
};
export const SINGULARS: Record<string, string> = Object.fromEntries(Object.entries(PLURALS).map(([s, p]) => [p, s]));

export interface Stock {
  soh: Decimal;
  committed: Decimal | null;
  incoming: Decimal | null;
  bin_location: string | null;
  reorder_point: string | null;
}

/** One change of a variant's stock at a location, with the quantities after it (for measuring freshness). */
export interface StockMove {
  seq: number;
  variant_id: number;
  location_id: number;
  at: string;
  cause: string;
  stock_on_hand: string;
  committed: string;
  incoming: string;
}

/** A bounded log: keeps the last `capacity` entries. */
export class Ring<T> {
  private readonly items: T[] = [];
  private start = 0;
  private readonly capacity: number;
  constructor(capacity: number) {
    this.capacity = capacity;
  }
  push(item: T): void {
    if (this.items.length < this.capacity) this.items.push(item);
    else {
      this.items[this.start] = item;
      this.start = (this.start + 1) % this.capacity;
    }
  }
  /** Entries oldest first. */
  *[Symbol.iterator](): Iterator<T> {
    for (let i = 0; i < this.items.length; i++) yield this.items[(this.start + i) % this.items.length]!;
  }
}

/** What Store.dump() keeps (Maps and Decimals inside: state.ts encodes them). */
export interface StoreState {
  account: Row;
  tables: Record<string, { nextId: number; rows: Row[] }>;
  compositions: Store['compositions'];
  bundlesOf: Store['bundlesOf'];
  moveSeq: number;
  counters: Store['counters'];
}

/** Every table of one account. */
export class Store {
  account!: Row;
  readonly locations = new Table(1);
  readonly currencies = new Table(1);
  readonly users = new Table(1);
  readonly payment_terms = new Table(1);
  readonly payment_methods = new Table(1);
  readonly tax_types = new Table(1);
  readonly companies = new Table(101);
  readonly addresses = new Table(201);
  readonly contacts = new Table(301);
  readonly products = new Table(1001);
  readonly variants = new Table(5001);
  readonly orders = new Table(20001);
  readonly order_line_items = new Table(30001);
  readonly fulfillments = new Table(40001);
  readonly fulfillment_line_items = new Table(45001);
  readonly fulfillment_returns = new Table(50001);
  readonly fulfillment_return_line_items = new Table(52001);
  readonly invoices = new Table(55001);
  readonly invoice_line_items = new Table(57001);
  readonly payments = new Table(58001);
  readonly purchase_orders = new Table(60001);
  readonly purchase_order_line_items = new Table(62001);
  readonly procurements = new Table(65001);
  readonly stock_adjustment_reasons = new Table(1);
  readonly stock_adjustments = new Table(70001);
  readonly stock_adjustment_line_items = new Table(72001);
  readonly stock_transfers = new Table(75001);
  readonly stock_transfer_line_items = new Table(77001);
  readonly webhooks = new Table(1);
  /** bundle variant id -> its components. */
  readonly compositions = new Map<number, { component_id: number; quantity: Decimal }[]>();
  /** component variant id -> bundles that use it. */
  readonly bundlesOf = new Map<number, Set<number>>();
  /** Every change of a variant's on hand, committed or incoming at a location, oldest first (bounded). */
  readonly stockMoves = new Ring<StockMove>(100_000);
  private moveSeq = 0;
  counters = { order: 0, purchase_order: 0, invoice: 0, credit_note: 0, procurement: 0, stock_adjustment: 0, stock_transfer: 0 };

  recordMove(variantId: number, locationId: number, stock: Stock, at: string, cause: string): void {
    this.stockMoves.push({
      seq: ++this.moveSeq,
      variant_id: variantId,
      location_id: locationId,
      at,
      cause,
      stock_on_hand: stock.soh.toString(),
      committed: (stock.committed ?? 0).toString(),
      incoming: (stock.incoming ?? 0).toString(),
    });
  }

  /**
   * Everything of the account worth keeping between runs (state.ts), but the stock moves' log itself: a measuring
   * aid of the admin API, only its sequence goes on so that an `after=` cursor never meets a number twice.
   */
  dump(): StoreState {
    const tables: Record<string, ReturnType<Table['dump']>> = {};
    for (const [name, value] of Object.entries(this)) if (value instanceof Table) tables[name] = value.dump();
    return {
      account: this.account,
      tables,
      compositions: this.compositions,
      bundlesOf: this.bundlesOf,
      moveSeq: this.moveSeq,
      counters: this.counters,
    };
  }

  /** A store as dump() left it; `gap` as in Table.load, for ids, document numbers and move sequence alike. */
  static load(kept: StoreState, gap: number): Store {
    const store = new Store();
    store.account = kept.account;
    for (const [name, table] of Object.entries(kept.tables)) store.table(name)?.load(table, gap);
    for (const [k, v] of kept.compositions) store.compositions.set(k, v);
    for (const [k, v] of kept.bundlesOf) store.bundlesOf.set(k, v);
    store.moveSeq = kept.moveSeq + gap;
    store.counters = Object.fromEntries(Object.entries(kept.counters).map(([k, v]) => [k, v + gap])) as Store['counters'];
    return store;
  }

  table(plural: string): Table | undefined {
    const t = (this as unknown as Record<string, unknown>)[plural];
    return t instanceof Table ? t : undefined;
  }
}
