// Operator replays. A stored delivery goes back on `deliveries` as a new job (a DeliveryReplay naming its row)
// and its row returns to `queued`; a dead letter moves back to its live queue with its data. Each
// replay commits together with its sync-log entry (pg-boss runs inside our transaction via `db`). The operations
// (deliveryReplay, deadLetterReplay) are what every door calls (the API, the console's buttons, `commerce-sync
// replay`), each writing one audit entry.
import { auditChange, type Caller } from '../audit.ts';
import { connectionName } from '../db/connections.ts';
import { deliveryForUpdate, requeueDelivery } from '../db/deliveries.ts';
import type { Db } from '../db/index.ts';
import { bossDb, type Boss } from '../queue/boss.ts';
import { deliveriesQueue, type DeliveryReplay } from '../queue/contracts.ts';
import { isDeadLetter, liveQueueOf } from '../queue/queue.ts';
import { queueOf } from '../queue/queues.ts';
import { logSync } from '../db/synclog.ts';

export interface ReplayResult {
  jobId: string;
}

/** Re-enqueues a stored delivery; null when there is no such row. */
export async function replayDelivery(db: Db, boss: Boss, deliveryRowId: number): Promise<ReplayResult | null> {
  return db.transaction().execute(async (trx) => {
    const row = await deliveryForUpdate(trx, deliveryRowId);
    if (!row) return null;
    const data: DeliveryReplay = {
      kind: 'replay',
      deliveryRowId: row.id,
      connectionId: row.connection_id,
      resource: row.resource,
      action: row.action,
      objectId: row.object_id,
    };
    const jobId = await deliveriesQueue.send(boss, data, { tx: trx });
    if (!jobId) throw new Error('pg-boss did not create the job');
    // Left as it is when a delivery of the same body waits already: that one's read comes after this replay.
    const requeued = await requeueDelivery(trx, row.id, jobId);
    await logSync(trx, {
      connectionId: row.connection_id,
      resource: row.resource,
      recordId: row.object_id,
      action: 'delivery.replay',
      jobId,
      deliveryId: row.delivery_id,
      detail: { deliveryRowId: row.id, previousState: row.state, by: 'operator', ...(requeued ? {} : { twinWaits: true }) },
    });
    return { jobId };
  });
}

export class ReplayError extends Error {}

/** Moves one dead letter back to its live queue; null when it is no longer waiting there. */
export async function replayDeadLetter(db: Db, boss: Boss, deadQueue: string, id: string): Promise<ReplayResult | null> {
  if (!isDeadLetter(deadQueue) || !queueOf(deadQueue)) {
    throw new ReplayError(`${deadQueue} is not a dead-letter queue`);
  }
  if (!/^[0-9a-f-]{36}$/i.test(id)) throw new ReplayError('a dead letter id is a UUID');
  const live = liveQueueOf(deadQueue);
  const target = queueOf(deadQueue)!;
  return db.transaction().execute(async (trx) => {
    const [job] = await boss.findJobs<Record<string, unknown>>(deadQueue, { id, db: bossDb(trx) });
    if (!job || (job.state !== 'created' && job.state !== 'retry')) return null;
    const jobId = await target.send(boss, job.data ?? {}, { tx: trx });
    if (!jobId) throw new Error('pg-boss did not create the job');
    await boss.deleteJob(deadQueue, id, { db: bossDb(trx) });
    const data = (job.data ?? {}) as Partial<DeliveryReplay>;
    await logSync(trx, {
      connectionId: typeof data.connectionId === 'number' ? data.connectionId : null,
      resource: typeof data.resource === 'string' ? data.resource : null,
      action: 'dead-letter.replay',
      jobId,
      detail: { queue: live, deadLetterId: id, by: 'operator' },
    });
    return { jobId };
  });
}

/** Replays a stored delivery for an operator: null when there is no such row. */
export async function deliveryReplay(deps: { db: Db; boss: Boss }, caller: Caller, deliveryRowId: number): Promise<ReplayResult | null> {
  const done = await replayDelivery(deps.db, deps.boss, deliveryRowId);
  if (done) {
    const row = await deps.db.selectFrom('webhook_deliveries').select('connection_id').where('id', '=', deliveryRowId).executeTakeFirst();
    const name = row && (await connectionName(deps.db, row.connection_id));
    await auditChange(deps.db, caller, {
      action: 'deliveries.replay',
      connection: row && name ? { id: row.connection_id, name } : null,
      target: `delivery ${deliveryRowId}`,
      after: { replayed: { delivery: deliveryRowId, jobId: done.jobId } },
    });
  }
  return done;
}

/** Moves a dead letter back to its live queue for an operator: null when it no longer waits there. */
export async function deadLetterReplay(
  deps: { db: Db; boss: Boss },
  caller: Caller,
  deadQueue: string,
  id: string,
): Promise<ReplayResult | null> {
  const done = await replayDeadLetter(deps.db, deps.boss, deadQueue, id);
  if (done)
    await auditChange(deps.db, caller, {
      action: 'dead-letters.replay',
      target: `${deadQueue} ${id}`,
      after: { replayed: { queue: deadQueue, id, jobId: done.jobId } },
    });
  return done;
}
