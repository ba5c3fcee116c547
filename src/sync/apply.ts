// Applies what one read returned to the mirror, in the caller's transaction: records and their sideloaded line
// items, then the one hook through which the features follow every write (src/sync/after-write.ts: channel
// quantities, holds, order events). Shared by the drain (delivery-driven reads) and the sweeps, so both write the
// same way.
import type { Executor } from '../db/index.ts';
import { metrics } from '../metrics.ts';
import { composition, readsFor, type Read, type ResourceSpec } from '../catalog/index.ts';
import { idsIn, isFields, type Fields } from '../catalog/records.ts';
import { markGone, replaceCompositions, upsertChildren, upsertOther, upsertRecords, type Ties } from '../db/mirror.ts';
import { bundlesWithMakeup, variantsOfOrderLines, variantUpdatedAts } from '../db/mirror-reads.ts';
import type { Mark } from '../db/pending.ts';
import { readAfterEvent } from '../catalog/clocks.ts';
import { afterMirrorWrite, type Cause, type ChannelRules, type NewChange } from './after-write.ts';

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

/**
 * Writes records (and sideloads) of a mirrored resource; `goneIds`: ids the service no longer has at all;
 * `linesOf`: the records whose line items the sideloads hold (default: all), whose lines are replaced when written.
 */
export async function applyRecords(
  tx: Executor,
  ctx: ApplyContext,
  spec: ResourceSpec,
  records: readonly Fields[],
  sideloads: Readonly<Record<string, readonly unknown[]>> = {},
  goneIds: number[] = [],
  linesOf?: ReadonlySet<number>,
): Promise<Applied> {
  const keptWhole = spec.table === 'other_records';
  const res = keptWhole
    ? await upsertOther(tx, spec.name, ctx.connectionId, records)
    : await upsertRecords(tx, spec, ctx.connectionId, records, { ties: ctx.ties, readAsOf: ctx.cause.readAsOf, readBy: ctx.cause.readBy });
  const gone = keptWhole ? [] : await markGone(tx, spec, ctx.connectionId, goneIds);
  const followUps: Mark[] = [];
  const lines = spec.include ? sideloads[spec.include.key] : undefined;
  if (spec.include?.table && Array.isArray(lines)) {
    // Replace the line items of parents we just wrote; items of unchanged parents are upserted (idempotent).
    const replace = linesOf ? res.applied.filter((id) => linesOf.has(id)) : res.applied;
    await upsertChildren(tx, spec.include, ctx.connectionId, lines, records, replace);
  }
  const bundle = spec.bundleField;
  if (bundle) {
    // A new or changed bundle needs its makeup: read it (coalesced like any other fetch).
    const bundles = records.filter((r) => r?.[bundle] === true && res.applied.includes(Number(r.id))).map((r) => Number(r.id));
    if (bundles.length) {
      const have = await bundlesWithMakeup(tx, ctx.connectionId, bundles);
      for (const id of bundles) {
        if (!have.has(id) || !ctx.followUps)
          followUps.push({ connectionId: ctx.connectionId, resource: composition.name, id, reason: `bundle ${id}` });
      }
    }
  }
  if (ctx.followUps) followUps.push(...(await followUpsFor(tx, ctx, spec, records, new Set(res.applied), sideloads)));
  const after = await afterMirrorWrite(tx, {
    connectionId: ctx.connectionId,
    rules: ctx.rules,
    cause: ctx.cause,
    resource: spec.name,
    records,
    applied: res.applied,
    gone,
    followUps: ctx.followUps,
  });
  followUps.push(...after.followUps);
  if (records.length) metrics.recordsFetched.inc({ connection: ctx.connectionName, resource: spec.name }, records.length);
  return { ...res, gone, changes: after.changes, orderEvents: after.orderEvents, followUps };
}

/** Writes compositions read for the given bundles; the hook recomputes those whose makeup changed. */
export async function applyCompositions(
  tx: Executor,
  ctx: ApplyContext,
  bundleIds: number[],
  rows: readonly Fields[],
): Promise<{ changed: number[]; changes: NewChange[] }> {
  const changed = await replaceCompositions(tx, ctx.connectionId, bundleIds, rows);
  const after = await afterMirrorWrite(tx, {
    connectionId: ctx.connectionId,
    rules: ctx.rules,
    cause: ctx.cause,
    resource: composition.name,
    records: rows,
    applied: changed,
    gone: [],
    followUps: ctx.followUps,
  });
  if (rows.length) metrics.recordsFetched.inc({ connection: ctx.connectionName, resource: composition.name }, rows.length);
  return { changed, changes: after.changes };
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
  records: readonly Fields[],
  applied: Set<number>,
  sideloads: Readonly<Record<string, readonly unknown[]>>,
): Promise<Mark[]> {
  const { connectionId } = ctx;
  const want: Record<Read, Fields[]> = { record: [], lines: [], variants: [], order: [], purchase_order: [] };
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
  mark('order', idsIn(want.order, 'order_id'), `${spec.name} of order`);
  mark('purchase_order', idsIn(want.purchase_order, 'purchase_order_id'), `${spec.name} of purchase order`);
  if (!want.variants.length) return out;
  // Each variant with the parents that name it: a variant is judged against its own parents' last change, not
  // the newest of a whole batch (a burst's batch spans many seconds).
  const parentsOf = new Map<number, Fields[]>();
  const add = (variant: unknown, parent: Fields) => {
    const v = Number(variant);
    if (Number.isSafeInteger(v) && v > 0) parentsOf.set(v, [...(parentsOf.get(v) ?? []), parent]);
  };
  const byId = new Map(want.variants.map((r) => [Number(r.id), r]));
  const child = spec.include;
  const returnLines: { oli: number; parent: Fields }[] = [];
  if (child) {
    const listed = new Map<number, Fields>(); // line id -> the parent whose *_ids lists it (items without a parent id)
    for (const p of want.variants)
      for (const f of child.parentIdFields) {
        const lineIds = p?.[f];
        if (Array.isArray(lineIds)) for (const lid of lineIds) listed.set(Number(lid), p);
      }
    for (const l of sideloads[child.key] ?? []) {
      if (!isFields(l)) continue;
      const parent = byId.get(Number(l[child.parentColumn])) ?? listed.get(Number(l.id));
      if (!parent) continue;
      if (l.variant_id != null) add(l.variant_id, parent);
      // Return lines name the order line, not the variant: the mirrored order line knows it.
      if (l.order_line_item_id != null && /^\d+$/.test(String(l.order_line_item_id)))
        returnLines.push({ oli: Number(l.order_line_item_id), parent });
    }
  }
  const field = spec.variantIdsField;
  if (field)
    for (const r of want.variants) {
      const variantIds = r?.[field];
      if (Array.isArray(variantIds)) for (const v of variantIds) add(v, r);
    }
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
async function notReadSince(tx: Executor, ctx: ApplyContext, parentsOf: Map<number, Fields[]>): Promise<number[]> {
  const variants = [...parentsOf.keys()];
  if (!variants.length) return variants;
  const shown = new Set<number>();
  for (const r of await variantUpdatedAts(tx, ctx.connectionId, variants)) {
    const parents = parentsOf.get(r.id)!;
    const stamps = parents.map((p) => p?.updated_at).filter((v): v is string => typeof v === 'string' && !Number.isNaN(Date.parse(v)));
    if (stamps.length === parents.length) {
      const since = Math.max(...stamps.map((v) => Date.parse(v)));
      const fine = stamps.every((v) => FRACTION.test(v)) && typeof r.updated_at === 'string' && FRACTION.test(r.updated_at);
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
