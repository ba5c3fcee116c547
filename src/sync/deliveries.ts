// The delivery consumer: turns a batch of stored deliveries into pending fetches, marks each delivery row
// processed (or unhandled), and asks for one drain per (connection, resource). A burst of deliveries
// about the same records therefore costs one read per 250 distinct records, not one per delivery.
import { sql } from 'kysely';
import type { Db } from '../db/index.ts';
import type { Boss } from '../queue/boss.ts';
import type { DeliveryJob } from '../queue/jobs.ts';
import { markPending, type Mark } from './pending.ts';
import { HANDLED_RESOURCES, resourceName } from '../catalog/index.ts';
import { requestDrain } from './jobs.ts';

/**
 * What a delivery makes us read: the record it names, when the catalogue handles its resource. The reason
 * carries the event, so the drain knows what else it reads (catalog readsFor: lines, variants, order...).
 */
export function marksFor(job: DeliveryJob): Mark[] {
  const resource = resourceName(job.resource);
  if (!resource || job.objectId === null || job.objectId === undefined) return [];
  if (HANDLED_RESOURCES.has(resource)) {
    return [{ connectionId: job.connectionId, resource, id: Number(job.objectId), deliveryRowId: job.deliveryRowId, reason: `${resource}.${job.action ?? 'event'}` }];
  }
  return [];
}

export interface ConsumeResult { processed: number; unhandled: number; drains: { connectionId: number; resource: string }[] }

/** Handles a batch of delivery jobs in one transaction; then requests the drains. */
export async function consumeDeliveries(db: Db, boss: Boss | null, jobs: DeliveryJob[]): Promise<ConsumeResult> {
  const handled: number[] = [];
  const unhandled: { id: number; why: string }[] = [];
  const marks: Mark[] = [];
  for (const j of jobs) {
    const m = marksFor(j);
    if (m.length) { marks.push(...m); handled.push(j.deliveryRowId); }
    else unhandled.push({ id: j.deliveryRowId, why: j.objectId == null ? 'delivery names no object_id' : `resource ${j.resource ?? '(none)'} is not mirrored` });
  }
  const drains = await db.transaction().execute(async (tx) => {
    const pairs = await markPending(tx, marks);
    if (handled.length) {
      await sql`UPDATE webhook_deliveries SET state = 'processed', processed_at = now(), error = NULL
        WHERE id = ANY(${handled}::bigint[]) AND state <> 'processed'`.execute(tx);
    }
    if (unhandled.length) {
      await sql`UPDATE webhook_deliveries d SET state = 'unhandled', processed_at = now(), error = x.why
        FROM jsonb_to_recordset(${JSON.stringify(unhandled)}::jsonb) AS x(id bigint, why text) WHERE d.id = x.id`.execute(tx);
    }
    return pairs;
  });
  if (boss) for (const p of drains) await requestDrain(boss, p.connectionId, p.resource, { db });
  return { processed: handled.length, unhandled: unhandled.length, drains };
}
