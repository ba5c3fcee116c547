// Stock levels: per-variant, per-location on hand, committed and incoming; bundles move their components;
// documents (orders, purchase orders) hold commitments and incoming stock that `settle` keeps in line.
import type { Decimal } from 'decimal.js';
import { D, ZERO, type Row, type Stock } from './store.ts';
import { Part } from './core.ts';

export class Inventory extends Part {
  private stockAt(v: Row, loc: number): Stock {
    const map = v._stock as Map<number, Stock>;
    let s = map.get(loc);
    if (!s) {
      s = { soh: ZERO, committed: null, incoming: null, bin_location: null, reorder_point: null };
      map.set(loc, s);
    }
    return s;
  }

  /** Physical variants (and amounts) that `quantity` of variant `v` moves: a bundle moves its components. */
  private expand(variantId: number, quantity: Decimal, out: Map<number, Decimal>): void {
    const v = this.store.variants.get(variantId);
    if (!v) return;
    if (v.composite) {
      for (const p of this.store.compositions.get(v.id) ?? []) this.expand(p.component_id, quantity.times(p.quantity), out);
      return;
    }
    if (v.manage_stock === false) return;
    out.set(v.id, (out.get(v.id) ?? ZERO).plus(quantity));
  }

  stockChanged(variantId: number): void {
    const v = this.store.variants.get(variantId);
    if (!v) return;
    this.touch(v);
    // The product's `quantity` changes too, but its updated_at does not (a recorded response shows it:
    // tradegecko/gecko: spec/vcr_cassettes/products_sideloaded.yml).
    this.fire('variant.stock_level_update', variantId);
    for (const b of this.store.bundlesOf.get(variantId) ?? []) {
      const bundle = this.store.variants.get(b);
      if (bundle) {
        this.touch(bundle);
        this.fire('variant.stock_level_update', b);
      }
    }
  }

  private moveStock(field: 'soh' | 'committed' | 'incoming', variantId: number, loc: number, delta: Decimal): void {
    if (delta.isZero()) return;
    const v = this.store.variants.get(variantId)!;
    const s = this.stockAt(v, loc);
    s[field] = (s[field] ?? ZERO).plus(delta);
    this.core.recordMove(variantId, loc, s);
    this.stockChanged(variantId);
  }

  /** Moves on hand by `quantity` of variant (bundles: components) at a location. */
  moveOnHand(variantId: number, loc: number, quantity: Decimal): void {
    const moves = new Map<number, Decimal>();
    this.expand(variantId, quantity, moves);
    for (const [id, q] of moves) this.moveStock('soh', id, loc, q);
  }

  /** Adds `quantity` of a variant (a bundle: its components) at a location to a document's holdings. */
  hold(holdings: Map<string, Decimal>, variantId: number, quantity: Decimal, loc: number): void {
    const moves = new Map<number, Decimal>();
    this.expand(variantId, quantity, moves);
    for (const [vid, q] of moves) {
      const key = `${vid}:${loc}`;
      holdings.set(key, (holdings.get(key) ?? ZERO).plus(q));
    }
  }

  /** Moves `field` stock by the difference between what a document held and now holds. */
  settle(field: 'committed' | 'incoming', had: Map<string, Decimal>, want: Map<string, Decimal>): void {
    for (const key of new Set([...had.keys(), ...want.keys()])) {
      const delta = (want.get(key) ?? ZERO).minus(had.get(key) ?? ZERO);
      const [vid, loc] = key.split(':').map(Number) as [number, number];
      this.moveStock(field, vid, loc, delta);
    }
  }

  /** Moving average cost after `quantity` came in at `price` (documented: adjustments and receipts move it). */
  receiveCost(variantId: number, quantity: Decimal, price: Decimal): void {
    const v = this.store.variants.get(variantId);
    if (!v || v.composite) return;
    let onHand = ZERO;
    for (const st of (v._stock as Map<number, Stock>).values()) onHand = onHand.plus(st.soh);
    const mac = v.moving_average_cost == null ? null : D(v.moving_average_cost);
    const next = mac === null || onHand.lte(0) ? price : onHand.times(mac).plus(quantity.times(price)).div(onHand.plus(quantity));
    v.moving_average_cost = next.toDecimalPlaces(4).toString();
    this.touch(v);
  }
}
