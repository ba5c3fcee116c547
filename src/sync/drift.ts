// What of a sweep's changes is drift (docs/alerts.md): a change an event should have announced and no delivery did.
// Of the records a sweep changed, one is
// - explained when a delivery or a queued read was bringing it: the drain was about to read it anyway;
// - unannounced when no event the connection's service sends tells of such a change: it sends none for most
//   updates (real-service-notes section 2: an order voided or paid, a variant's price, a product disabled), so a
//   sweep is how those arrive, as expected;
// - drift otherwise: a webhook was missed.
// src/sync/sweep.ts asks, page by page.
import { announces, type ResourceSpec } from '../catalog/index.ts';
import type { Fields } from '../catalog/records.ts';
import { announcedAmong } from '../db/delivery-reads.ts';
import type { Db } from '../db/index.ts';
import { pendingAmong } from '../db/pending.ts';
import { webhookCoverage } from '../db/refusals.ts';

/** What a page (or a read by id) of a sweep changed, and what the mirror held before. */
export interface SweptChanges {
  records: readonly Fields[];
  /** Ids of `records` the sweep changed: written, or left to a drain. */
  changed: number[];
  /** Ids the service no longer has. */
  gone?: number[];
  /** The mirror's copy of the records before the sweep wrote them (absent: new to it). */
  before: ReadonlyMap<number, Fields>;
}

export interface Judged {
  explained: number;
  unannounced: number;
}

/** The events the connection's service refused to subscribe: it sends those to nobody, so they announce nothing. */
export async function refusedEvents(db: Db, connectionId: number): Promise<ReadonlySet<string>> {
  return new Set((await webhookCoverage(db, connectionId))?.events ?? []);
}

/** Of the changes, how many are explained and how many unannounced (the module comment); the rest is drift. */
export async function judgeChanges(
  db: Db,
  connectionId: number,
  spec: ResourceSpec,
  c: SweptChanges,
  refused: ReadonlySet<string>,
  marginMs = 5000,
): Promise<Judged> {
  const explained = await explainedAmong(db, connectionId, spec, c.records, c.changed, marginMs);
  const read = new Map(c.records.map((r) => [Number(r?.id), r]));
  const actions = Object.keys(spec.events).filter((a) => !refused.has(`${spec.name}.${a}`));
  const announced = (id: number, after: Fields | undefined) => actions.some((a) => announces(a, c.before.get(id), after));
  const unexplained = c.changed.filter((id) => !explained.has(id));
  const unannounced =
    unexplained.filter((id) => !announced(id, read.get(id))).length + (c.gone ?? []).filter((id) => !announced(id, undefined)).length;
  return { explained: explained.size, unannounced };
}

/**
 * Of the records a page changed, those a delivery or a queued read explains: a pending row for the record, or a
 * delivery about it whose event time is at or after the updated_at read (less the clock margin).
 */
async function explainedAmong(
  db: Db,
  connectionId: number,
  spec: ResourceSpec,
  records: readonly Fields[],
  changed: number[],
  marginMs: number,
): Promise<Set<number>> {
  if (!changed.length) return new Set();
  const ids = new Set(changed);
  const pending = await pendingAmong(db, connectionId, spec.name, changed);
  const rest = records.filter((r) => ids.has(Number(r?.id)) && !pending.has(Number(r?.id)));
  const announced = await announcedAmong(
    db,
    connectionId,
    spec.name,
    rest.filter((r) => typeof r?.updated_at === 'string').map((r) => ({ id: Number(r.id), updatedAt: r.updated_at as string })),
    marginMs,
  );
  return new Set([...pending, ...announced]);
}
