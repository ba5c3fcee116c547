// deliveries: receiver -> worker. One job per connection that owns the rows committed while it waited (the receiver
// inserts it in the same statement batch as the first of them, and attaches later rows to it until it starts:
// src/db/deliveries.ts), or one stored delivery an operator replays.
// The handler turns the rows a batch of jobs names into pending fetches, marks each row processed (or unhandled),
// and asks for one drain per (connection, resource): a burst of deliveries about the same records costs one read
// per 250 distinct records, not one per delivery. A job that fails for the last time (its next stop is the
// dead-letter queue) leaves its rows `failed`.
import type { JobWithMetadata } from 'pg-boss';
import { HANDLED_RESOURCES, resourceName } from '../catalog/index.ts';
import {
  deliveriesToConsume,
  logReceived,
  markFailed,
  markProcessed,
  markUnhandled,
  startWaitingJobs,
  type DeliveryRefs,
  type DeliveryToConsume,
} from '../db/deliveries.ts';
import type { Db } from '../db/index.ts';
import { markPending, type Mark } from '../db/pending.ts';
import type { Logger } from '../log.ts';
import { requestDrains, type DrainRequester } from './fetch.ts';
import { defineJob } from './job.ts';

/**
 * The deliveries of one connection stored while this job waited. It owns the rows whose job_id is `jobId`, its own
 * id when the receiver queued it (a delivery id stored before, a retry by the service, keeps its earlier row and
 * job; a dead letter replays under a new id with the same data). Jobs of earlier versions also list their
 * deliveries (`deliveryIds`); the rows' job_id says the same.
 */
export interface DeliveryBatch {
  kind: 'batch';
  connectionId: number;
  jobId: string;
  deliveryIds?: string[];
}

/** One stored delivery, as an operator's replay sends it (src/console/replay.ts). */
export interface DeliveryReplay {
  kind: 'replay';
  deliveryRowId: number;
  connectionId: number;
  resource: string | null;
  action: string | null;
  objectId: number | null;
}

/**
 * Shapes jobs queued by earlier versions carry, untagged (a dead letter keeps its data, so they may still come):
 * a batch by delivery id, a batch by row id, one delivery.
 */
export type LegacyDeliveriesData =
  | (Omit<DeliveryBatch, 'kind'> & { deliveryIds: string[] })
  | { connectionId: number; deliveryRowIds: number[] }
  | Omit<DeliveryReplay, 'kind'>;

export type DeliveriesData = DeliveryBatch | DeliveryReplay;

/** The webhook_deliveries rows jobs on `deliveries` name. */
export function deliveryRefsOf(jobs: (DeliveriesData | LegacyDeliveriesData)[]): DeliveryRefs {
  const refs: DeliveryRefs = { rowIds: [], jobIds: [] };
  for (const data of jobs) {
    const batch = batchOf(data);
    if (batch) refs.jobIds.push(batch.jobId);
    else if ('deliveryRowIds' in data) refs.rowIds.push(...data.deliveryRowIds);
    else if ('deliveryRowId' in data) refs.rowIds.push(data.deliveryRowId);
  }
  return refs;
}

/** The job as a batch of a connection's rows (legacy ones are told apart by their fields), else null. */
function batchOf(data: DeliveriesData | LegacyDeliveriesData): { connectionId: number; jobId: string } | null {
  if ('kind' in data) return data.kind === 'batch' ? data : null;
  return 'deliveryIds' in data ? data : null;
}

/**
 * What a delivery makes us read: the record it names, when the catalogue handles its resource. The reason
 * carries the event, so the drain knows what else it reads (catalog readsFor: lines, variants, order...).
 */
export function marksFor(row: DeliveryToConsume): Mark[] {
  const resource = resourceName(row.resource);
  if (!resource || row.object_id === null) return [];
  if (HANDLED_RESOURCES.has(resource)) {
    return [
      {
        connectionId: row.connection_id,
        resource,
        id: Number(row.object_id),
        deliveryRowId: row.id,
        reason: `${resource}.${row.action ?? 'event'}`,
      },
    ];
  }
  return [];
}

