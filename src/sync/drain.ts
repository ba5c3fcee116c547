// The drain: reads pending (connection, resource) ids back in list calls of up to 250 ids, writes them to
// the mirror and clears what it read. Ids a read does not return are looked up once with status=archived;
// those still missing are marked gone.
import type { Db, Executor } from '../db/index.ts';
import type { Logger } from '../log.ts';
import { logging, logSync } from '../db/synclog.ts';
import type { ChannelRules } from '../stock/rules.ts';
import type { NewChange } from '../stock/recompute.ts';
import { applyCompositions, applyRecords, type ApplyContext } from './apply.ts';
import { rowsRead, unchangedRecords, variantsRead } from '../db/mirror.ts';
import { together } from '../db/together.ts';
import {
  claimWithStamps,
  clearing,
  clearPending,
  keepRemarked,
  markPending,
  releasePending,
  type Claimed,
  type ClaimStamps,
  type Mark,
} from '../db/pending.ts';
import { catalog, composition, readAs } from '../catalog/index.ts';
import type { Fields, ServiceRecord } from '../catalog/records.ts';
import { readLive, readLines, type Reader } from '../api/live.ts';
import { readAfterEvent } from '../catalog/clocks.ts';
import { inSpan } from '../telemetry/spans.ts';

export const BATCH = 250;

export interface DrainResult {
  read: number;
  requests: number;
  applied: number;
  gone: number;
  /** Pending variants cleared without a read: the mirror already showed them as of after their deliveries. */
  skipped: number;
  changes: NewChange[];
  /** Channels that got order events. */
  orderEvents: number[];
  /** True when the drain stopped at its batch bound with rows left: its pair is due again at once. */
  more: boolean;
}

export interface DrainDeps {
  db: Db;
  log: Logger;
  client: Reader;
  rules: ChannelRules;
  /**
   * The drain's own id (drains have no job: src/sync/drainer.ts), in the job_id of its sync-log entries and channel
   * changes, so an operator finds what one drain did.
   */
  jobId?: string | null;
  /** SERVICE_CLOCK_MARGIN_SECONDS in ms: how far apart the service's two clocks may be (src/catalog/clocks.ts). */
  clockMarginMs: number;
}

interface Deliveries {
  /** Per claimed id: its deliveries (row id and X-Service-Delivery). */
  byId: Map<number, { rowId: number; deliveryId: string | null }[]>;
  /** Claimed variants the mirror already shows as of after every delivery that marked them (see below). */
  shown: Set<number>;
  /** Per claimed id that deliveries alone marked, each with a time: the newest event time (epoch ms). */
  newestEvent: Map<number, number>;
  /** The traced deliveries' traceparents, oldest first: the drain's span continues the first and links the rest. */
  traceparents: string[];
}

/**
 * The deliveries behind the claimed rows and, for variants, which of them need no read: a burst's deliveries
 * arrive long after the changes they announce, and a variant read once after its last change need not be read
 * again for each late delivery. The delivery's timestamp (whole seconds) is the service's clock, and so are two
 * stamps of the mirrored variant: its `updated_at`, and `read_as_of`, when our last read of it reached the service
 * (its Date header less the round trip, src/api/transport.ts). Those come from other machines than the webhooks'
 * timestamp: either one at least a second and the clock margin (src/catalog/clocks.ts) after the newest event
 * of a row whose every mark was a delivery (none dropped past the 20 kept, no follow-up among them) means the
 * variant was read after those events happened. `read_as_of` is what works in a burst: the last delivery of a
 * variant names the change its `updated_at` shows, so only the read's own time can tell it was already read.
 * The stamps come with the claim, in its statement (src/db/pending.ts claimWithStamps).
 */
function deliveriesOf(resource: string, claimed: Claimed[], stamps: ClaimStamps, clockMarginMs: number): Deliveries {
  const rows = new Map<number, { deliveryId: string; eventAt: number }>();
  const traceparents: string[] = [];
  const mirrored = new Map<number, number>(); // the later of updated_at and read_as_of, epoch ms
  const byDeliveries = claimed.filter((c) => c.deliveryRowIds.length && c.marks === c.deliveryRowIds.length);
  const candidates = resource === 'variant' ? byDeliveries : [];
  for (const d of [...stamps.deliveries].sort((a, b) => a.id - b.id)) {
    rows.set(d.id, { deliveryId: d.delivery_id ?? '', eventAt: d.event_at ? d.event_at.getTime() : Number.NaN });
    if (d.traceparent) traceparents.push(d.traceparent);
  }
  for (const v of stamps.variants) {
    const known = [Date.parse(v.updated_at ?? ''), v.read_as_of?.getTime() ?? Number.NaN].filter((n) => !Number.isNaN(n));
    if (known.length) mirrored.set(v.id, Math.max(...known));
  }
  const byId = new Map(
    claimed.map((c) => [c.id, c.deliveryRowIds.map((rowId) => ({ rowId, deliveryId: rows.get(rowId)?.deliveryId ?? null }))]),
  );
  const newestEvent = new Map<number, number>();
  for (const c of byDeliveries) {
    const newest = Math.max(...c.deliveryRowIds.map((id) => rows.get(id)?.eventAt ?? Number.NaN));
    if (!Number.isNaN(newest)) newestEvent.set(c.id, newest);
  }
  const shown = new Set<number>();
  for (const c of candidates) {
    const at = mirrored.get(c.id);
    const newest = newestEvent.get(c.id);
    if (at !== undefined && newest !== undefined && readAfterEvent(at, newest, clockMarginMs)) shown.add(c.id);
  }
  return { byId, shown, newestEvent, traceparents };
}

