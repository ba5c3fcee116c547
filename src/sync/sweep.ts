// Reconciliation sweeps. Incremental: every mirrored resource listed by updated_at_min (the cursor less an
// overlap), live and archived in one listing, 250 a page. Full: every record, active and archived, plus compositions,
// line-item collections and the resources kept whole in other_records; mirror rows the service no longer
// has at all are marked gone, once a read by id confirms it. What a sweep changes in the mirror is explained (a
// delivery was bringing it), unannounced (the service sends no event for such a change) or drift (an event should
// have told us: src/sync/drift.ts), counted per resource in the sync log and metrics, drift in sync_cursors too.
// Reads run at the 'reconcile' priority, below webhook reads.
//
// Lists are paged by offset while the merchant works, and "most recent first" may mean by update
// (real-service-notes section 7): a record updated after its page was read would move to a page already read.
// Sweeps therefore ask for creation order, oldest first, which no update moves and where new records come last;
// a deletion still shifts later records one place forward, so nothing missing from a listing is marked gone
// before a read by id says so.
import type { ApiClient, Page } from '../api/index.ts';
import { listCursors, saveCursor } from '../db/cursors.ts';
import { markPending } from '../db/pending.ts';
import type { Db } from '../db/index.ts';
import { withSweepLock } from '../db/locks.ts';
import type { Logger } from '../log.ts';
import { metrics } from '../metrics.ts';
import type { ReconcileData } from '../queue/contracts.ts';
import type { WorkerDeps } from '../queue/handler.ts';
import type { SyncDeps } from './state.ts';
import { logSync } from '../db/synclog.ts';
import type { NewChange } from '../stock/recompute.ts';
import { rulesFrom, type ChannelRules } from '../stock/rules.ts';
import { announceChanges } from '../channels/dispatch.ts';
import { applyCompositions, applyRecords, type ApplyContext } from './apply.ts';
import { upsertChildren, upsertOther, type Ties } from '../db/mirror.ts';
import { allBundles, liveIds, mirroredRecords } from '../db/mirror-reads.ts';
import { childCollections, composition, otherResources, resources, type ResourceSpec } from './resources.ts';
import type { Fields } from '../catalog/records.ts';
import { listLive, readLive, readLines, type Reader } from '../api/live.ts';
import { BATCH } from './drain.ts';
import { judgeChanges, refusedEvents, type Judged, type SweptChanges } from './drift.ts';
import { planAfterSweep } from './schedules.ts';

export interface SweepDeps {
  db: Db;
  log: Logger;
  client: Reader;
  rules: ChannelRules;
  overlapSeconds: number;
  jobId?: string | null;
  /** Called after each committed page with the channel quantity changes it made. */
  onChanges?: (changes: Pick<NewChange, 'channel_id'>[]) => Promise<void>;
  /** SERVICE_CLOCK_MARGIN_SECONDS in ms: how far a delivery's time may be before the change it announces. */
  clockMarginMs?: number;
}

export interface ResourceSweep {
  records: number;
  applied: number;
  gone: number;
  pages: number;
  /** Records that differ from the mirror at the same updated_at: left to a drain's read, not written (docs/sync.md). */
  queued?: number;
  /** Of `applied`, `queued` and `gone`, records a delivery or a queued read explained (not drift). */
  explained?: number;
  /** Of them, records changed in a way no event the service sends announces (not drift: src/sync/drift.ts). */
  unannounced?: number;
}

export interface SweepResult {
  full: boolean;
  records: number;
  drift: number;
  /** Records the sweep changed that a delivery or a queued read explained: left out of `drift`. */
  explained: number;
  /**
   * Records the sweep changed in a way no event the service sends announces (an order voided or paid, a variant's
   * price): expected, left out of `drift`.
   */
  unannounced: number;
  channelChanges: number;
  resources: Record<string, ResourceSweep>;
  /** Collections the service does not offer (404): left out. */
  unavailable: string[];
  durationMs: number;
  busy?: boolean;
  /**
   * The connection's first sweep (or its retry): some resource had no cursor yet, and what the sweep wrote of such
   * a resource is its initial load, not drift.
   */
  initial?: boolean;
}

