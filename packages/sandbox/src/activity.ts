// Merchant activity: orders placed, finalized, packed, shipped with tracking (whole or in parts; tracking also
// given or replaced later), invoiced, paid, voided, returned and the returns received, purchase orders received,
// stock adjusted and transferred, variants created, updated and archived, products
// disabled and re-enabled, customers created and updated; all through the service, so each moves stock and
// fires its webhooks as the API would, and every documented event has an activity that fires it.
import type { Random } from './random.ts';
import type { Service } from './service.ts';
import type { Row } from './store.ts';
import { ApiFail, D } from './store.ts';

// Each kind: its relative frequency when none is asked for, and the operation it is (the cause of its stock moves).
// The order kinds act on any order of the account, whoever made it: the activity's own, the seeded ones and those
// created through the API (a channel's imports), each open one with the same chance (see `any`).
const KINDS = {
  place_order: [30, 'order.create'],
  ship_order: [20, 'fulfillment.create'],
  ship_lines: [5, 'order.fulfil'],
  pack_order: [3, 'order.pack'],
  ship_packed: [4, 'fulfillment.update'],
  add_tracking: [2, 'fulfillment.update'],
  finalize_order: [4, 'order.update'],
  invoice_order: [3, 'order.invoice'],
  pay_order: [3, 'order.pay'],
  return_order: [3, 'fulfillment_return.create'],
  receive_return: [3, 'fulfillment_return.update'],
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

/** Carriers of the activity's shipments: name, tracking number prefix, tracking page (the number appended). */
const CARRIERS = [
  ['DHL', 'JD', 'https://www.dhl.com/track?tracking-number='],
  ['UPS', '1Z', 'https://www.ups.com/track?tracknum='],
  ['FedEx', '7489', 'https://www.fedex.com/fedextrack/?trknbr='],
  ['USPS', '9400', 'https://tools.usps.com/go/TrackConfirmAction?tLabels='],
] as const;

export type ActivityKind = keyof typeof KINDS;
export const ACTIVITY_KINDS = Object.keys(KINDS) as ActivityKind[];

export class Activity {
  private readonly service: Service;
  private readonly rng: Random;
  /** Tracking labels printed so far (each shipment, and each new label of a shipped one, gets the next). */
  private labels = 0;
  constructor(service: Service, rng: Random) {
    this.service = service;
    this.rng = rng;
  }

  /** Where its random choices and tracking labels are, to be kept between runs (state.ts). */
  dump(): { rng: number; labels: number } {
    return { rng: this.rng.state, labels: this.labels };
  }
  restore(kept: { rng: number; labels: number }, gap: number): void {
    this.rng.state = kept.rng;
    this.labels = kept.labels + gap;
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

  /**
   * One of the rows among the last 500 that pass `test`, each with the same chance. Orders are picked this way,
   * so an order created through the API (a channel's import) is as likely to be packed, shipped, invoiced, paid,
   * voided or returned as one the activity placed, and an order that was not picked at once is not buried
   * under newer ones.
   */
  private any(rows: readonly Row[], test: (r: Row) => boolean): Row | undefined {
    const found: Row[] = [];
    for (let i = rows.length - 1, seen = 0; i >= 0 && seen < 500; i--, seen++) if (test(rows[i]!)) found.push(rows[i]!);
    return found.length ? this.rng.pick(found) : undefined;
  }

  private anyOrder(test: (r: Row) => boolean): Row | undefined {
    return this.any(this.service.store.orders.order, test);
  }

  private linesOf(order: Row): Row[] {
    return (order.order_line_item_ids as number[]).map((id) => this.service.store.order_line_items.get(id)!);
  }

  /** An open order with something left to pack (a line with a variant not packed in full). */
  private packable(r: Row): boolean {
    return (
      (r.status === 'active' || r.status === 'finalized') &&
      r.packed_status !== 'packed' &&
      this.linesOf(r).some((l) => !l.freeform && l._packed.lt(l.quantity))
    );
  }

  /**
   * The tracking of a new shipment (or a new label): a carrier, its number and its tracking page. Numbered in
   * turn rather than drawn, so the activity's random sequence stays what it was for a seed.
   */
  private label(): { tracking_company: string; tracking_number: string; tracking_url: string } {
    const n = ++this.labels;
    const [company, prefix, url] = CARRIERS[n % CARRIERS.length]!;
    const number = `${prefix}${String(n).padStart(10, '0')}`;
    return { tracking_company: company, tracking_number: number, tracking_url: `${url}${number}` };
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
        // Everything not packed yet, packed and shipped at once with its tracking: POST /fulfillments with status
        // fulfilled. Fulfillments packed earlier ship on their own (ship_packed), each with its own tracking.
        const o = this.anyOrder((r) => this.packable(r));
        if (!o) return null;
        s.orders.createFulfillment({ order_id: o.id, status: 'fulfilled', ...this.label() });
        return o.id;
      }
      case 'ship_lines': {
        // A part of an order, as a 3PL ships it: one line (when it is the last one left with 2 or more to ship,
        // half of it, so that the order still ships in parts), packed by the fulfil action with that selection,
        // then PUT to fulfilled with its tracking.
        const o = this.anyOrder((r) => this.packable(r));
        if (!o) return null;
        const open = this.linesOf(o).filter((l) => !l.freeform && l._packed.lt(l.quantity));
        const line = open[0]!;
        const left = D(line.quantity).minus(line._packed);
        const quantity = open.length === 1 && left.gte(2) ? left.div(2).ceil() : left;
        const { fulfillments } = s.orders.orderAction(o.id, 'fulfil', {
          order_line_item_ids: [{ id: line.id, quantity: quantity.toString() }],
        }) as { fulfillments: Row[] };
        s.orders.updateFulfillment(fulfillments[0]!.id, { status: 'fulfilled', ...this.label() });
        return o.id;
      }
      case 'pack_order': {
        // Packed now, shipped later (ship_packed): the pack action, one packed fulfillment of every unpacked line.
        const o = this.anyOrder((r) => this.packable(r));
        if (!o) return null;
        s.orders.orderAction(o.id, 'pack', {});
        return o.id;
      }
      case 'ship_packed': {
        // A packed fulfillment (the activity's, or one packed through the API) shipped: PUT /fulfillments/{id}
        // with status fulfilled and its tracking, as the 3PL guide does (real-service-notes §4).
        const f = this.any(store.fulfillments.order, (r) => {
          const status = r.status === 'packed' && store.orders.get(r.order_id)?.status;
          return status === 'active' || status === 'finalized';
        });
        if (!f) return null;
        s.orders.updateFulfillment(f.id, { status: 'fulfilled', ...this.label() });
        return f.id;
      }
      case 'add_tracking': {
        // Tracking given after the shipment: to a shipment made without it (through the API), or a new label for
        // one that had it. A PUT of the tracking only, of which the service announces nothing (no
        // fulfillment.update event: real-service-notes §2).
        const shipped = (r: Row) => r.status === 'fulfilled';
        const f =
          this.any(store.fulfillments.order, (r) => shipped(r) && r.tracking_number == null) ?? this.any(store.fulfillments.order, shipped);
        if (!f) return null;
        s.orders.updateFulfillment(f.id, this.label());
        return f.id;
      }
      case 'finalize_order': {
        const o = this.anyOrder((r) => r.status === 'active' || r.status === 'draft');
        if (!o) return null;
        s.orders.updateOrder(o.id, { status: 'finalized' });
        return o.id;
      }
      case 'invoice_order': {
        // An invoice of what the order has not had invoiced yet (the invoice action; an active order is finalized).
        const o = this.anyOrder((r) => ['active', 'finalized', 'fulfilled'].includes(r.status) && r.invoice_status !== 'invoiced');
        if (!o) return null;
        s.orders.orderAction(o.id, 'invoice', {});
        return o.id;
      }
      case 'pay_order': {
        const o = this.anyOrder((r) => ['active', 'finalized', 'fulfilled'].includes(r.status) && r.payment_status !== 'paid');
        if (!o) return null;
        s.orders.orderAction(o.id, 'pay', {});
        return o.id;
      }
      case 'return_order': {
        // One unit (or what is left, below one) of a shipped line comes back: the return is created `returning`
        // and received later, in a step of its own (receive_return).
        const o = this.anyOrder((r) => r.fulfillment_status !== 'unshipped' && r.return_status === 'not_returned');
        if (!o) return null;
        const line = this.linesOf(o).find((l) => l._shipped.gt(l._returned));
        if (!line) return null;
        const left = line._shipped.minus(line._returned);
        const ret = s.returns.createReturn({
          order_id: o.id,
          fulfillment_return_line_items: [{ order_line_item_id: line.id, quantity: (left.gt(1) ? D(1) : left).toString() }],
        });
        return ret.id;
      }
      case 'receive_return': {
        // A return (the activity's, or one created through the API) received: its goods are back on hand.
        const ret = this.any(store.fulfillment_returns.order, (r) => r.status === 'returning');
        if (!ret) return null;
        s.returns.updateReturn(ret.id, { status: 'received' });
        return ret.id;
      }
      case 'void_order': {
        // No order event announces a void (real-service-notes §2): only the stock levels whose commitment it ends.
        const o = this.anyOrder((r) => (r.status === 'active' || r.status === 'draft') && r.fulfillment_status === 'unshipped');
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
