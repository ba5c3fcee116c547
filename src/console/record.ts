// A variant's record for the console: its stock per location, the quantity each sales channel shows and why
// (the explanation stored with it: counted, held by which holds, buffer, cap, override), and the history of both
// with their causes (channel_quantity_changes per channel from the sync engine, sync_log entries about the
// variant for the stock side). Quantities stay decimal strings.
import { changesOf, channelsOf, overridesOf, quantitiesOf } from '../db/channels.ts';
import type { Db } from '../db/index.ts';
import { locationNames, stockOfVariant, variantOf } from '../db/mirror-reads.ts';
import { whyView } from '../stock/rules.ts';
import { logEntry, querySyncLog, type LogRow } from './synclog.ts';
import { z } from 'zod';
import { decimal, timestamp } from '../openapi/registry.ts';

export interface VariantRecord {
  connection: { id: number; name: string };
  variant: {
    id: number;
    sku: string | null;
    name: string | null;
    status: string | null;
    productId: number | null;
    composite: boolean;
    manageStock: boolean;
    keepSelling: boolean;
    maxOnline: string | null;
    updatedAt: Date | null;
    syncedAt: Date;
  };
  stock: {
    locationId: number;
    location: string | null;
    onHand: string;
    committed: string;
    incoming: string;
    available: string;
    updatedAt: Date | null;
    syncedAt: Date;
  }[];
  /** The quantity of the connection's `default` channel (else its oldest): the figure where one quantity is shown. */
  channel: { quantity: string | null; tracked: boolean; backorderable: boolean; bundle: boolean; computedAt: Date } | null;
  /** The quantity in each channel of the connection, oldest channel first, with its rules and why. */
  channels: ChannelQuantityView[];
  /** The channel the history is narrowed to (null: every channel). */
  historyChannel: string | null;
  /** Changes of the quantity, newest first, each naming its channel. */
  channelHistory: {
    id: number;
    at: Date;
    channel: string;
    beforeQuantity: string | null;
    quantity: string | null;
    tracked: boolean;
    cause: string;
    deliveryId: string | null;
    deliveryRowId: number | null;
    jobId: string | null;
    detail: Record<string, unknown> | null;
  }[];
  /** Changes of the per-location figures, read from the sync log's before/after snapshots, newest first. */
  stockHistory: StockChange[];
  log: LogRow[];
}

/** A hold lowering a quantity, as the stored explanation names it (a bundle's: its components' holds too). */
export interface HoldRefView {
  hold_id: number;
  channel: string;
  channel_order_id: string;
  quantity: string;
  variant_id: number;
  expires_at: string | Date;
}

/** How a channel's quantity came about (channel_quantities.stock.why, src/stock/rules.ts). */
export interface WhyView {
  counted: string | null;
  held: string;
  buffer: string;
  capped: string | null;
  override: 'exclude' | 'zero' | 'fixed' | 'buffer' | null;
  components?: { variant_id: number; per: string; counted: string; held: string; makes: string }[];
  holds?: HoldRefView[];
}

export interface ChannelQuantityView {
  channelId: number;
  channel: string;
  /** The channel's rules now: locations counted (names; null: all), buffer, whether max_online caps. */
  rules: { locations: { id: number; name: string }[] | null; bufferUnits: string; bufferPercent: string | null; capMaxOnline: boolean };
  /** The channel's override of this SKU, when it has one. */
  override: { mode: string; quantity: string | null; bufferUnits: string | null; bufferPercent: string | null } | null;
  /** Null fields: not computed yet in this channel. */
  quantity: string | null;
  tracked: boolean | null;
  backorderable: boolean | null;
  listed: boolean | null;
  bundle: boolean | null;
  why: WhyView | null;
  computedAt: Date | null;
}

export interface StockChange {
  at: Date;
  logId: number;
  action: string;
  cause: string | null;
  deliveryId: string | null;
  changes: { locationId: number; field: 'on_hand' | 'committed' | 'incoming' | 'available'; before: string | null; after: string | null }[];
}

// The record as the API answers it (GET /api/variants/:connection/:id), field for field as the interfaces above.
const decimalOrNull = decimal.nullable();