const unavailable = (err: unknown) => [404, 405, 501].includes((err as { status?: number }).status ?? 0);

/** The order sweeps list in: creation, oldest first (documented: `order=created_at desc` is an example). */
export const STABLE_ORDER = 'created_at asc';

/**
 * Runs one sweep of a connection. Only one sweep per connection runs at a time (a lease, src/db/locks.ts);
 * with `wait` false a second one returns at once with `busy`.
 */
export async function sweep(deps: SweepDeps, opts: { full: boolean; wait?: boolean }): Promise<SweepResult> {
  const connectionId = deps.client.connection.id;
  const swept = await withSweepLock(deps.db, connectionId, !!opts.wait, () => sweepLocked(deps, opts.full));
  return swept ?? { ...emptyResult(opts.full), busy: true };
}

const emptyResult = (full: boolean): SweepResult => ({
  full,
  records: 0,
  drift: 0,
  explained: 0,
  unannounced: 0,
  channelChanges: 0,
  resources: {},
  unavailable: [],
  durationMs: 0,
});

async function sweepLocked(deps: SweepDeps, full: boolean): Promise<SweepResult> {
  const { db, client } = deps;
  const connectionId = client.connection.id;
  const started = Date.now();
  // What a sweep writes of a resource with no cursor yet is its first load, not drift, and a sweep that loaded one is
  // the initial sweep. A first sweep that failed part-way left cursors of the resources it finished: its retry loads
  // the rest, and is still the initial one. (A collection the service does not offer never gets a cursor: not a load.)
  const cursors = new Map((await listCursors(db, [connectionId])).map((c) => [c.resource, c.cursor]));
  const swept = Object.values(resources).filter((spec) => full || spec.incremental);
  const result: SweepResult = { ...emptyResult(full), initial: false };
  const ctx: ApplyContext = {
    connectionId,
    connectionName: client.connection.name,
    rules: deps.rules,
    followUps: false,
    cause: { kind: full ? 'full-sweep' : 'sweep', jobId: deps.jobId ?? null },
  };
  const changed = async (changes: NewChange[], orderEvents: number[] = []) => {
    result.channelChanges += changes.length;
    const touched = [...changes, ...orderEvents.map((id) => ({ channel_id: id }))];
    if (touched.length && deps.onChanges) await deps.onChanges(touched);
  };
  const bundlesToRead = new Set<number>();
  const refused = await refusedEvents(db, connectionId);
  const judge = (spec: ResourceSpec, changes: SweptChanges) => judgeChanges(db, connectionId, spec, changes, refused, deps.clockMarginMs);

  for (const spec of swept) {
    const stat: ResourceSweep = { records: 0, applied: 0, gone: 0, pages: 0, queued: 0, explained: 0, unannounced: 0 };
    const loading = !cursors.has(spec.name);
    const cursor = cursors.get(spec.name);
    const since = !full && cursor ? new Date(new Date(cursor).getTime() - deps.overlapSeconds * 1000) : null;
    let newest: string | null = null;
    const seen = new Set<number>();
    let ok = true;
    // Live and archived records in one listing (status[]=every live state and archived): one request per
    // resource and page, not one for live and one for archived; a service refusing several states gets one per state.
    const query: Record<string, string> = { order: STABLE_ORDER };
    if (spec.include) query.include = spec.include.key;
    if (since) query.updated_at_min = since.toISOString();
    const everyState = { ...spec, statuses: [...(spec.statuses ?? ['active']), 'archived'] };
    try {
      for await (const page of listLive(client, everyState, { priority: 'reconcile', key: spec.key, query })) {
        stat.pages++;
        stat.records += page.records.length;
        for (const r of page.records) {
          if (r?.id != null) seen.add(Number(r.id));
          if (typeof r?.updated_at === 'string' && (!newest || r.updated_at > newest)) newest = r.updated_at;
        }
        await readLines(client, spec, page.records, page.sideloads, { priority: 'reconcile' });
        const pageCtx = { ...ctx, ties: tiesOf(spec), cause: { ...ctx.cause, readAsOf: page.asOf, readBy: page.readBy } };
        // What the mirror held, to tell what changed (a first load's records are all new: not judged).
        const before = loading ? new Map() : await mirroredRecords(db, spec.table, connectionId, idsOf(page.records));
        const applied = await db.transaction().execute((tx) => applyRecords(tx, pageCtx, spec, page.records, page.sideloads));
        stat.applied += applied.applied.length;
        stat.queued = (stat.queued ?? 0) + applied.tied.length;
        if (!loading) add(stat, await judge(spec, { records: page.records, changed: [...applied.applied, ...applied.tied], before }));
        await leaveToDrain(deps, spec, applied.tied);
        for (const m of applied.followUps) if (m.resource === 'composition') bundlesToRead.add(m.id);
        await changed(applied.changes, applied.orderEvents);
      }
    } catch (err) {
      if (!unavailable(err)) throw err;
      ok = false;
      if (!result.unavailable.includes(spec.name)) result.unavailable.push(spec.name);
    }
    if (full && ok) {
      const confirmed = await sweepGone(deps, ctx, spec, seen, changed, loading ? null : judge);
      stat.gone = confirmed.gone;
      stat.applied += confirmed.applied;
      stat.queued = (stat.queued ?? 0) + confirmed.queued;
      add(stat, confirmed);
    }
    result.resources[spec.name] = stat;
    result.records += stat.records;
    // Drift is what an event should have announced and no delivery or queued read explains (docs/alerts.md).
    const drift = loading
      ? 0
      : Math.max(0, stat.applied + stat.gone + (stat.queued ?? 0) - (stat.explained ?? 0) - (stat.unannounced ?? 0));
    result.drift += drift;
    result.explained += stat.explained ?? 0;
    result.unannounced += stat.unannounced ?? 0;
    const labels = { connection: client.connection.name, resource: spec.name };
    if (drift) metrics.driftFound.inc(labels, drift);
    if (stat.explained) metrics.driftExplained.inc(labels, stat.explained);
    if (stat.unannounced) metrics.driftUnannounced.inc(labels, stat.unannounced);
    if (ok) await saveCursor(db, connectionId, spec.name, newest, full, drift);
    if (ok && loading) result.initial = true;
  }

  if (full) {
    await sweepCompositions(deps, ctx, result, changed);
    await sweepCollections(deps, result);
  } else if (bundlesToRead.size) {
    const ids = [...bundlesToRead];
    const read = await client.getByIds<Fields>(composition.path, ids, { priority: 'reconcile', key: composition.key });
    const r = await db.transaction().execute((tx) => applyCompositions(tx, ctx, ids, read.records));
    await changed(r.changes);
  }

  result.durationMs = Date.now() - started;
  await logSync(db, {
    connectionId,
    action: result.initial ? 'sweep.initial' : full ? 'sweep.full' : 'sweep',
    jobId: deps.jobId ?? null,
    durationMs: result.durationMs,
    outcome: result.drift ? 'warning' : 'ok',
    detail: {
      drift: result.drift,
      explained: result.explained,
      unannounced: result.unannounced,
      records: result.records,
      channel_changes: result.channelChanges,
      resources: result.resources,
      unavailable: result.unavailable,
    },
  });
  return result;
}