/** Drains one (connection, resource): reads of up to BATCH ids until one takes what is left, or `maxBatches` reads. */
export async function drainPending(deps: DrainDeps, resource: string, maxBatches = 40): Promise<DrainResult> {
  const { db, client } = deps;
  const connectionId = Number(client.connection.id);
  const out: DrainResult = {
    read: 0,
    requests: 0,
    applied: 0,
    gone: 0,
    skipped: 0,
    changes: [],
    orderEvents: [],
    more: false,
  };
  for (let batch = 0; ; batch++) {
    if (batch >= maxBatches) {
      out.more = true;
      break;
    }
    const { claimed, ...stamps } = await claimWithStamps(db, connectionId, resource, BATCH);
    if (!claimed.length) break;
    const started = Date.now();
    try {
      await readBatch(deps, resource, claimed, stamps, out);
    } catch (err) {
      await releasePending(
        db,
        connectionId,
        resource,
        claimed.map((c) => c.id),
      ).catch(() => {});
      await logSync(db, {
        connectionId,
        resource,
        action: 'fetch',
        outcome: 'error',
        error: (err as Error).message,
        jobId: deps.jobId ?? null,
        durationMs: Date.now() - started,
        detail: { ids: claimed.length, record_ids: claimed.map((c) => c.id) },
      }).catch(() => {});
      throw err;
    }
    // A partial batch took everything there was: rows marked while it was read made the pair due again, and
    // wait for its window like any mark (a claim that finds nothing would cost a statement per drain).
    if (claimed.length < BATCH) break;
  }
  return out;
}

async function readBatch(deps: DrainDeps, resource: string, batch: Claimed[], stamps: ClaimStamps, out: DrainResult): Promise<void> {
  const { db, client } = deps;
  const connectionId = Number(client.connection.id);
  const started = Date.now();
  let claimed = batch;
  const deliveries = deliveriesOf(resource, claimed, stamps, deps.clockMarginMs);
  const shown = deliveries.shown;
  if (shown.size) {
    // Cleared without a read (unless re-marked meanwhile: the seq moved and the row stays).
    await clearPending(
      db,
      connectionId,
      resource,
      claimed.filter((c) => shown.has(c.id)),
    );
    out.skipped += shown.size;
    claimed = claimed.filter((c) => !shown.has(c.id));
    if (!claimed.length) return;
  }
  const attributes = { 'commerce.connection': client.connection.name, 'commerce.resource': resource, 'commerce.records': claimed.length };
  await inSpan(`drain ${resource}`, { from: deliveries.traceparents, attributes }, () =>
    readClaimed(deps, resource, batch, claimed, deliveries, started, out),
  );
}

