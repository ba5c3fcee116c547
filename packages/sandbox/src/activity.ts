// Merchant activity: orders placed, finalized, paid, shipped (whole or line by line), returned and voided,
// purchase orders received, stock adjusted and transferred, variants created, updated and archived, products
// disabled and re-enabled, customers created and updated; all through the service, so each moves stock and
// fires its webhooks as the API would, and every documented event has an activity that fires it.
import type { Random } from './random.ts';
import type { Service } from './service.ts';
import type { Row } from './store.ts';
import { ApiFail } from './store.ts';

// Each kind: its relative frequency when none is asked for, and the operation it is (the cause of its stock moves).
const KINDS = {
  place_order: [30, 'order.create'],
  ship_order: [20, 'order.fulfil'],
  ship_lines: [5, 'order.fulfil'],
  finalize_order: [4, 'order.update'],
  pay_order: [3, 'order.pay'],
  return_order: [3, 'fulfillment_return.create'],
  void_order: [5, 'order.void'],
  receive_purchase_order: [8, 'purchase_order.receive'],
  adjust_stock: [20, 'stock_adjustment.create'],
  transfer_stock: [4, 'stock_transfer.receive'],
  create_variant: [5, 'variant.create'],
  update_variant: [5, 'variant.update'],
  archive_variant: [2, 'variant.destroy'],
  toggle_product: [2, 'product.update'],
  create_customer: [2, 'company.create'],
  update_customer: [2, 'company.update'],
} as const satisfies Record<string, readonly [number, string]>;

export type ActivityKind = keyof typeof KINDS;
export const ACTIVITY_KINDS = Object.keys(KINDS) as ActivityKind[];

export class Activity {
  private readonly service: Service;
  private readonly rng: Random;
  constructor(service: Service, rng: Random) {
    this.service = service;
    this.rng = rng;
  }

  private pickKind(kinds?: readonly ActivityKind[]): ActivityKind {
    const pool = ACTIVITY_KINDS.filter((k) => !kinds || kinds.includes(k));
    const total = pool.reduce((s, k) => s + KINDS[k][0], 0);
    let r = this.rng.next() * total;
    for (const k of pool) if ((r -= KINDS[k][0]) < 0) return k;
    return pool[0]!;
  }

