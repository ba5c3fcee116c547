// Stock availability rules, pure and exact (decimal.js; a quantity is never a float).
// Per variant and location: available = on_hand - committed. The channel quantity of a variant: the sum
// of `available` over the locations that count, less the safety buffer, never below zero, capped at
// max_online; untracked (null) when manage_stock is false; 0 when the variant is not active. A bundle
// (composite variant with a known composition): the minimum over its components of
// floor(component's counted available / quantity per bundle), then the same buffer and cap.
import { Decimal } from 'decimal.js';

export interface LocationStock {
  location_id: number;
  on_hand: string;
  committed: string;
  incoming: string;
}

export interface LocationAvailability extends LocationStock {
  available: string;
}

export interface VariantStock {
  id: number;
  sku: string | null;
  status: string | null;
  composite: boolean;
  manage_stock: boolean;
  keep_selling: boolean;
  max_online: string | null;
  locations: LocationStock[];
}

export interface ChannelRules {
  /** Locations whose stock counts; null: all. */
  locations: ReadonlySet<number> | null;
  safetyBuffer: string;
}

export interface Component {
  quantity: string;
  variant: VariantStock;
}

export interface ChannelQuantity {
  /** Decimal string, or null when the variant's stock is not tracked. */
  quantity: string | null;
  tracked: boolean;
  backorderable: boolean;
  bundle: boolean;
}

/** A quantity from the mirror or the service: null, '' and garbage-free decimal strings; '-0.0' is 0. */
export function dec(v: string | number | null | undefined): Decimal {
  if (v === null || v === undefined || v === '') return new Decimal(0);
  const d = new Decimal(v);
  return d.isZero() ? new Decimal(0) : d;
}

/** Canonical decimal string: no exponent, no trailing zeros, no negative zero. */
export function fmt(d: Decimal): string {
  return d.isZero() ? '0' : d.toFixed();
}

export function withAvailable(l: LocationStock): LocationAvailability {
  return {
    location_id: l.location_id,
    on_hand: fmt(dec(l.on_hand)),
    committed: fmt(dec(l.committed)),
    incoming: fmt(dec(l.incoming)),
    available: fmt(dec(l.on_hand).minus(dec(l.committed))),
  };
}

/** Sum of available over the locations that count. */
export function countedAvailable(v: VariantStock, rules: ChannelRules): Decimal {
  let sum = new Decimal(0);
  for (const l of v.locations) {
    if (rules.locations && !rules.locations.has(l.location_id)) continue;
    sum = sum.plus(dec(l.on_hand).minus(dec(l.committed)));
  }
  return sum;
}

function finish(raw: Decimal, v: VariantStock, rules: ChannelRules): Decimal {
  let q = raw.minus(dec(rules.safetyBuffer));
  if (q.isNeg()) q = new Decimal(0);
  if (v.max_online !== null && v.max_online !== undefined && v.max_online !== '') {
    const cap = dec(v.max_online);
    if (q.greaterThan(cap)) q = cap.isNeg() ? new Decimal(0) : cap;
  }
  return q;
}

/**
 * The channel quantity of a variant. `components` is the bundle's makeup when the variant is composite and
 * its composition is known; a composite variant without one is counted by its own stock levels.
 */
export function channelQuantity(v: VariantStock, rules: ChannelRules, components?: Component[]): ChannelQuantity {
  const bundle = v.composite && !!components && components.length > 0;
  const backorderable = v.keep_selling;
  if (v.status !== null && v.status !== 'active') return { quantity: '0', tracked: true, backorderable: false, bundle };
  if (!v.manage_stock) return { quantity: null, tracked: false, backorderable, bundle };
  if (!bundle) return { quantity: fmt(finish(countedAvailable(v, rules), v, rules)), tracked: true, backorderable, bundle };

  let min: Decimal | null = null;
  for (const c of components!) {
    const per = dec(c.quantity);
    if (per.lessThanOrEqualTo(0)) continue; // a component needed zero times does not limit the bundle
    if (c.variant.status !== null && c.variant.status !== 'active') {
      min = new Decimal(0);
      break;
    }
    if (!c.variant.manage_stock) continue; // untracked components never run out
    const can = countedAvailable(c.variant, rules).dividedBy(per).floor();
    if (min === null || can.lessThan(min)) min = can;
  }
  // Every component untracked: the bundle is as unlimited as they are.
  if (min === null) return { quantity: null, tracked: false, backorderable, bundle };
  return { quantity: fmt(finish(min, v, rules)), tracked: true, backorderable, bundle };
}

/** Rules from settings and an optional per-connection row. */
export function rulesFrom(
  setting: { CHANNEL_LOCATIONS: string; CHANNEL_SAFETY_BUFFER: string },
  row?: { location_ids: number[] | null; safety_buffer: string | null } | null,
): ChannelRules {
  const ids = row?.location_ids ?? (setting.CHANNEL_LOCATIONS ? setting.CHANNEL_LOCATIONS.split(',').map(Number) : null);
  return {
    locations: ids?.length ? new Set(ids.map(Number)) : null,
    safetyBuffer: row?.safety_buffer ?? setting.CHANNEL_SAFETY_BUFFER,
  };
}