/** Reads the claimed records that need it, and writes them to the mirror with their channels' recomputation. */
async function readClaimed(
  deps: DrainDeps,
  resource: string,
  batch: Claimed[],
  claimed: Claimed[],
  deliveries: Deliveries,
  started: number,
  out: DrainResult,
): Promise<void> {
  const { db, client, log } = deps;
  const connectionId = Number(client.connection.id);
  const ids = claimed.map((c) => c.id);
  const byVariant = deliveries.byId;
  const allDeliveries = [...byVariant.values()].flat();
  const ctx: ApplyContext = {
    connectionId,
    connectionName: client.connection.name,
    rules: deps.rules,
    followUps: true,
    cause: { kind: allDeliveries.length ? 'delivery' : 'fetch', jobId: deps.jobId ?? null, deliveriesByVariant: byVariant },
    newestEvent: deliveries.newestEvent,
    clockMarginMs: deps.clockMarginMs,
  };
  const followUps: Mark[] = [];
  let requests = 0,
    applied = 0,
    gone = 0,
    returned = 0;
  const changes: NewChange[] = [];
  // The sync log's fetch entry is written in the drain's own transaction: one commit per read, not two.
  const fetchEntry = () => ({
    connectionId,
    resource,
    action: 'fetch',
    jobId: deps.jobId ?? null,
    durationMs: Date.now() - started,
    deliveryId: allDeliveries[allDeliveries.length - 1]?.deliveryId ?? null,
    detail: {
      ids: ids.length,
      // Which: a record's history shows the read its delivery queued (src/console/synclog.ts recordHistory).
      record_ids: ids,
      returned,
      requests,
      applied,
      gone,
      channel_changes: changes.length,
      follow_ups: followUps.length,
      skipped: batch.length - claimed.length,
    },
  });
  // The drain's last writes need not see each other: one statement (src/db/together.ts), then the rows re-marked
  // while it read, in their own (rarely any).
  const finish = async (tx: Executor, ...notes: Parameters<typeof together>[1]) => {
    const [gone] = await together(tx, [clearing(connectionId, resource, claimed), logging(tx, fetchEntry()), ...notes]);
    await keepRemarked(tx, connectionId, resource, claimed, Number(gone ?? 0));
  };

  if (resource === composition.name) {
    const read = await client.getByIds<Fields>(composition.path, ids, { priority: 'webhook', key: composition.key });
    requests += read.requests;
    returned = read.records.length;
    await mirrorWrite(db, read.records.length, async (tx) => {
      const r = await applyCompositions(tx, ctx, ids, read.records);
      applied = r.changed.length;
      changes.push(...r.changes);
      await finish(tx);
    });
  } else {
    const spec = catalog[readAs(resource)];
    if (!spec) {
      // Not something we mirror (a stale row from an older version): drop it.
      await clearPending(db, connectionId, resource, claimed);
      log.warn({ resource }, 'pending fetch of a resource we do not mirror dropped');
      return;
    }
    const include = spec.include ? { include: spec.include.key } : {};
    const read = await readLive(client, spec, ids, { priority: 'webhook', key: spec.key, query: include });
    requests += read.requests;
    const found = new Set(read.records.map((r) => Number(r?.id)));
    let records = read.records;
    const sideloads: Record<string, unknown[]> = { ...read.sideloads };
    const missing = ids.filter((id) => !found.has(id));
    let goneIds: number[] = [];
    if (missing.length) {
      const archived = await client.getByIds<ServiceRecord>(spec.path, missing, {
        priority: 'webhook',
        key: spec.key,
        query: { ...include, status: 'archived' },
      });
      requests += archived.requests;
      const foundArchived = new Set(archived.records.map((r) => Number(r?.id)));
      records = [...records, ...archived.records];
      for (const [k, v] of Object.entries(archived.sideloads)) sideloads[k] = [...(sideloads[k] ?? []), ...v];
      goneIds = missing.filter((id) => !foundArchived.has(id));
    }
    // Lines only of what changed: an order the mirror has at the same updated_at has them already.
    const unchanged = spec.include?.table ? await unchangedRecords(db, spec, connectionId, records) : new Set<number>();
    const withLines = unchanged.size ? records.filter((r) => !unchanged.has(Number(r?.id))) : records;
    requests += await readLines(client, spec, withLines, sideloads, { priority: 'webhook' });
    returned = records.length;
    // The event that asked for each record decides what else is read (catalog readsFor).
    for (const c of claimed) {
      const action = c.reason?.startsWith(`${resource}.`) ? c.reason.slice(resource.length + 1) : undefined;
      if (action) (ctx.events ??= new Map()).set(c.id, action);
    }
    // What the read shows of held orders dates from the service's clock at the read (src/channels/holds.ts).
    ctx.cause = { ...ctx.cause, readAsOf: read.asOf, readBy: read.readBy };
    await mirrorWrite(db, records.length, async (tx) => {
      const r = await applyRecords(tx, ctx, spec, records, sideloads, goneIds, new Set(withLines.map((x) => Number(x?.id))));
      applied = r.applied.length;
      gone = r.gone.length;
      changes.push(...r.changes);
      out.orderEvents.push(...r.orderEvents);
      followUps.push(...r.followUps);
      // Their pairs are due in markPending's own statement (src/db/drain-pairs.ts).
      if (r.followUps.length) await markPending(tx, r.followUps);
      await finish(
        tx,
        spec.name === 'variant' && read.asOf !== null ? variantsRead(connectionId, [...found], read.asOf) : null,
        read.asOf != null && read.readBy != null ? rowsRead(spec, connectionId, [...found], read.asOf, read.readBy) : null,
      );
    });
  }
  out.read += ids.length;
  out.requests += requests;
  out.applied += applied;
  out.gone += gone;
  out.changes.push(...changes);
}

/** The drain's one transaction: mirror rows, recomputed channel quantities, cleared marks, the sync-log entry. */
function mirrorWrite(db: Db, records: number, fn: (tx: Executor) => Promise<void>): Promise<void> {
  return inSpan('mirror write', { attributes: { 'commerce.records': records } }, () => db.transaction().execute(fn));
}