export interface ConsumeResult {
  processed: number;
  unhandled: number;
  drains: { connectionId: number; resource: string }[];
}

/** Handles the rows of a batch of delivery jobs in one transaction; then requests the drains (without `drains`, none). */
export async function consumeDeliveries(
  db: Db,
  drains: DrainRequester | null,
  jobs: (DeliveriesData | LegacyDeliveriesData)[],
): Promise<ConsumeResult> {
  const refs = deliveryRefsOf(jobs);
  const batches = jobs.map(batchOf).filter((b) => b !== null);
  // Nothing joins these jobs from now on, and what joined them has committed.
  await startWaitingJobs(db, batches);
  // Their rows' delivery.received entries are ours to write; a replay's row, or a row of a job that listed its
  // deliveries (an earlier version, whose receiver wrote the entry), has one already.
  const unlogged = batches.filter((b) => !('deliveryIds' in b)).map((b) => b.jobId);
  const done = await db.transaction().execute(async (tx) => {
    const handled: number[] = [];
    const unhandled: { id: number; why: string }[] = [];
    const marks: Mark[] = [];
    // In arrival order, so drains are asked for (eight at a time) in the order their first delivery came.
    const rows = await deliveriesToConsume(tx, refs);
    for (const row of rows) {
      const m = marksFor(row);
      if (m.length) {
        marks.push(...m);
        handled.push(row.id);
      } else
        unhandled.push({
          id: row.id,
          why: row.object_id === null ? 'delivery names no object_id' : `resource ${row.resource ?? '(none)'} is not mirrored`,
        });
    }
    await logReceived(tx, unlogged);
    const pairs = await markPending(tx, marks);
    await markProcessed(tx, handled);
    await markUnhandled(tx, unhandled);
    return { pairs, processed: handled.length, unhandled: unhandled.length };
  });
  if (drains) await requestDrains(drains, done.pairs);
  return { processed: done.processed, unhandled: done.unhandled, drains: done.pairs };
}

export const deliveriesJob = defineJob<DeliveriesData | LegacyDeliveriesData>({
  name: 'deliveries',
  policy: { retryLimit: 8, retryDelay: 2, retryBackoff: true },
  work: () => ({ batchSize: 200, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true }),
  async handle(deps, jobs) {
    try {
      const r = await consumeDeliveries(
        deps.db,
        deps,
        jobs.map((j) => j.data),
      );
      deps.log.debug({ jobs: jobs.length, ...r, drains: r.drains.length }, 'deliveries consumed');
    } catch (err) {
      await failedForGood(deps.db, deps.log, jobs, err as Error);
      throw err;
    }
  },
});

/**
 * The jobs of a failed batch that pg-boss will not retry again go to the dead-letter queue now: their rows
 * still `queued` become `failed` with the error (a dead-letter replay moves them on to `processed`).
 */
async function failedForGood(
  db: Db,
  log: Logger,
  jobs: JobWithMetadata<DeliveriesData | LegacyDeliveriesData>[],
  err: Error,
): Promise<void> {
  const last = jobs.filter((j) => j.retryCount >= j.retryLimit);
  if (!last.length) return;
  try {
    const n = await markFailed(
      db,
      deliveryRefsOf(last.map((j) => j.data)),
      `job failed ${last[0]!.retryCount + 1} times, now a dead letter: ${err.message}`,
    );
    log.error({ err, jobs: last.map((j) => j.id), deliveries: n }, 'delivery jobs failed for good: deliveries marked failed');
  } catch (markErr) {
    // The database is likely away: the rows stay `queued`; the dead letters still hold them for a replay.
    log.error({ err: markErr }, 'could not mark the deliveries of dead-lettered jobs failed');
  }
}
