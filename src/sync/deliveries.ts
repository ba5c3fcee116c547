// The handler of the `deliveries` queue: turns the delivery rows a batch of jobs names into pending fetches,
// marks each row processed (or unhandled), and asks for one drain per (connection, resource). A burst of
// deliveries about the same records therefore costs one read per 250 distinct records, not one per delivery.
// A job that fails for the last time (its next stop is the dead-letter queue) leaves its rows `failed`.
import type { JobWithMetadata } from 'pg-boss';
import type { Db } from '../db/index.ts';
import { deliveriesToConsume, markFailed, markProcessed, markUnhandled, type DeliveryToConsume } from '../db/deliveries.ts';
import type { Logger } from '../log.ts';
import type { Boss } from '../queue/boss.ts';
import { queues } from '../queue/names.ts';
import { deliveryRefsOf, type DeliveriesJob } from '../queue/jobs.ts';
import { markPending, type Mark } from '../db/pending.ts';
import { HANDLED_RESOURCES, resourceName } from '../catalog/index.ts';
import { requestDrain } from './jobs.ts';

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

/** Handles the rows of a batch of delivery jobs in one transaction; then requests the drains. */
export async function consumeDeliveries(db: Db, boss: Boss | null, jobs: DeliveriesJob[]): Promise<ConsumeResult> {
  const refs = deliveryRefsOf(jobs);
  const drains = await db.transaction().execute(async (tx) => {
    const handled: number[] = [];
    const unhandled: { id: number; why: string }[] = [];
    const marks: Mark[] = [];
    // In arrival order, so drains are requested in the order their first delivery came.
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
    const pairs = await markPending(tx, marks);
    await markProcessed(tx, handled);
    await markUnhandled(tx, unhandled);
    return { pairs, processed: handled.length, unhandled: unhandled.length };
  });
  if (boss) for (const p of drains.pairs) await requestDrain(boss, p.connectionId, p.resource, { db });
  return { processed: drains.processed, unhandled: drains.unhandled, drains: drains.pairs };
}

/** Registers the worker of `deliveries` (batches of up to 200 jobs). */
export async function workDeliveries(deps: { db: Db; boss: Boss; log: Logger }): Promise<void> {
  const { db, boss, log } = deps;
  await boss.work(
    queues.deliveries,
    { batchSize: 200, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true, includeMetadata: true },
    async (jobs: JobWithMetadata<DeliveriesJob>[]) => {
      try {
        const r = await consumeDeliveries(
          db,
          boss,
          jobs.map((j) => j.data),
        );
        log.debug({ jobs: jobs.length, ...r, drains: r.drains.length }, 'deliveries consumed');
      } catch (err) {
        await failedForGood(db, log, jobs, err as Error);
        throw err;
      }
    },
  );
}

/**
 * The jobs of a failed batch that pg-boss will not retry again go to the dead-letter queue now: their rows
 * still `queued` become `failed` with the error (a dead-letter replay moves them on to `processed`).
 */
async function failedForGood(db: Db, log: Logger, jobs: JobWithMetadata<DeliveriesJob>[], err: Error): Promise<void> {
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
