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
import type { DeliveriesData, LegacyDeliveriesData } from '../queue/contracts.ts';
import { inSpan } from '../telemetry/spans.ts';

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
  /** The (connection, resource) pairs marked: due for a drain (src/sync/drainer.ts) once their window has passed. */
  drains: { connectionId: number; resource: string }[];
}

/** Handles the rows of a batch of delivery jobs in one transaction: their marks make their pairs' drains due. */
export async function consumeDeliveries(db: Db, jobs: (DeliveriesData | LegacyDeliveriesData)[]): Promise<ConsumeResult> {
  const refs = deliveryRefsOf(jobs);
  const batches = jobs.map(batchOf).filter((b) => b !== null);
  // Nothing joins these jobs from now on, and what joined them has committed.
  await startWaitingJobs(db, batches);
  // Their rows' delivery.received entries are ours to write; a replay's row, or a row of a job that lists its
  // deliveries (the older shape, whose receiver wrote the entry), has one already.
  const unlogged = batches.filter((b) => !('deliveryIds' in b)).map((b) => b.jobId);
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
      const pairs = await markPending(tx, marks);
      await markProcessed(tx, handled);
      await markUnhandled(tx, unhandled);
      return { pairs, processed: handled.length, unhandled: unhandled.length };
    });
  });
  return { processed: done.processed, unhandled: done.unhandled, drains: done.pairs };
}