const idsOf = (records: readonly Fields[]) => records.map((r) => Number(r?.id)).filter(Number.isSafeInteger);

/** Adds what a judge found to a resource's counts. */
function add(stat: ResourceSweep, j: Partial<Judged>): void {
  stat.explained = (stat.explained ?? 0) + (j.explained ?? 0);
  stat.unannounced = (stat.unannounced ?? 0) + (j.unannounced ?? 0);
}

/**
 * A variant changed at the same updated_at is left to a drain (below). Other records are written: a product's
 * `quantity` moves with its variants' stock at an unmoved updated_at and no event of its own, so only a sweep
 * writes it, and nothing reads stock from it.
 */
// Products too: their quantity moves without updated_at; a page provably later than the row's read is written (src/db/mirror.ts).
const tiesOf = (spec: ResourceSpec): Ties => (spec.name === 'variant' || spec.readTimes ? 'leave' : 'write');

/**
 * Records a sweep found changed at the same updated_at: its read may be older than a drain's that was written
 * meanwhile (stock can move without moving updated_at), so a drain reads them again. Marked after the drift count,
 * which would otherwise take the mark as a queued read that explains them.
 */
async function leaveToDrain(deps: SweepDeps, spec: ResourceSpec, ids: number[]): Promise<void> {
  if (!ids.length) return;
  const connectionId = deps.client.connection.id;
  await markPending(
    deps.db,
    ids.map((id) => ({ connectionId, resource: spec.name, id, reason: 'sweep: changed at the same updated_at' })),
  );
}

