// A variant's record for the console: its stock per location, the quantity the sales channel shows, and
// the history of both with their causes (channel_quantity_changes from the sync engine, sync_log entries
// about the variant for the stock side). Quantities stay decimal strings.
import { changesOf, quantityOf } from '../db/channel.ts';
import type { Db } from '../db/index.ts';
import { stockOfVariant, variantOf } from '../db/mirror-reads.ts';
import { querySyncLog, type LogRow } from './synclog.ts';

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
  channel: { quantity: string | null; tracked: boolean; backorderable: boolean; bundle: boolean; computedAt: Date } | null;
  channelHistory: {
    id: number;
    at: Date;
    beforeQuantity: string | null;
    quantity: string | null;
    tracked: boolean;
    cause: string;
    deliveryId: string | null;
    deliveryRowId: number | null;
    jobId: string | null;
    detail: unknown;
  }[];
  /** Changes of the per-location figures, read from the sync log's before/after snapshots, newest first. */
  stockHistory: StockChange[];
  log: LogRow[];
}

export interface StockChange {
  at: Date;
  logId: number;
  action: string;
  cause: string | null;
  deliveryId: string | null;
  changes: { locationId: number; field: 'on_hand' | 'committed' | 'incoming' | 'available'; before: string | null; after: string | null }[];
}

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

export async function variantRecord(db: Db, connectionId: number, variantId: number, historyLimit = 100): Promise<VariantRecord | null> {
  const v = await variantOf(db, connectionId, variantId);
  if (!v) return null;
  const [stock, channel, changes, byRecord, bySku] = await Promise.all([
    stockOfVariant(db, connectionId, variantId),
    quantityOf(db, connectionId, variantId),
    changesOf(db, connectionId, variantId, historyLimit),
    querySyncLog(db, { connectionId, resource: 'variant', recordId: variantId, limit: historyLimit }),
    v.sku ? querySyncLog(db, { connectionId, sku: v.sku, limit: historyLimit }) : Promise.resolve([]),
  ]);
  const seen = new Set<number>();
  const log = [...byRecord, ...bySku]
    .filter((r) => !seen.has(r.id) && seen.add(r.id))
    .sort((a, b) => b.at.getTime() - a.at.getTime() || b.id - a.id)
    .slice(0, historyLimit);
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
    channel: channel
      ? {
          quantity: channel.quantity,
          tracked: channel.tracked,
          backorderable: channel.backorderable,
          bundle: channel.bundle,
          computedAt: channel.computed_at,
        }
      : null,
    channelHistory: changes.map((c) => ({
      id: c.id,
      at: c.at,
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
