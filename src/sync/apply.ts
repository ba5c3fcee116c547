// Applies what one read returned to the mirror, in the caller's transaction: records, their sideloaded
// line items, and the channel quantities of every variant the write touched. Shared by the drain
// (delivery-driven reads) and the sweeps, so both write the same way.
import type { Executor } from '../db/index.ts';
import { metrics } from '../metrics.ts';
import { recomputeChannel, settleHolds, type Cause, type NewChange } from '../stock/recompute.ts';
import type { ChannelRules } from '../stock/rules.ts';
import { CHANNEL_ORDER, readsFor, type Read, type ResourceSpec } from '../catalog/index.ts';
import { markGone, replaceCompositions, upsertChildren, upsertOther, upsertRecords, type Ties } from '../db/mirror.ts';
import { bundlesWithMakeup, variantsOfOrderLines, variantUpdatedAts } from '../db/mirror-reads.ts';
import type { Mark } from '../db/pending.ts';
import { watchedOrdersWithVariants } from '../db/channel-order-events.ts';
import { recordOrderEvents } from '../channels/order-events.ts';
import { readAfterEvent } from '../catalog/clocks.ts';

export interface Applied {
  applied: number[];
  inserted: number[];
  seen: number[];
  /** With `ties: 'leave'`: records that differ at the same updated_at, not written (see ApplyContext.ties). */
  tied: number[];
  gone: number[];
  changes: NewChange[];
  /** Channels that got order events from this write (src/channels/order-events.ts): their senders are woken. */
  orderEvents: number[];
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
  /**
   * A record that differs from its row at the same updated_at: written ('write', drains), or left for a drain to
   * read ('leave', sweeps: a page read before a drain's newer read was written would undo it). Default 'write'.
   */
  ties?: Ties;
  /** Record id -> the action of the delivery that asked for it (drain): its reads come from the catalogue. */
  events?: Map<number, string>;
  /** Record id -> the newest event time (epoch ms) of the deliveries that asked for it, when deliveries alone did. */
  newestEvent?: Map<number, number>;
  /** How far apart the service's two clocks may be, ms (src/catalog/clocks.ts); 0 when no event is compared. */
  clockMarginMs?: number;
}

const ids = (list: any[] | undefined, field: string) => [
  ...new Set(
    (list ?? [])
      .map((r) => r?.[field])
      .filter((v) => v !== null && v !== undefined && /^\d+$/.test(String(v)))
      .map(Number),
  ),
];

// The orders a write of these resources may have moved on (channel order events).
const ORDER_OF: Record<string, (records: any[]) => number[]> = {
  order: (records) => ids(records, 'id'),
  fulfillment: (records) => ids(records, 'order_id'),
  fulfillment_return: (records) => ids(records, 'order_id'),
  invoice: (records) => ids(records, 'order_id'),
};

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
    : await upsertRecords(tx, spec, ctx.connectionId, records, { ties: ctx.ties, readAsOf: ctx.cause.readAsOf, readBy: ctx.cause.readBy });
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
  // Stock held for channel orders ends in the write whose read shows the order committed or cancelled (docs/channels.md):
  // a read of a variant (even one that changed nothing) or of an order.
  if (spec.name === 'variant' || spec.name === 'order') {
    const read = records.map((r) => Number(r?.id)).filter(Number.isSafeInteger);
    const by = spec.name === 'variant' ? { variantIds: read } : { orderIds: read };
    if (read.length) changes.push(...(await settleHolds(tx, ctx.connectionId, by, ctx.cause)));
  }
  // An order gone from the service (deleted) is told as voided.
  const orderIds = [...(ORDER_OF[spec.name]?.(records) ?? []), ...(spec.name === 'order' ? gone : [])];
  const orderEvents = orderIds.length ? await recordOrderEvents(tx, ctx.connectionId, orderIds) : [];
  // A void releases committed stock and no webhook tells of it: a stock move on a line of a watched channel order
  // reads that order back.
  if (spec.name === 'variant' && ctx.followUps && res.applied.length) {
    for (const id of await watchedOrdersWithVariants(tx, ctx.connectionId, res.applied))
      followUps.push({ connectionId: ctx.connectionId, resource: CHANNEL_ORDER, id, reason: 'order.watch' });
  }
  if (records.length) metrics.recordsFetched.inc({ connection: ctx.connectionName, resource: spec.name }, records.length);
  return { ...res, gone, changes, orderEvents, followUps };
}