export const variantRecordSchema = z.object({
  connection: z.object({ id: z.number().int(), name: z.string() }),
  variant: z.object({
    id: z.number().int(),
    sku: z.string().nullable(),
    name: z.string().nullable(),
    status: z.string().nullable(),
    productId: z.number().int().nullable(),
    composite: z.boolean(),
    manageStock: z.boolean(),
    keepSelling: z.boolean(),
    maxOnline: decimalOrNull,
    updatedAt: timestamp.nullable(),
    syncedAt: timestamp,
  }),
  stock: z.array(
    z.object({
      locationId: z.number().int(),
      location: z.string().nullable(),
      onHand: decimal,
      committed: decimal,
      incoming: decimal,
      available: decimal,
      updatedAt: timestamp.nullable(),
      syncedAt: timestamp,
    }),
  ),
  channel: z
    .object({ quantity: decimalOrNull, tracked: z.boolean(), backorderable: z.boolean(), bundle: z.boolean(), computedAt: timestamp })
    .nullable(),
  channels: z.array(
    z.object({
      channelId: z.number().int(),
      channel: z.string(),
      rules: z.object({
        locations: z.array(z.object({ id: z.number().int(), name: z.string() })).nullable(),
        bufferUnits: decimal,
        bufferPercent: decimalOrNull,
        capMaxOnline: z.boolean(),
      }),
      override: z
        .object({ mode: z.string(), quantity: decimalOrNull, bufferUnits: decimalOrNull, bufferPercent: decimalOrNull })
        .nullable(),
      quantity: decimalOrNull,
      tracked: z.boolean().nullable(),
      backorderable: z.boolean().nullable(),
      listed: z.boolean().nullable(),
      bundle: z.boolean().nullable(),
      why: whyView.nullable(),
      computedAt: timestamp.nullable(),
    }),
  ),
  historyChannel: z.string().nullable(),
  channelHistory: z.array(
    z.object({
      id: z.number().int(),
      at: timestamp,
      channel: z.string(),
      beforeQuantity: decimalOrNull,
      quantity: decimalOrNull,
      tracked: z.boolean(),
      cause: z.string(),
      deliveryId: z.string().nullable(),
      deliveryRowId: z.number().int().nullable(),
      jobId: z.string().nullable(),
      detail: z.record(z.string(), z.unknown()).nullable().describe("The change's particulars."),
    }),
  ),
  stockHistory: z.array(
    z.object({
      at: timestamp,
      logId: z.number().int(),
      action: z.string(),
      cause: z.string().nullable(),
      deliveryId: z.string().nullable(),
      changes: z.array(
        z.object({
          locationId: z.number().int(),
          field: z.enum(['on_hand', 'committed', 'incoming', 'available']),
          before: z.string().nullable(),
          after: z.string().nullable(),
        }),
      ),
    }),
  ),
  log: z.array(logEntry),
});

type Snapshot = {
  locations?: { location_id?: unknown; on_hand?: unknown; committed?: unknown; incoming?: unknown; available?: unknown }[];
};

/** A stock snapshot as the sync engine logs it; tolerates one level of JSON-in-a-string. */
function snapshot(v: unknown): Snapshot | null {
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return null;
    }
  }
  return v && typeof v === 'object' && Array.isArray((v as Snapshot).locations) ? (v as Snapshot) : null;
}

const fields = ['on_hand', 'committed', 'incoming', 'available'] as const;

/** Per-location differences between the before and after snapshots of log entries. */
export function stockChanges(log: LogRow[]): StockChange[] {
  const out: StockChange[] = [];
  for (const r of log) {
    const after = snapshot(r.after);
    if (!after) continue;
    const before = snapshot(r.before);
    const byLocation = (s: Snapshot | null) => new Map((s?.locations ?? []).map((l) => [Number(l.location_id), l]));
    const b = byLocation(before),
      a = byLocation(after);
    const changes: StockChange['changes'] = [];
    for (const id of [...new Set([...b.keys(), ...a.keys()])].sort((x, y) => x - y)) {
      for (const f of fields) {
        const was = b.get(id)?.[f],
          now = a.get(id)?.[f];
        const w = was === undefined || was === null ? null : String(was),
          n = now === undefined || now === null ? null : String(now);
        if (w !== n) changes.push({ locationId: id, field: f, before: w, after: n });
      }
    }
    if (!changes.length) continue;
    const detail = (r.detail ?? {}) as { cause?: unknown };
    out.push({
      at: r.at,
      logId: r.id,
      action: r.action,
      cause: typeof detail.cause === 'string' ? detail.cause : null,
      deliveryId: r.delivery_id,
      changes,
    });
  }
  return out;
}