/**
 * Full sweep: mirror rows the listing did not return are read by id (every state, archived too; up to 250 ids a
 * request), and only those the service does not return then are gone. The ones it returns moved while the list
 * was paged, or changed since: they are written like any other read.
 */
async function sweepGone(
  deps: SweepDeps,
  ctx: ApplyContext,
  spec: ResourceSpec,
  seen: Set<number>,
  changed: (c: NewChange[], orderEvents?: number[]) => Promise<void>,
  judge: ((spec: ResourceSpec, changes: SweptChanges) => Promise<Judged>) | null,
): Promise<{ gone: number; applied: number; queued: number } & Partial<Judged>> {
  const missing = (await liveIds(deps.db, spec.table, ctx.connectionId)).filter((id) => !seen.has(id));
  const everyState = { ...spec, statuses: [...(spec.statuses ?? ['active']), 'archived'] };
  const query = spec.include ? { include: spec.include.key } : {};
  const out = { gone: 0, applied: 0, queued: 0, explained: 0, unannounced: 0 };
  for (let i = 0; i < missing.length; i += BATCH) {
    const ids = missing.slice(i, i + BATCH);
    const read = await readLive(deps.client, everyState, ids, { priority: 'reconcile', key: spec.key, query });
    await readLines(deps.client, spec, read.records, read.sideloads, { priority: 'reconcile' });
    const found = new Set(read.records.map((r) => Number(r?.id)));
    const goneIds = ids.filter((id) => !found.has(id));
    const readCtx = { ...ctx, ties: tiesOf(spec), cause: { ...ctx.cause, readAsOf: read.asOf, readBy: read.readBy } };
    const before = judge ? await mirroredRecords(deps.db, spec.table, ctx.connectionId, ids) : new Map();
    const r = await deps.db.transaction().execute((tx) => applyRecords(tx, readCtx, spec, read.records, read.sideloads, goneIds));
    if (judge) {
      const j = await judge(spec, { records: read.records, changed: [...r.applied, ...r.tied], gone: r.gone, before });
      out.explained += j.explained;
      out.unannounced += j.unannounced;
    }
    await leaveToDrain(deps, spec, r.tied);
    out.gone += r.gone.length;
    out.applied += r.applied.length;
    out.queued += r.tied.length;
    await changed(r.changes, r.orderEvents);
  }
  if (missing.length)
    deps.log.info(
      { connectionId: ctx.connectionId, resource: spec.name, missing: missing.length, gone: out.gone },
      'full sweep: ids missing from the listing confirmed by id',
    );
  return out;
}

async function sweepCompositions(
  deps: SweepDeps,
  ctx: ApplyContext,
  result: SweepResult,
  changed: (c: NewChange[]) => Promise<void>,
): Promise<void> {
  const rows: Fields[] = [];
  try {
    for await (const page of deps.client.paginate<Fields>(composition.path, { priority: 'reconcile', key: composition.key }))
      rows.push(...page.records);
  } catch (err) {
    if (!unavailable(err)) throw err;
    result.unavailable.push(composition.name);
    return;
  }
  const bundles = await allBundles(deps.db, ctx.connectionId);
  const ids = [...new Set([...bundles, ...rows.map((r) => Number(r?.bundle_id)).filter(Number.isFinite)])];
  let changedMakeups = 0;
  for (let i = 0; i < ids.length; i += 1000) {
    const part = ids.slice(i, i + 1000);
    const set = new Set(part);
    const r = await deps.db.transaction().execute((tx) =>
      applyCompositions(
        tx,
        ctx,
        part,
        rows.filter((c) => set.has(Number(c?.bundle_id))),
      ),
    );
    changedMakeups += r.changed.length;
    await changed(r.changes);
  }
  // No event tells of a bundle's makeup: what changed is unannounced, never drift.
  const unannounced = result.initial ? 0 : changedMakeups;
  result.resources[composition.name] = { records: rows.length, applied: changedMakeups, gone: 0, pages: 0, unannounced };
  result.records += rows.length;
  result.unannounced += unannounced;
  if (unannounced) metrics.driftUnannounced.inc({ connection: deps.client.connection.name, resource: composition.name }, unannounced);
}

