// Merchant activity: orders placed, shipped and voided, purchase orders received, stock adjusted, variants
// created, updated and archived, all through the service so each fires its webhooks.
import type { Random } from './random.ts';
import type { Service } from './service.ts';
import type { Row } from './store.ts';
import { ApiFail } from './store.ts';

export const ACTIVITY_KINDS = ['place_order', 'ship_order', 'void_order', 'receive_purchase_order', 'adjust_stock', 'create_variant', 'update_variant', 'archive_variant'] as const;
export type ActivityKind = (typeof ACTIVITY_KINDS)[number];

// Relative frequency of each kind when none is asked for.
const WEIGHTS: [ActivityKind, number][] = [
  ['place_order', 30], ['ship_order', 25], ['void_order', 5], ['receive_purchase_order', 8], ['adjust_stock', 20],
  ['create_variant', 5], ['update_variant', 5], ['archive_variant', 2],
];

export class Activity {
  private readonly service: Service;
  private readonly rng: Random;
  constructor(service: Service, rng: Random) {
    this.service = service;
    this.rng = rng;
  }

  private pickKind(kinds?: readonly ActivityKind[]): ActivityKind {
    const pool = WEIGHTS.filter(([k]) => !kinds || kinds.includes(k));
    const total = pool.reduce((s, [, w]) => s + w, 0);
    let r = this.rng.next() * total;
    for (const [k, w] of pool) if ((r -= w) < 0) return k;
    return pool[0]![0];
  }

  perform(n: number, kinds?: readonly ActivityKind[]): { kind: string; id: number }[] {
    const out: { kind: string; id: number }[] = [];
    for (let i = 0; i < n; i++) {
      const kind = this.pickKind(kinds);
      try {
        const id = this.service.run(() => this.one(kind));
        if (id !== null) out.push({ kind, id });
      } catch (err) {
        if (!(err instanceof ApiFail)) throw err;
      }
    }
    return out;
  }

  private stockVariants(): Row[] {
    const all = this.service.store.variants.order;
    const out: Row[] = [];
    // Sample rather than scan: large catalogs stay fast.
    for (let i = 0; i < 20 && all.length; i++) {
      const v = all[Math.floor(this.rng.next() * all.length)]!;
      if (v.status === 'active' && !v.composite) out.push(v);
    }
    return out;
  }

  private recent(rows: readonly Row[], test: (r: Row) => boolean): Row | undefined {
    for (let i = rows.length - 1, seen = 0; i >= 0 && seen < 500; i--, seen++) if (test(rows[i]!)) return rows[i];
    return undefined;
  }

  private one(kind: ActivityKind): number | null {
    const s = this.service;
    const store = s.store;
    switch (kind) {
      case 'place_order': {
        const customers = store.companies.order.filter((c) => c.company_type !== 'supplier' && c.status === 'active' && c.address_ids.length);
        const variants = this.stockVariants();
        if (!customers.length || !variants.length) return null;
        const c = this.rng.pick(customers);
        const lines = variants.slice(0, this.rng.int(1, 3)).map((v) => ({ variant_id: v.id, quantity: String(this.rng.int(1, 4)) }));
        return s.createOrder({ company_id: c.id, shipping_address_id: c.address_ids[0], status: 'active', order_line_items: lines }).id;
      }
      case 'ship_order': {
        const o = this.recent(store.orders.order, (r) => r.status === 'active' || r.status === 'finalized');
        if (!o) return null;
        s.orderAction(o.id, 'fulfil', {});
        return o.id;
      }
      case 'void_order': {
        const o = this.recent(store.orders.order, (r) => (r.status === 'active' || r.status === 'draft') && r.fulfillment_status === 'unshipped');
        if (!o) return null;
        s.orderAction(o.id, 'void', {});
        return o.id;
      }
      case 'receive_purchase_order': {
        let po = this.recent(store.purchase_orders.order, (r) => r.status === 'active' || r.status === 'draft');
        if (!po) {
          const suppliers = store.companies.order.filter((c) => c.company_type === 'supplier' && c.status === 'active');
          const variants = this.stockVariants();
          if (!suppliers.length || !variants.length) return null;
          po = s.createPurchaseOrder({ company_id: this.rng.pick(suppliers).id, status: 'active', purchase_order_line_items: variants.slice(0, 2).map((v) => ({ variant_id: v.id, quantity: String(this.rng.int(10, 40)) })) });
        }
        s.receivePurchaseOrder(po.id, {});
        return po.id;
      }
      case 'adjust_stock': {
        const variants = this.stockVariants();
        if (!variants.length) return null;
        const v = variants[0]!;
        const locs = store.locations.order.filter((l) => l.status === 'active');
        const delta = this.rng.int(-5, 10) || 1;
        return s.createStockAdjustment({ stock_location_id: this.rng.pick(locs).id, reason: 'stock count', stock_adjustment_line_items: [{ variant_id: v.id, quantity: String(delta) }] }).id;
      }
      case 'create_variant': {
        const products = store.products.order;
        const p = this.recent(products, (r) => r.status === 'active' && !r.variant_ids.some((id: number) => store.variants.get(id)?.composite));
        if (!p) return null;
        const n = p.variant_ids.length + 1;
        return s.createVariant({ product_id: p.id, name: `${p.name} #${n}`, sku: `ACT-${p.id}-${n}`, retail_price: String(this.rng.int(5, 200)), initial_stock_levels: [{ location_id: store.account.primary_location_id, stock_on_hand: String(this.rng.int(0, 50)) }] }).id;
      }
      case 'update_variant': {
        const v = this.stockVariants()[0];
        if (!v) return null;
        s.update('variants', v.id, { retail_price: String(this.rng.int(5, 200)), max_online: this.rng.chance(0.3) ? String(this.rng.int(1, 10)) : null });
        return v.id;
      }
      case 'archive_variant': {
        const v = this.stockVariants()[0];
        if (!v) return null;
        s.destroy('variants', v.id);
        return v.id;
      }
    }
  }
}
