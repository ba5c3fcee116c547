// Records as the API renders them: internal fields dropped, derived fields (stock, names of the parent
// product, bundle stock) computed, in the style of the recorded responses (decimal strings, nulls, "-0.0").
import type { Decimal } from 'decimal.js';
import { qty, qty1, ZERO, type Row, type Stock, type Store } from './store.ts';

export function plain(row: Row): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in row) if (k.charCodeAt(0) !== 95 /* _ */) out[k] = row[k];
  return out;
}

/** Per-location stock of a variant; a bundle's is derived from its components. */
export function stockOf(store: Store, v: Row): Map<number, Stock> {
  if (!v.composite) return v._stock as Map<number, Stock>;
  const parts = store.compositions.get(v.id) ?? [];
  const out = new Map<number, Stock>();
  if (!parts.length) return out;
  const locs = new Set<number>();
  for (const p of parts) {
    const c = store.variants.get(p.component_id);
    if (c) for (const id of (c._stock as Map<number, Stock>).keys()) locs.add(id);
  }
  for (const loc of locs) {
    let min: Decimal | null = null;
    for (const p of parts) {
      const c = store.variants.get(p.component_id);
      const s = c ? (c._stock as Map<number, Stock>).get(loc) : undefined;
      const avail = s ? s.soh.minus(s.committed ?? ZERO) : ZERO;
      const n = p.quantity.isZero() ? ZERO : avail.div(p.quantity).floor();
      min = min === null || n.lt(min) ? n : min;
    }
    out.set(loc, { soh: min ?? ZERO, committed: null, incoming: null, bin_location: null, reorder_point: null });
  }
  return out;
}

export function renderVariant(store: Store, v: Row): Record<string, unknown> {
  const product = store.products.get(v.product_id);
  const stock = stockOf(store, v);
  const locations: Record<string, unknown>[] = [];
  const stockLevels: Record<string, string | null> = {};
  const committedLevels: Record<string, string | null> = {};
  const incomingLevels: Record<string, string | null> = {};
  let soh = ZERO,
    committed = ZERO,
    incoming = ZERO;
  for (const [loc, s] of stock) {
    const available = s.soh.minus(s.committed ?? ZERO);
    locations.push({
      location_id: loc,
      stock_on_hand: qty(s.soh),
      committed: qty(s.committed),
      available: qty(available),
      incoming: qty(s.incoming),
      bin_location: s.bin_location,
      reorder_point: s.reorder_point,
    });
    soh = soh.plus(s.soh);
    stockLevels[loc] = qty1(s.soh);
    if (s.committed !== null) {
      committed = committed.plus(s.committed);
      // The real service renders a zero commitment in this map as "-0.0".
      committedLevels[loc] = s.committed.isZero() ? '-0.0' : qty1(s.committed);
    }
    if (s.incoming !== null && !s.incoming.isZero()) {
      incoming = incoming.plus(s.incoming);
      incomingLevels[loc] = qty1(s.incoming);
    }
  }
  const prices = v._prices as Record<string, string | null>;
  const out = plain(v);
  Object.assign(out, {
    product_name: product?.name ?? null,
    product_status: product?.status ?? null,
    product_type: product?.product_type ?? null,
    stock_on_hand: qty(soh),
    committed_stock: qty(committed),
    incoming_stock: qty(incoming),
    available_stock: qty(soh.minus(committed)),
    buy_price: prices.buy ?? null,
    retail_price: prices.retail ?? null,
    wholesale_price: prices.wholesale ?? null,
    variant_prices: Object.entries(prices).map(([price_list_id, value]) => ({ price_list_id, value })),
    prices: { ...prices },
    locations,
    stock_levels: stockLevels,
    committed_stock_levels: committedLevels,
    incoming_stock_levels: incomingLevels,
  });
  return out;
}

export function renderProduct(store: Store, p: Row): Record<string, unknown> {
  const out = plain(p);
  // On hand less committed over its stock variants (tradegecko/smaug: locales/product.en.yml).
  let total = ZERO;
  for (const id of p.variant_ids as number[]) {
    const v = store.variants.get(id);
    if (v && !v.composite) for (const s of (v._stock as Map<number, Stock>).values()) total = total.plus(s.soh).minus(s.committed ?? ZERO);
  }
  out.quantity = qty(total);
  return out;
}

export function renderComposition(store: Store, bundleId: number): Record<string, unknown>[] {
  const bundle = store.variants.get(bundleId);
  return (store.compositions.get(bundleId) ?? []).map((p) => ({
    bundle_id: bundleId,
    bundle_sku: bundle?.sku ?? null,
    component_id: p.component_id,
    component_sku: store.variants.get(p.component_id)?.sku ?? null,
    quantity: qty1(p.quantity),
  }));
}

export function render(store: Store, plural: string, row: Row): Record<string, unknown> {
  if (plural === 'variants') return renderVariant(store, row);
  if (plural === 'products') return renderProduct(store, row);
  if (plural === 'accounts') {
    const out = plain(row);
    out.location_ids = store.locations.order.filter((l) => l.status === 'active').map((l) => l.id);
    out.user_ids = store.users.order.map((u) => u.id);
    return out;
  }
  return plain(row);
}
