// The merchant's account as a set of operations, one aggregate per module (catalog, stock, orders and
// fulfilments, returns, purchasing, adjustments and transfers). The HTTP routes, the admin API and the activity
// generator all go through these, so every change moves stock the same way and fires the same events.
import type { Clock } from './clock.ts';
import type { Profile } from './profile.ts';
import type { Store } from './store.ts';
import { ApiFail } from './store.ts';
import { RESOURCES } from './resources.ts';
import { Core, Part } from './core.ts';
import { Inventory } from './stock.ts';
import { Catalog } from './catalog.ts';
import { Orders } from './orders.ts';
import { Returns } from './returns.ts';
import { Purchasing } from './purchasing.ts';
import { Adjustments } from './adjustments.ts';

export class Service extends Part {
  readonly stock: Inventory;
  readonly catalog: Catalog;
  readonly orders: Orders;
  readonly returns: Returns;
  readonly purchasing: Purchasing;
  readonly adjustments: Adjustments;

  constructor(store: Store, clock: Clock, profile: Profile, onEvent: (event: string, id: number) => void) {
    super(new Core(store, clock, profile, onEvent));
    this.stock = new Inventory(this.core);
    this.catalog = new Catalog(this.core, this.stock);
    this.orders = new Orders(this.core, this.stock, this.catalog);
    this.returns = new Returns(this.core, this.stock);
    this.purchasing = new Purchasing(this.core, this.stock);
    this.adjustments = new Adjustments(this.core, this.stock);
  }

  get events(): ReadonlySet<string> {
    return this.core.events;
  }
  /** True while seeding: no events at all. */
  get muted(): boolean {
    return this.core.muted;
  }
  set muted(on: boolean) {
    this.core.muted = on;
  }

  /** Runs one operation named `cause`; its events fire once each, after it succeeded. */
  run<T>(cause: string, fn: () => T): T {
    return this.core.run(cause, fn);
  }

  /** DELETE: soft (archived / deleted) or permanent, per resource; documents follow their own rules. */
  destroy(plural: string, id: number): void {
    const def = RESOURCES[plural];
    if (!def?.deletion) throw new ApiFail(404, `DELETE is not supported on ${plural}`);
    const row = this.find(plural, id);
    if (plural === 'orders') {
      this.orders.deleteOrder(row);
      return;
    }
    if (plural === 'fulfillments') {
      this.orders.deleteFulfillment(row);
      return;
    }
    if (plural === 'purchase_orders') {
      this.purchasing.deletePurchaseOrder(row);
      return;
    }
    if (plural === 'order_line_items') {
      this.orders.deleteOrderLine(row);
      return;
    }
    if (plural === 'purchase_order_line_items') {
      this.purchasing.deletePurchaseLine(row);
      return;
    }
    if (def.deletion === 'permanent') {
      if (plural === 'invoices') this.orders.deleteInvoice(row);
      else this.catalog.remove(plural, row);
      this.store.table(plural)!.remove(id);
    } else {
      if (row.status === 'archived') return;
      this.catalog.archive(plural, row);
    }
    this.catalog.fireDestroy(def.singular, id);
  }
}
