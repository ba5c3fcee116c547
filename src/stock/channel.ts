// Keeps channel_quantities in step with the mirror: recomputes the variants a write touched (and every
// bundle that uses one of them as a component), records each change of a channel quantity with its cause
// in channel_quantity_changes, and writes stock changes to the sync log.
import type { Db, Executor } from '../db/index.ts';
import {
  appliedRules,
  getChannelRules,
  recordChanges,
  saveAppliedRules,
  saveQuantities,
  storedQuantities,
  type ChannelChange,
} from '../db/channel.ts';
import { bundlesOf, compositionsOf, stockLevelRows, variantIdsOf, variantStockRows } from '../db/mirror-reads.ts';
import { logSync } from '../db/synclog.ts';
import {
  channelQuantity,
  dec,
  fmt,
  rulesFrom,
  withAvailable,
  type ChannelRules,
  type Component,
  type LocationAvailability,
  type VariantStock,
} from './rules.ts';
import type { Config } from '../config.ts';

export type { ChannelChange };

/** Why a recomputation happened, recorded with every change it makes. */
export interface Cause {
  kind: 'delivery' | 'sweep' | 'full-sweep' | 'fetch' | 'cli' | 'rules';
  jobId?: string | null;
  /** Deliveries behind the fetch, newest last. */
  deliveries?: { rowId: number; deliveryId: string | null }[];
  /** Per variant: the deliveries that named it (overrides `deliveries` for that variant). */
  deliveriesByVariant?: Map<number, { rowId: number; deliveryId: string | null }[]>;
}

interface Snapshot {
  locations: LocationAvailability[];
  channel_quantity: string | null;
}

/** JSON with sorted keys: jsonb hands objects back in its own key order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as any)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v ?? null);
}

export async function channelRules(
  db: Executor,
  config: Pick<Config, 'CHANNEL_LOCATIONS' | 'CHANNEL_SAFETY_BUFFER'>,
  connectionId: number,
): Promise<ChannelRules> {
  const row = await getChannelRules(db, connectionId);
  return rulesFrom(config, row ? { location_ids: row.location_ids?.map(Number) ?? null, safety_buffer: row.safety_buffer } : null);
}

async function loadVariants(db: Executor, connectionId: number, ids: number[]): Promise<Map<number, VariantStock>> {
  const out = new Map<number, VariantStock>();
  if (!ids.length) return out;
  for (const v of await variantStockRows(db, connectionId, ids)) out.set(Number(v.id), { ...v, id: Number(v.id), locations: [] });
  for (const l of await stockLevelRows(db, connectionId, ids))
    out.get(Number(l.variant_id))?.locations.push({ ...l, location_id: Number(l.location_id) });
  return out;
}

/**
 * Recomputes channel quantities for the given variants and the bundles built from them. Runs inside the
 * caller's transaction so the change commits with the mirror write that caused it. Returns the changes.
 */