/** Decimal text as the rest of the console shows it ("2.000" -> "2"). */
const num = (v: string | null) => (v === null ? null : v.includes('.') ? v.replace(/\.?0+$/, '') : v);

export async function variantRecord(
  db: Db,
  connectionId: number,
  variantId: number,
  opts: { historyLimit?: number; historyChannel?: string } = {},
): Promise<VariantRecord | null> {
  const historyLimit = opts.historyLimit ?? 100;
  const v = await variantOf(db, connectionId, variantId);
  if (!v) return null;
  const [stock, quantities, channels, locations] = await Promise.all([
    stockOfVariant(db, connectionId, variantId),
    quantitiesOf(db, connectionId, variantId),
    channelsOf(db, connectionId),
    locationNames(db, connectionId),
  ]);
  const historyChannel = opts.historyChannel ? channels.find((c) => c.name === opts.historyChannel) : undefined;
  const [overrides, changes, byRecord, bySku] = await Promise.all([
    v.sku
      ? overridesOf(
          db,
          channels.map((c) => c.id),
          [v.sku],
        )
      : Promise.resolve([]),
    changesOf(db, connectionId, variantId, historyLimit, historyChannel ? historyChannel.id : undefined),
    querySyncLog(db, { connectionId, resource: 'variant', recordId: variantId, limit: historyLimit }),
    v.sku ? querySyncLog(db, { connectionId, sku: v.sku, limit: historyLimit }) : Promise.resolve([]),
  ]);
  const seen = new Set<number>();
  const log = [...byRecord, ...bySku]
    .filter((r) => !seen.has(r.id) && seen.add(r.id))
    .sort((a, b) => b.at.getTime() - a.at.getTime() || b.id - a.id)
    .slice(0, historyLimit);
  // The one quantity of pages that show a single figure: the `default` channel's, else the oldest's.
  const main = quantities.find((q) => q.channel === 'default') ?? quantities[0];
  return {
    connection: { id: connectionId, name: v.connection },
    variant: {
      id: v.id,
      sku: v.sku,
      name: v.name,
      status: v.status,
      productId: v.product_id,
      composite: v.composite,
      manageStock: v.manage_stock,
      keepSelling: v.keep_selling,
      maxOnline: v.max_online,
      updatedAt: v.updated_at as Date | null,
      syncedAt: v.synced_at as Date,
    },
    stock: stock.map((s) => ({
      locationId: s.location_id,
      location: s.location,
      onHand: s.on_hand,
      committed: s.committed,
      incoming: s.incoming,
      available: s.available,
      updatedAt: s.updated_at,
      syncedAt: s.synced_at,
    })),
    channel: main
      ? {
          quantity: main.quantity,
          tracked: main.tracked,
          backorderable: main.backorderable,
          bundle: main.bundle,
          computedAt: main.computed_at,
        }
      : null,
    channels: channels.map((c) => {
      const q = quantities.find((x) => x.channel_id === c.id);
      const o = overrides.find((x) => x.channel_id === c.id);
      const why = (q?.stock as { why?: WhyView } | null)?.why ?? null;
      return {
        channelId: c.id,
        channel: c.name,
        rules: {
          locations: c.location_ids?.length
            ? c.location_ids.map((id) => ({ id: Number(id), name: locations.get(Number(id)) ?? `location ${id}` }))
            : null,
          bufferUnits: num(c.buffer_units) ?? '0',
          bufferPercent: num(c.buffer_percent),
          capMaxOnline: c.cap_max_online,
        },
        override: o
          ? { mode: o.mode, quantity: num(o.quantity), bufferUnits: num(o.buffer_units), bufferPercent: num(o.buffer_percent) }
          : null,
        quantity: q?.quantity ?? null,
        tracked: q?.tracked ?? null,
        backorderable: q?.backorderable ?? null,
        listed: q?.listed ?? null,
        bundle: q?.bundle ?? null,
        why,
        computedAt: q?.computed_at ?? null,
      };
    }),
    historyChannel: historyChannel?.name ?? null,
    channelHistory: changes.map((c) => ({
      id: c.id,
      at: c.at,
      channel: c.channel,
      beforeQuantity: c.before_quantity,
      quantity: c.quantity,
      tracked: c.tracked,
      cause: c.cause,
      deliveryId: c.delivery_id,
      deliveryRowId: c.delivery_row_id,
      jobId: c.job_id,
      detail: c.detail,
    })),
    stockHistory: stockChanges(log),
    log,
  };
}
