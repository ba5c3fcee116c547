// Stock availability rules, pure and exact (decimal.js; a quantity is never a float). docs/channels.md.
// Per variant and location: available = on_hand - committed. A channel's quantity of a variant: the sum of
// `available` over the channel's locations, less what is held for channel orders, less the safety buffer,
// never below zero, capped at max_online when the channel says so; untracked (null) when manage_stock is
// false; 0 when the variant is not active. A bundle (composite variant with a known composition): the minimum
// over its components of floor((component's counted available - held) / quantity per bundle), then the same
// holds, buffer and cap. A per-SKU override replaces all that: exclude, zero, a fixed quantity, or its own buffer.
import { Decimal } from 'decimal.js';
import { z } from 'zod';
import { readAfterEvent } from '../catalog/clocks.ts';
import { decimal, timestamp } from '../openapi/registry.ts';

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
  /** Units held back; with bufferPercent, the least the buffer is. */
  safetyBuffer: string;
  /** Percent of what is available held back, rounded up to a whole unit; null or absent: units only. */
  bufferPercent?: string | null;
  /** Whether max_online caps the quantity; absent: it does. */
  capMaxOnline?: boolean;
}

/** A channel's exception for one SKU. */
export type Override =
  | { mode: 'exclude' }
  | { mode: 'zero' }
  | { mode: 'fixed'; quantity: string }
  | { mode: 'buffer'; units: string; percent: string | null };

export interface Component {
  quantity: string;
  variant: VariantStock;
}

/** How a quantity came about, for the record page and the change history. */
export interface Why {
  /** What the counted locations make available (a bundle: how many its components make), before holds. */
  counted: string | null;
  /** Held for channel orders (a bundle: its own holds; its components' are in `components`). */
  held: string;
  /** The safety buffer taken off. */
  buffer: string;
  /** max_online, when it lowered the quantity. */
  capped: string | null;
  override: Override['mode'] | null;
  components?: { variant_id: number; per: string; counted: string; held: string; makes: string }[];
}

/** A Why as the API answers it (the record's and a variant's channel quantities). */
const decimalOrNull = decimal.nullable();
export const whyView = z
  .object({
    counted: decimalOrNull,
    held: decimal,
    buffer: decimal,
    capped: decimalOrNull,
    override: z.enum(['exclude', 'zero', 'fixed', 'buffer']).nullable(),
    components: z
      .array(z.object({ variant_id: z.number().int(), per: decimal, counted: decimal, held: decimal, makes: decimal }))
      .optional()
      .describe("A bundle's: what each component counts and makes."),
    holds: z
      .array(
        z.object({
          hold_id: z.number().int(),
          channel: z.string(),
          channel_order_id: z.string(),
          quantity: decimal,
          variant_id: z.number().int(),
          expires_at: timestamp,
        }),
      )
      .optional()
      .describe('The holds lowering the quantity.'),
  })
  .describe('How the quantity came about: counted stock, held, buffer, cap, override.')
  .meta({ id: 'QuantityWhy' });