  perform(n: number, kinds?: readonly ActivityKind[]): { kind: string; id: number }[] {
    const out: { kind: string; id: number }[] = [];
    for (let i = 0; i < n; i++) {
      const kind = this.pickKind(kinds);
      try {
        const id = this.service.run(KINDS[kind][1], () => this.one(kind));
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

  private openOrder(): Row | undefined {
    return this.recent(this.service.store.orders.order, (r) => r.status === 'active' || r.status === 'finalized');
  }

  private activeLocations(): Row[] {
    return this.service.store.locations.order.filter((l) => l.status === 'active');
  }

  private one(kind: ActivityKind): number | null {
    const s = this.service;
    const store = s.store;
    switch (kind) {
      case 'place_order': {
        const customers = store.companies.order.filter(
          (c) => c.company_type !== 'supplier' && c.status === 'active' && c.address_ids.length,
        );
        const variants = this.stockVariants();
        if (!customers.length || !variants.length) return null;
        const c = this.rng.pick(customers);
        const lines = variants.slice(0, this.rng.int(1, 3)).map((v) => ({ variant_id: v.id, quantity: String(this.rng.int(1, 4)) }));
        return s.orders.createOrder({ company_id: c.id, shipping_address_id: c.address_ids[0], status: 'active', order_line_items: lines })
          .id;
      }
      case 'ship_order': {
        const o = this.openOrder();
        if (!o) return null;
        s.orders.orderAction(o.id, 'fulfil', {});
        return o.id;
      }
      case 'ship_lines': {
        // One line at a time, as a 3PL does: a packed fulfillment, then PUT to fulfilled.
        const o = this.recent(
          store.orders.order,
          (r) => (r.status === 'active' || r.status === 'finalized') && r.packed_status !== 'packed',
        );
        if (!o) return null;
        const line = (o.order_line_item_ids as number[])
          .map((id) => store.order_line_items.get(id)!)
          .find((l) => !l.freeform && l._packed.lt(l.quantity));
        if (!line) return null;
        const { fulfillments } = s.orders.orderAction(o.id, 'fulfil', { order_line_item_ids: [line.id] }) as { fulfillments: Row[] };
        s.orders.updateFulfillment(fulfillments[0]!.id, {
          status: 'fulfilled',
          tracking_company: 'DHL',
          tracking_number: `T${fulfillments[0]!.id}`,
        });
        return o.id;
      }
      case 'finalize_order': {
        const o = this.recent(store.orders.order, (r) => r.status === 'active' || r.status === 'draft');
        if (!o) return null;
        s.orders.updateOrder(o.id, { status: 'finalized' });
        return o.id;
      }
      case 'pay_order': {
        const o = this.recent(
          store.orders.order,
          (r) => ['active', 'finalized', 'fulfilled'].includes(r.status) && r.payment_status !== 'paid',
        );
        if (!o) return null;
        s.orders.orderAction(o.id, 'pay', {});
        return o.id;
      }
      case 'return_order': {
        const o = this.recent(store.orders.order, (r) => r.fulfillment_status !== 'unshipped' && r.return_status === 'not_returned');
        if (!o) return null;
        const line = (o.order_line_item_ids as number[])
          .map((id) => store.order_line_items.get(id)!)
          .find((l) => l._shipped.gt(l._returned));
        if (!line) return null;
        const ret = s.returns.createReturn({
          order_id: o.id,
          fulfillment_return_line_items: [{ order_line_item_id: line.id, quantity: '1' }],
        });
        s.returns.updateReturn(ret.id, { status: 'received' });
        return ret.id;
      }
      case 'void_order': {
        const o = this.recent(
          store.orders.order,
          (r) => (r.status === 'active' || r.status === 'draft') && r.fulfillment_status === 'unshipped',
        );
        if (!o) return null;
        s.orders.orderAction(o.id, 'void', {});
        return o.id;
      }
      case 'receive_purchase_order': {
        let po = this.recent(store.purchase_orders.order, (r) => r.status === 'active' || r.status === 'draft');
        if (!po) {
          const suppliers = store.companies.order.filter((c) => c.company_type === 'supplier' && c.status === 'active');
          const variants = this.stockVariants();
          if (!suppliers.length || !variants.length) return null;
          po = s.purchasing.createPurchaseOrder({
            company_id: this.rng.pick(suppliers).id,
            status: 'active',
            purchase_order_line_items: variants.slice(0, 2).map((v) => ({ variant_id: v.id, quantity: String(this.rng.int(10, 40)) })),
          });
        }
        s.purchasing.receivePurchaseOrder(po.id, {});
        return po.id;
      }
      case 'adjust_stock': {
        const v = this.stockVariants()[0];
        if (!v) return null;
        const delta = this.rng.int(-5, 10) || 1;
        // Stock found is valued at the variant's cost, as a client is told to do (real-service-notes §3).
        const price = v.moving_average_cost ?? v.last_cost_price ?? '1.0';
        return s.adjustments.createStockAdjustment({
          stock_location_id: this.rng.pick(this.activeLocations()).id,
          reason: delta > 0 ? 'supplier' : 'shrinkage',
          stock_adjustment_line_items: [{ variant_id: v.id, quantity: String(delta), ...(delta > 0 ? { price } : {}) }],
        }).id;
      }
      case 'transfer_stock': {
        const v = this.stockVariants()[0];
        const locs = this.activeLocations();
        if (!v || locs.length < 2) return null;
        const [from, to] = [this.rng.pick(locs), this.rng.pick(locs)];
        if (from.id === to.id) return null;
        const tr = s.adjustments.createStockTransfer({
          source_location_id: from.id,
          destination_location_id: to.id,
          stock_transfer_line_items: [{ variant_id: v.id, quantity: String(this.rng.int(1, 5)) }],
        });
        s.adjustments.transferAction(tr.id, 'receive');
        return tr.id;
      }
      case 'create_variant': {
        const products = store.products.order;
        // Another variant of a recent product, or a new product (product.create) once that one has four.
        const recent = this.recent(
          products,
          (r) => r.status === 'active' && !r.variant_ids.some((id: number) => store.variants.get(id)?.composite),
        );
        const p =
          recent && recent.variant_ids.length < 4
            ? recent
            : s.catalog.createProduct({ name: `Activity Product ${products.length + 1}`, product_type: 'Sample' });
        const n = p.variant_ids.length + 1;
        const price = this.rng.int(5, 200);
        return s.catalog.createVariant({
          product_id: p.id,
          name: `${p.name} #${n}`,
          sku: `ACT-${p.id}-${n}`,
          retail_price: String(price),
          initial_cost_price: (price * 0.4).toFixed(2),
          initial_stock_levels: [{ location_id: store.account.primary_location_id, stock_on_hand: String(this.rng.int(0, 50)) }],
        }).id;
      }
      case 'update_variant': {
        const v = this.stockVariants()[0];
        if (!v) return null;
        s.catalog.update('variants', v.id, {
          retail_price: String(this.rng.int(5, 200)),
          max_online: this.rng.chance(0.3) ? String(this.rng.int(1, 10)) : null,
        });
        return v.id;
      }
      case 'archive_variant': {
        const v = this.stockVariants()[0];
        if (!v) return null;
        s.destroy('variants', v.id);
        return v.id;
      }
      case 'toggle_product': {
        // A merchant disables a product for a while and enables it again (real-service-notes §5).
        const disabled = this.recent(store.products.order, (r) => r.status === 'disabled');
        const p = disabled && this.rng.chance(0.6) ? disabled : store.products.get(this.stockVariants()[0]?.product_id);
        if (!p || p.status === 'archived') return null;
        s.catalog.update('products', p.id, { status: p.status === 'disabled' ? 'active' : 'disabled' });
        return p.id;
      }
      case 'create_customer': {
        const n = store.companies.order.length + 1;
        const c = s.catalog.createCompany({ name: `Walk-in Customer ${n}`, company_type: 'consumer', email: `walkin${n}@example.com` });
        s.catalog.createAddress({
          company_id: c.id,
          address1: `${this.rng.int(1, 99)} Market St`,
          city: 'Singapore',
          country: 'SG',
          label: 'Shipping',
        });
        s.catalog.createContact({ company_id: c.id, first_name: 'Walk-in', last_name: String(n), email: `walkin${n}@example.com` });
        return c.id;
      }
      case 'update_customer': {
        const c = this.recent(store.companies.order, (r) => r.status === 'active' && r.company_type !== 'supplier' && r.address_ids.length);
        if (!c) return null;
        s.catalog.update('addresses', c.address_ids[0], { phone_number: `555-${this.rng.int(1000, 9999)}` });
        if (c.contact_ids.length) s.catalog.update('contacts', c.contact_ids[0], { phone_number: `555-${this.rng.int(1000, 9999)}` });
        s.catalog.update('companies', c.id, { phone_number: `555-${this.rng.int(1000, 9999)}` });
        return c.id;
      }
    }
  }
}
