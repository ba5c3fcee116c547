// Applies what one read returned to the mirror, in the caller's transaction: records, their sideloaded
// line items, and the channel quantities of every variant the write touched. Shared by the drain
// (delivery-driven reads) and the sweeps, so both write the same way.
import type { Executor } from '../db/index.ts';
import { metrics } from '../metrics.ts';
import { recomputeChannel, type Cause, type ChannelChange } from '../stock/channel.ts';
import type { ChannelRules } from '../stock/rules.ts';
import { readsFor, type Read, type ResourceSpec } from '../catalog/index.ts';
import { markGone, replaceCompositions, upsertChildren, upsertOther, upsertRecords } from '../db/mirror.ts';
import { bundlesWithMakeup, variantsOfOrderLines, variantUpdatedAts } from '../db/mirror-reads.ts';
import type { Mark } from '../db/pending.ts';

export interface Applied {
  applied: number[];
  inserted: number[];
  seen: number[];
  gone: number[];
  changes: ChannelChange[];
  /** Reads this write calls for (delivery-driven only): variants of an order's lines, a fulfillment's order... */
  followUps: Mark[];
}

export interface ApplyContext {
  connectionId: number;
  connectionName: string;
  rules: ChannelRules;
  cause: Cause;
  /** Ask for follow-up reads (the drain does; sweeps read everything anyway). */
  followUps: boolean;
  /** Record id -> the action of the delivery that asked for it (drain): its reads come from the catalogue. */
  events?: Map<number, string>;
}

const ids = (list: any[] | undefined, field: string) => [
  ...new Set(
    (list ?? [])
      .map((r) => r?.[field])
      .filter((v) => v !== null && v !== undefined && /^\d+$/.test(String(v)))
      .map(Number),
  ),
];

/** Writes records (and sideloads) of a mirrored resource; `goneIds`: ids the service no longer has at all. */
export async function applyRecords(
  tx: Executor,
  ctx: ApplyContext,
  spec: ResourceSpec,
  records: any[],
  sideloads: Record<string, any[]> = {},
  goneIds: number[] = [],
): Promise<Applied> {
  const keptWhole = spec.table === 'other_records';
  const res = keptWhole
    ? await upsertOther(tx, spec.name, ctx.connectionId, records)
    : await upsertRecords(tx, spec, ctx.connectionId, records);
  const gone = keptWhole ? [] : await markGone(tx, spec, ctx.connectionId, goneIds);
  const followUps: Mark[] = [];
  let stockTouched: number[] = [];
  if (spec.include?.table && Array.isArray(sideloads[spec.include.key])) {
    // Replace the line items of parents we just wrote; items of unchanged parents are upserted (idempotent).
    await upsertChildren(tx, spec.include, ctx.connectionId, sideloads[spec.include.key]!, records, res.applied);
  }
  if (spec.name === 'variant') {
    stockTouched = [...res.applied, ...gone];
    // A new or changed bundle needs its makeup: read it (coalesced like any other fetch).
    const composite = records.filter((r) => r && r.composite === true && res.applied.includes(Number(r.id))).map((r) => Number(r.id));
    if (composite.length) {
      const have = await bundlesWithMakeup(tx, ctx.connectionId, composite);
      for (const id of composite) {
        if (!have.has(id) || !ctx.followUps)
          followUps.push({ connectionId: ctx.connectionId, resource: 'composition', id, reason: `bundle ${id}` });
      }
    }
  }
  if (ctx.followUps) followUps.push(...(await followUpsFor(tx, ctx, spec, records, new Set(res.applied), sideloads)));
  const changes = stockTouched.length ? await recomputeChannel(tx, ctx.rules, ctx.connectionId, stockTouched, ctx.cause) : [];
  if (records.length) metrics.recordsFetched.inc({ connection: ctx.connectionName, resource: spec.name }, records.length);
  return { ...res, gone, changes, followUps };
}

/** Writes compositions read for the given bundles and recomputes those whose makeup changed. */
export async function applyCompositions(
  tx: Executor,
  ctx: ApplyContext,
  bundleIds: number[],
  rows: any[],
): Promise<{ changed: number[]; changes: ChannelChange[] }> {
  const changed = await replaceCompositions(tx, ctx.connectionId, bundleIds, rows);
  const changes = changed.length ? await recomputeChannel(tx, ctx.rules, ctx.connectionId, changed, ctx.cause) : [];
  if (rows.length) metrics.recordsFetched.inc({ connection: ctx.connectionName, resource: 'composition' }, rows.length);
  return { changed, changes };
}