export interface ChannelQuantity {
  /** Decimal string, or null when the variant's stock is not tracked. */
  quantity: string | null;
  tracked: boolean;
  backorderable: boolean;
  bundle: boolean;
  /** false: the channel does not list the variant (override exclude; quantity 0). */
  listed: boolean;
  why: Why;
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
export function countedAvailable(v: VariantStock, rules: Pick<ChannelRules, 'locations'>): Decimal {
  let sum = new Decimal(0);
  for (const l of v.locations) {
    if (rules.locations && !rules.locations.has(l.location_id)) continue;
    sum = sum.plus(dec(l.on_hand).minus(dec(l.committed)));
  }
  return sum;
}

/**
 * The safety buffer for `available` (after holds): `units`, or with a percentage the larger of `units` and
 * percent% of what is available, rounded up to a whole unit. Rounding up never favours the channel: it is
 * shown less, never more (10% of 12.5 is 1.25: 2 held back, 10.5 shown).
 */
export function safetyBuffer(available: Decimal, units: string, percent?: string | null): Decimal {
  const floor = dec(units);
  if (percent === null || percent === undefined || percent === '' || !available.greaterThan(0)) return floor;
  const share = available.times(dec(percent)).dividedBy(100).ceil();
  return Decimal.max(floor, share);
}

/**
 * The channel's quantity of a variant. `components` is the bundle's makeup when the variant is composite and
 * its composition is known (a composite variant without one is counted by its own stock levels); `held` the
 * quantity held for channel orders per variant id; `override` the channel's exception for the variant's SKU.
 */
export function channelQuantity(
  v: VariantStock,
  rules: ChannelRules,
  components?: Component[],
  extra: { held?: ReadonlyMap<number, string>; override?: Override | null } = {},
): ChannelQuantity {
  const bundle = v.composite && !!components && components.length > 0;
  const override = extra.override ?? null;
  const heldOf = (id: number) => dec(extra.held?.get(id));
  const why: Why = { counted: null, held: fmt(heldOf(v.id)), buffer: '0', capped: null, override: override?.mode ?? null };
  const shown = (quantity: string | null, more: Partial<ChannelQuantity> = {}): ChannelQuantity => ({
    quantity,
    tracked: quantity !== null,
    backorderable: false,
    bundle,
    listed: true,
    why,
    ...more,
  });
  if (override?.mode === 'exclude') return shown('0', { listed: false });
  if (v.status !== null && v.status !== 'active') return shown('0');
  if (override?.mode === 'zero') return shown('0');
  // A fixed quantity is the operator's figure: no stock, holds, buffer or cap enter it.
  if (override?.mode === 'fixed') return shown(fmt(dec(override.quantity)), { backorderable: v.keep_selling });
  if (!v.manage_stock) return shown(null, { backorderable: v.keep_selling });

  let counted: Decimal;
  let raw: Decimal;
  if (!bundle) {
    counted = countedAvailable(v, rules);
    raw = counted.minus(heldOf(v.id));
  } else {
    let min: Decimal | null = null;
    why.components = [];
    for (const c of components!) {
      const per = dec(c.quantity);
      if (per.lessThanOrEqualTo(0)) continue; // a component needed zero times does not limit the bundle
      const inactive = c.variant.status !== null && c.variant.status !== 'active';
      if (!inactive && !c.variant.manage_stock) continue; // untracked components never run out
      const have = inactive ? new Decimal(0) : countedAvailable(c.variant, rules);
      const held = heldOf(c.variant.id);
      const makes = inactive ? new Decimal(0) : have.minus(held).dividedBy(per).floor();
      why.components.push({ variant_id: c.variant.id, per: fmt(per), counted: fmt(have), held: fmt(held), makes: fmt(makes) });
      if (min === null || makes.lessThan(min)) min = makes;
    }
    // Every component untracked: the bundle is as unlimited as they are.
    if (min === null) return shown(null, { backorderable: v.keep_selling });
    counted = min;
    raw = min.minus(heldOf(v.id));
  }
  why.counted = fmt(counted);
  const own = override?.mode === 'buffer' ? override : null;
  const buffer = safetyBuffer(raw, own ? own.units : rules.safetyBuffer, own ? own.percent : rules.bufferPercent);
  why.buffer = fmt(buffer);
  let q = Decimal.max(raw.minus(buffer), 0);
  if (rules.capMaxOnline !== false && v.max_online !== null && v.max_online !== undefined && v.max_online !== '') {
    const cap = Decimal.max(dec(v.max_online), 0);
    if (q.greaterThan(cap)) {
      q = cap;
      why.capped = fmt(cap);
    }
  }
  return shown(fmt(q), { backorderable: v.keep_selling });
}

/** The rules the settings give (CHANNEL_LOCATIONS, CHANNEL_SAFETY_BUFFER): a new connection's `default` channel. */
export function rulesFrom(setting: { CHANNEL_LOCATIONS: string; CHANNEL_SAFETY_BUFFER: string }): ChannelRules {
  const ids = setting.CHANNEL_LOCATIONS ? setting.CHANNEL_LOCATIONS.split(',').map(Number) : null;
  return { locations: ids?.length ? new Set(ids) : null, safetyBuffer: setting.CHANNEL_SAFETY_BUFFER };
}

/** Order statuses whose stock the service counts as committed (real-service-notes §5: from `active`; a
 * fulfilled order's stock has left on hand instead), and those that release it. */
export const COMMITTING_STATUSES: readonly string[] = ['active', 'finalized', 'fulfilled'];
export const CANCELLED_STATUSES: readonly string[] = ['void', 'deleted', 'archived', 'gone'];

/** What the settle step knows of one held line (src/stock/recompute.ts). Times are epoch ms on the service's clock. */
export interface HeldLine {
  /** The service's order, as the mirror shows it; null when not imported or not mirrored yet. */
  orderStatus: string | null;
  orderUpdatedAt: number | null;
  /** Recorded when the import confirmed an order that commits stock. */
  orderAt: number | null;
  marginMs: number;
  /** The latest service time the mirrored variant is known to show: its last read, or its own updated_at. */
  shownAt: number | null;
}

/**
 * Whether a held line ends now, and why. Cancelled: the mirror shows the order voided or gone. Committed: the
 * order commits stock from `orderAt` (recorded by the import, or the mirrored order's updated_at once it shows
 * a committing status), and the mirrored variant shows a moment surely after that (a second and the clock
 * margin later), so its committed stock includes the order: the hold and the commitment never count together,
 * and the units are never counted by neither.
 */
export function heldLineEnds(l: HeldLine): 'committed' | 'cancelled' | null {
  if (l.orderStatus !== null && CANCELLED_STATUSES.includes(l.orderStatus)) return 'cancelled';
  const from = l.orderAt ?? (l.orderStatus !== null && COMMITTING_STATUSES.includes(l.orderStatus) ? l.orderUpdatedAt : null);
  if (from === null || l.shownAt === null) return null;
  return readAfterEvent(l.shownAt, from, l.marginMs) ? 'committed' : null;
}