export async function recomputeChannel(
  db: Executor,
  rules: ChannelRules,
  connectionId: number,
  variantIds: number[],
  cause: Cause,
): Promise<ChannelChange[]> {
  const ids = [...new Set(variantIds.map(Number))];
  if (!ids.length) return [];
  const targets = [...new Set([...ids, ...(await bundlesOf(db, connectionId, ids))])];
  const comps = await compositionsOf(db, connectionId, targets);
  const variants = await loadVariants(db, connectionId, [...new Set([...targets, ...comps.map((c) => Number(c.component_id))])]);
  const makeup = new Map<number, { quantity: string; component_id: number }[]>();
  for (const c of comps) {
    const list = makeup.get(Number(c.bundle_id)) ?? [];
    list.push({ quantity: c.quantity, component_id: Number(c.component_id) });
    makeup.set(Number(c.bundle_id), list);
  }
  const before = new Map((await storedQuantities(db, connectionId, targets)).map((r) => [Number(r.variant_id), r]));

  const rows: any[] = [];
  const changes: any[] = [];
  const logs: Parameters<typeof logSync>[1] = [];
  for (const id of targets) {
    const v = variants.get(id);
    if (!v) continue; // not mirrored (yet): nothing to show
    let components: Component[] | undefined;
    if (v.composite && makeup.has(id)) {
      components = makeup.get(id)!.map((c) => ({
        quantity: c.quantity,
        // A component we have not mirrored yet counts as out of stock, never as plenty.
        variant: variants.get(c.component_id) ?? {
          id: c.component_id,
          sku: null,
          status: 'active',
          composite: false,
          manage_stock: true,
          keep_selling: false,
          max_online: null,
          locations: [],
        },
      }));
    }
    const q = channelQuantity(v, rules, components);
    const snapshot: Snapshot = { locations: v.locations.map(withAvailable), channel_quantity: q.quantity };
    const prev = before.get(id);
    const quantityChanged = !prev || prev.quantity !== q.quantity || prev.tracked !== q.tracked || prev.backorderable !== q.backorderable;
    const stockChanged = !prev || canonical(prev.stock) !== canonical(snapshot);
    if (!quantityChanged && !stockChanged) continue;
    const dels = cause.deliveriesByVariant?.get(id) ?? cause.deliveries ?? [];
    const last = dels[dels.length - 1];
    rows.push({
      connection_id: connectionId,
      variant_id: id,
      sku: v.sku,
      status: v.status,
      quantity: q.quantity,
      tracked: q.tracked,
      backorderable: q.backorderable,
      bundle: q.bundle,
      stock: snapshot,
    });
    if (quantityChanged) {
      changes.push({
        connection_id: connectionId,
        variant_id: id,
        sku: v.sku,
        before_quantity: prev ? prev.quantity : null,
        before_tracked: prev ? prev.tracked : null,
        quantity: q.quantity,
        tracked: q.tracked,
        backorderable: q.backorderable,
        cause: cause.kind,
        delivery_id: last?.deliveryId ?? null,
        delivery_row_id: last?.rowId ?? null,
        job_id: cause.jobId ?? null,
        detail: JSON.stringify({
          deliveries: dels,
          before: prev?.stock ?? null,
          after: snapshot,
          components: components?.map((c) => ({ variant_id: c.variant.id, sku: c.variant.sku, quantity: c.quantity })),
        }),
      });
    }
    logs.push({
      connectionId,
      resource: 'variant',
      recordId: id,
      sku: v.sku,
      action: quantityChanged ? 'channel-quantity' : 'stock',
      before: prev?.stock ?? null,
      after: snapshot,
      jobId: cause.jobId ?? null,
      deliveryId: last?.deliveryId ?? null,
      detail: {
        cause: cause.kind,
        deliveries: dels.map((d) => d.deliveryId),
        tracked: q.tracked,
        backorderable: q.backorderable,
        bundle: q.bundle,
      },
    });
  }
  if (!rows.length) return [];
  const written = await recordChanges(db, changes);
  const lastChange = new Map(written.map((c) => [Number(c.variant_id), Number(c.id)]));
  for (const r of rows) r.last_change_id = lastChange.get(r.variant_id) ?? null;
  await saveQuantities(db, rows);
  await logSync(db, logs);
  return written;
}

/** Recomputes every mirrored variant of a connection (after the rules change); returns the number of changes. */
export async function recomputeAll(
  db: Db,
  rules: ChannelRules,
  connectionId: number,
  cause: Cause,
  onChanges?: (changes: ChannelChange[]) => Promise<void>,
): Promise<number> {
  const ids = await variantIdsOf(db, connectionId);
  let n = 0;
  for (let i = 0; i < ids.length; i += 1000) {
    const changes = await db.transaction().execute((tx) => recomputeChannel(tx, rules, connectionId, ids.slice(i, i + 1000), cause));
    n += changes.length;
    if (changes.length && onChanges) await onChanges(changes);
  }
  return n;
}

export function rulesFingerprint(r: ChannelRules): string {
  return JSON.stringify({ locations: r.locations ? [...r.locations].sort((a, b) => a - b) : null, buffer: fmt(dec(r.safetyBuffer)) });
}

/**
 * When the rules in force (settings or the connection's channel_rules row) differ from those the stored
 * quantities were computed with, recomputes them all (cause 'rules'). Returns the number of changes, or
 * null when the rules had not changed.
 */
export async function applyRulesIfChanged(
  db: Db,
  config: Pick<Config, 'CHANNEL_LOCATIONS' | 'CHANNEL_SAFETY_BUFFER'>,
  connectionId: number,
  onChanges?: (changes: ChannelChange[]) => Promise<void>,
): Promise<number | null> {
  const rules = await channelRules(db, config, connectionId);
  const fingerprint = rulesFingerprint(rules);
  if ((await appliedRules(db, connectionId)) === fingerprint) return null;
  const n = await recomputeAll(db, rules, connectionId, { kind: 'rules' }, onChanges);
  await saveAppliedRules(db, connectionId, fingerprint);
  return n;
}
