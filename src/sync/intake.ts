// Intake of inbound deliveries (the deliveries queue's work): turns the rows a batch of jobs names into pending
// fetches, marks each row processed (or unhandled), and asks for one drain per (connection, resource): a burst of
// deliveries about the same records costs one read per 250 distinct records, not one per delivery.
import { HANDLED_RESOURCES, resourceName } from '../catalog/index.ts';
import {
  deliveriesToConsume,
  logReceived,
  markProcessed,
  markUnhandled,
  startWaitingJobs,
  type DeliveryRefs,
  type DeliveryToConsume,
} from '../db/deliveries.ts';
import type { Db } from '../db/index.ts';
import { markPending, type Mark } from '../db/pending.ts';
import type { DeliveriesData, DeliveryBatch } from '../queue/contracts.ts';
import { inSpan } from '../telemetry/spans.ts';

/** The webhook_deliveries rows jobs on `deliveries` name. */
export function deliveryRefsOf(jobs: DeliveriesData[]): DeliveryRefs {
  const refs: DeliveryRefs = { rowIds: [], jobIds: [] };
  for (const data of jobs) {
    if (data.kind === 'batch') refs.jobIds.push(data.jobId);
    else refs.rowIds.push(data.deliveryRowId);
  }
  return refs;
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
        id: row.object_id,
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
  /** The (connection, resource) pairs marked: due for a drain (src/sync/drainer.ts) once their window has passed. */
  drains: { connectionId: number; resource: string }[];
}

/** Handles the rows of a batch of delivery jobs in one transaction: their marks make their pairs' drains due. */
export async function consumeDeliveries(db: Db, jobs: DeliveriesData[]): Promise<ConsumeResult> {
  const refs = deliveryRefsOf(jobs);
  const batches = jobs.filter((j): j is DeliveryBatch => j.kind === 'batch');
  // Nothing joins these jobs from now on, and what joined them has committed.
  await startWaitingJobs(db, batches);
  // Their rows' delivery.received entries are ours to write; a replay's row has one already.
  const unlogged = batches.map((b) => b.jobId);
  const done = await db.transaction().execute(async (tx) => {
    // In arrival order, so drains are asked for (eight at a time) in the order their first delivery came.
    const rows = await deliveriesToConsume(tx, refs);
    const traced = { from: rows.map((r) => r.traceparent), attributes: { 'commerce.deliveries': rows.length } };
    return inSpan('deliveries intake', traced, async () => {
      const handled: number[] = [];
      const unhandled: { id: number; why: string }[] = [];
      const marks: Mark[] = [];
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
      await markProcessed(tx, handled);
      await markUnhandled(tx, unhandled);
      // Last: its rows (a record's pending fetch, the pair's drain_pairs row) are the ones a drain clears and releases,
      // so they stay locked only until the commit. Marked first, a drain clearing them waited for the two statements
      // after as well (bench/accounts --explain-ms: the drain's last statement was 3-5 ms of waiting on 0.2 of work).
      const pairs = await markPending(tx, marks);
      return { pairs, processed: handled.length, unhandled: unhandled.length };
    });
  });
  return { processed: done.processed, unhandled: done.unhandled, drains: done.pairs };
}