// Which other records a read implies we should re-read, as the catalogue says for the event that asked for it
// (or, for a record read for another reason, for the resource): stock moves with orders (committed), shipments
// (on hand), receipts, adjustments and transfers, and the service may not announce each with a variant event.
// A record read for a delivery follows its event's reads even when unchanged (the event says something moved);
// any other record only when the read changed it.
async function followUpsFor(
  tx: Executor,
  ctx: ApplyContext,
  spec: ResourceSpec,
  records: any[],
  applied: Set<number>,
  sideloads: Record<string, any[]>,
): Promise<Mark[]> {
  const { connectionId } = ctx;
  const want: Record<Read, any[]> = { record: [], lines: [], variants: [], order: [], purchase_order: [] };
  for (const r of records) {
    const id = Number(r?.id);
    const action = ctx.events?.get(id);
    const reads = action !== undefined ? readsFor(spec.name, action) : applied.has(id) ? readsFor(spec.name, null) : [];
    for (const read of reads) want[read].push(r);
  }
  const out: Mark[] = [];
  const mark = (resource: string, list: number[], reason: string) => {
    for (const id of list) out.push({ connectionId, resource, id, reason });
  };
  mark('order', ids(want.order, 'order_id'), `${spec.name} of order`);
  mark('purchase_order', ids(want.purchase_order, 'purchase_order_id'), `${spec.name} of purchase order`);
  if (!want.variants.length) return out;
  const parents = new Set(want.variants.map((r) => Number(r.id)));
  const child = spec.include;
  const lines = child
    ? (sideloads[child.key] ?? []).filter(
        (l) =>
          parents.has(Number(l?.[child.parentColumn])) ||
          want.variants.some((p) => child.parentIdFields.some((f) => Array.isArray(p?.[f]) && p[f].map(Number).includes(Number(l?.id)))),
      )
    : [];
  let variants = ids(lines, 'variant_id');
  if (spec.variantIdsField)
    variants.push(...want.variants.flatMap((r) => (Array.isArray(r?.[spec.variantIdsField!]) ? r[spec.variantIdsField!] : [])).map(Number));
  // Return lines name the order line, not the variant: the mirrored order line knows it.
  const olis = ids(lines, 'order_line_item_id');
  if (olis.length) variants.push(...(await variantsOfOrderLines(tx, connectionId, olis)));
  variants = [...new Set(variants.filter((v) => Number.isSafeInteger(v) && v > 0))];
  mark('variant', await notReadSince(tx, connectionId, variants, want.variants), `${spec.name} lines`);
  return out;
}

const FRACTION = /T\d\d:\d\d:\d\d[.,]\d/;

/**
 * The variants whose mirrored state may predate the parents' last change: the others need no follow-up read.
 * A variant held with an `updated_at` at or after the parents' newest `updated_at` (both the service's clock)
 * was read after the change that moved its stock, so it shows it; this is the common case of an order whose
 * variants' own stock events were read first. With whole-second timestamps the variant must be a second later
 * (same-second order unknown). A parent or variant without a readable timestamp is read as before, and a service
 * whose variant `updated_at` does not move with stock (documented profile) simply never skips.
 */
async function notReadSince(tx: Executor, connectionId: number, variants: number[], parents: any[]): Promise<number[]> {
  if (!variants.length) return variants;
  const stamps = parents.map((p) => p?.updated_at);
  if (!stamps.length || stamps.some((v) => typeof v !== 'string' || Number.isNaN(Date.parse(v)))) return variants;
  const since = Math.max(...stamps.map((v: string) => Date.parse(v)));
  const fine = stamps.every((v: string) => FRACTION.test(v));
  const shown = new Set<number>();
  for (const r of await variantUpdatedAts(tx, connectionId, variants)) {
    const at = typeof r.updated_at === 'string' ? Date.parse(r.updated_at) : Number.NaN;
    if (Number.isNaN(at)) continue;
    if (at >= since + (fine && FRACTION.test(r.updated_at!) ? 0 : 1000)) shown.add(r.id);
  }
  return shown.size ? variants.filter((v) => !shown.has(v)) : variants;
}
