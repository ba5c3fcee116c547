// A variant's record for the console: its stock per location, the quantity the sales channel shows, and
// the history of both with their causes (channel_quantity_changes from the sync engine, sync_log entries
// about the variant for the stock side). Quantities stay decimal strings.
import { sql } from 'kysely';
import { changesOf, quantityOf } from '../db/channel.ts';
import type { Db } from '../db/index.ts';
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

export interface VariantKey {
  connectionId?: number;
  id?: number;
  sku?: string;
}

/** Candidates for a key: several connections may have the same SKU or id. */
export async function findVariants(
  db: Db,
  key: VariantKey,
): Promise<{ connectionId: number; connection: string; id: number; sku: string | null; name: string | null }[]> {
  let q = db
    .selectFrom('variants as v')
    .innerJoin('connections as c', 'c.id', 'v.connection_id')
    .select(['v.connection_id as connectionId', 'c.name as connection', 'v.id', 'v.sku', 'v.name']);
  if (key.connectionId !== undefined) q = q.where('v.connection_id', '=', key.connectionId);
  if (key.id !== undefined) q = q.where('v.id', '=', key.id);
  if (key.sku !== undefined) q = q.where('v.sku', '=', key.sku);
  return q.orderBy('c.name').orderBy('v.id').limit(50).execute();
}

export async function variantRecord(db: Db, connectionId: number, variantId: number, historyLimit = 100): Promise<VariantRecord | null> {
  const v = await db
    .selectFrom('variants as v')
    .innerJoin('connections as c', 'c.id', 'v.connection_id')
    .select([
      'c.name as connection',
      'v.id',
      'v.sku',
      'v.name',
      'v.status',
      'v.product_id',
      'v.composite',
      'v.manage_stock',
      'v.keep_selling',
      'v.max_online',
      'v.updated_at',
      'v.synced_at',
    ])
    .where('v.connection_id', '=', connectionId)
    .where('v.id', '=', variantId)
    .executeTakeFirst();
  if (!v) return null;
  const [stock, channel, changes, byRecord, bySku] = await Promise.all([
    sql<{
      location_id: number;
      location: string | null;
      on_hand: string;
      committed: string;
      incoming: string;
      available: string;
      updated_at: Date | null;
      synced_at: Date;
    }>`
      SELECT s.location_id, coalesce(l.name, l.raw->>'label', l.raw->>'name') AS location, s.on_hand::text, s.committed::text, s.incoming::text,
             (s.on_hand - s.committed)::text AS available, s.updated_at, s.synced_at
        FROM stock_levels s LEFT JOIN locations l ON l.connection_id = s.connection_id AND l.id = s.location_id
       WHERE s.connection_id = ${connectionId} AND s.variant_id = ${variantId}
       ORDER BY s.location_id`.execute(db),
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
    stock: stock.rows.map((s) => ({
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