/** Writes compositions read for the given bundles and recomputes those whose makeup changed. */
export async function applyCompositions(
  tx: Executor,
  ctx: ApplyContext,
  bundleIds: number[],
  rows: any[],
): Promise<{ changed: number[]; changes: NewChange[] }> {
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
  // Each variant with the parents that name it: a variant is judged against its own parents' last change, not
  // the newest of a whole batch (a burst's batch spans many seconds).
  const parentsOf = new Map<number, any[]>();
  const add = (variant: unknown, parent: any) => {
    const v = Number(variant);
    if (Number.isSafeInteger(v) && v > 0) parentsOf.set(v, [...(parentsOf.get(v) ?? []), parent]);
  };
  const byId = new Map(want.variants.map((r) => [Number(r.id), r]));
  const child = spec.include;
  const returnLines: { oli: number; parent: any }[] = [];
  if (child) {
    const listed = new Map<number, any>(); // line id -> the parent whose *_ids lists it (items without a parent id)
    for (const p of want.variants)
      for (const f of child.parentIdFields) if (Array.isArray(p?.[f])) for (const lid of p[f]) listed.set(Number(lid), p);
    for (const l of sideloads[child.key] ?? []) {
      const parent = byId.get(Number(l?.[child.parentColumn])) ?? listed.get(Number(l?.id));
      if (!parent) continue;
      if (l?.variant_id != null) add(l.variant_id, parent);
      // Return lines name the order line, not the variant: the mirrored order line knows it.
      if (l?.order_line_item_id != null && /^\d+$/.test(String(l.order_line_item_id)))
        returnLines.push({ oli: Number(l.order_line_item_id), parent });
    }
  }
  if (spec.variantIdsField)
    for (const r of want.variants) if (Array.isArray(r?.[spec.variantIdsField])) for (const v of r[spec.variantIdsField]) add(v, r);
  if (returnLines.length) {
    const variantOf = await variantsOfOrderLines(
      tx,
      connectionId,
      returnLines.map((l) => l.oli),
    );
    for (const l of returnLines) if (variantOf.has(l.oli)) add(variantOf.get(l.oli), l.parent);
  }
  mark('variant', await notReadSince(tx, ctx, parentsOf), `${spec.name} lines`);
  return out;
}

const FRACTION = /T\d\d:\d\d:\d\d[.,]\d/;

/**
 * The variants whose mirrored state may predate their parents' last change: the others need no follow-up read.
 * Two ways to know a variant shows a parent's effect on stock, both on the service's clock:
 * - its `updated_at` is at or after the newest `updated_at` of the parents naming it: it changed after them. With
 *   whole-second timestamps it must be a second later (same-second order unknown). This is the common case of an
 *   order whose variants' own stock events were read first.
 * - our last read of it reached the service (`read_as_of`, never late) a second and the clock margin after the newest event of the
 *   deliveries that asked for every parent naming it. Only deliveries count: a parent's `updated_at` need not move
 *   when its stock effect happens (an order finalised, a purchase order received through a procurement), but the
 *   event announcing that effect is sent after it. A later event of the parent is read again and judged anew.
 * A parent without a readable timestamp, or read for something else than its own deliveries, is always followed.
 */
async function notReadSince(tx: Executor, ctx: ApplyContext, parentsOf: Map<number, any[]>): Promise<number[]> {
  const variants = [...parentsOf.keys()];
  if (!variants.length) return variants;
  const shown = new Set<number>();
  for (const r of await variantUpdatedAts(tx, ctx.connectionId, variants)) {
    const parents = parentsOf.get(r.id)!;
    const stamps = parents.map((p) => p?.updated_at);
    if (stamps.every((v) => typeof v === 'string' && !Number.isNaN(Date.parse(v)))) {
      const since = Math.max(...stamps.map((v: string) => Date.parse(v)));
      const fine = stamps.every((v: string) => FRACTION.test(v)) && typeof r.updated_at === 'string' && FRACTION.test(r.updated_at);
      if (typeof r.updated_at === 'string' && Date.parse(r.updated_at) >= since + (fine ? 0 : 1000)) {
        shown.add(r.id);
        continue;
      }
    }
    const events = parents.map((p) => ctx.newestEvent?.get(Number(p?.id)));
    const newest = Math.max(...(events as number[]));
    if (r.read_as_of && events.every((e) => e !== undefined) && readAfterEvent(r.read_as_of.getTime(), newest, ctx.clockMarginMs ?? 0))
      shown.add(r.id);
  }
  return shown.size ? variants.filter((v) => !shown.has(v)) : variants;
}