/**
 * The collections swept whole besides the mirrored resources: line items as collections of their own (items whose
 * parent the parent lists did not carry still land), and the other resources kept as records, live and archived.
 */
async function sweepCollections(deps: SweepDeps, result: SweepResult): Promise<void> {
  const connectionId = deps.client.connection.id;
  const reconcile = { priority: 'reconcile' as const };
  for (const child of childCollections)
    await sweepPages(
      result,
      child.key,
      () => deps.client.paginate(`/${child.key}`, { ...reconcile, key: child.key }),
      async (records) => (await upsertChildren(deps.db, child, connectionId, records)).applied.length,
    );
  for (const spec of otherResources)
    await sweepPages(
      result,
      spec.name,
      async function* () {
        yield* listLive(deps.client, spec, { ...reconcile, key: spec.key });
        yield* deps.client.paginate(spec.path, { ...reconcile, key: spec.key, query: { status: 'archived' } });
      },
      async (records) => (await upsertOther(deps.db, spec.name, connectionId, records)).applied.length,
      spec.key,
    );
}

/**
 * Every page of one collection into the mirror, counted in `result` under `name`; a collection the service does
 * not offer (404 and the like) is noted as unavailable by its key instead.
 */
async function sweepPages(
  result: SweepResult,
  name: string,
  pages: () => AsyncIterable<Page<unknown>>,
  upsert: (records: readonly unknown[]) => Promise<number>,
  key = name,
): Promise<void> {
  const stat: ResourceSweep = { records: 0, applied: 0, gone: 0, pages: 0 };
  try {
    for await (const page of pages()) {
      stat.pages++;
      stat.records += page.records.length;
      stat.applied += await upsert(page.records);
    }
  } catch (err) {
    if (!unavailable(err)) throw err;
    result.unavailable.push(key);
    return;
  }
  result.resources[name] = stat;
  result.records += stat.records;
}

/** Runs one sweep of a connection now (the reconcile job, and `commerce-sync reconcile`). */
export async function runSweep(
  deps: Pick<WorkerDeps, 'db' | 'boss' | 'config' | 'log'>,
  client: ApiClient,
  opts: { full: boolean; wait?: boolean; jobId?: string | null },
): Promise<SweepResult> {
  return sweep(
    {
      db: deps.db,
      log: deps.log,
      client,
      rules: rulesFrom(deps.config),
      overlapSeconds: deps.config.RECONCILE_OVERLAP_SECONDS,
      clockMarginMs: deps.config.SERVICE_CLOCK_MARGIN_SECONDS * 1000,
      jobId: opts.jobId ?? null,
      onChanges: (changes) => announceChanges(deps, changes),
    },
    { full: opts.full, wait: opts.wait },
  );
}

/** The reconcile queue's handler: one sweep of an active connection. */
export async function handleReconcile(
  deps: Pick<SyncDeps, 'db' | 'boss' | 'config' | 'log' | 'sync'>,
  client: ApiClient,
  job: { id: string; data: ReconcileData },
): Promise<void> {
  const { connectionId, full } = job.data;
  const r = await runSweep(deps, client, { full, jobId: job.id });
  // A first sweep is the initial load: the next comes after the base interval. Changes the service announces no
  // event for reach us only by sweeps, and keep them as frequent as drift does.
  const next = r.busy ? null : await planAfterSweep(deps.db, deps.config, connectionId, r.initial ? 1 : r.drift + r.unannounced);
  deps.log.info(
    {
      connectionId,
      full,
      drift: r.drift,
      unannounced: r.unannounced,
      records: r.records,
      busy: r.busy ?? false,
      ms: r.durationMs,
      nextInMinutes: next,
    },
    'sweep done',
  );
}
