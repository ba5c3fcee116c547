// Writes a batch of deliveries in ONE round trip and ONE transaction: the delivery rows (with their sync-log
// entries, see db/deliveries.ts) and ONE pg-boss job per connection in the batch naming that connection's
// new queued deliveries (the worker consumes deliveries in batches anyway, and the row holds everything the
// job would). The caller answers the requests only after this resolves, i.e. after COMMIT.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { insertDeliveries, type NewDelivery } from '../db/deliveries.ts';
import { insertStatement, type Boss } from '../queue/boss.ts';
import { deliveriesJob, type DeliveryBatch } from '../jobs/deliveries.ts';

export type IncomingDelivery = Omit<NewDelivery, 'jobId'>;

export type StoreOutcome = { stored: true; rowId: number; jobId: string | null } | { stored: false };

const key = (connectionId: number, deliveryId: string) => `${connectionId}\u0000${deliveryId}`;

/**
 * Stores the batch; returns per item whether it was new (and its row and job) or a duplicate of a delivery
 * stored before (or earlier in the same batch).
 */
export async function storeDeliveries(pool: pg.Pool, boss: Boss, items: IncomingDelivery[]): Promise<StoreOutcome[]> {
  // Duplicates within the batch go in once; every copy after the first is a duplicate.
  const first = new Map<string, IncomingDelivery>();
  for (const d of items) {
    const k = key(d.connectionId, d.deliveryId);
    if (!first.has(k)) first.set(k, d);
  }
  // The jobs are made up front, so the rows can name their job and both go in one statement batch. A
  // delivery the database already holds stays in its job's list but not in its rows (the row keeps its
  // first job_id); the handler reads only rows whose job_id is the job's.
  const jobs = new Map<number, DeliveryBatch>();
  const rows: NewDelivery[] = [];
  for (const d of first.values()) {
    let jobId: string | null = null;
    if (d.state === 'queued') {
      const job = jobs.get(d.connectionId) ?? {
        kind: 'batch' as const,
        connectionId: d.connectionId,
        jobId: randomUUID(),
        deliveryIds: [],
      };
      job.deliveryIds.push(d.deliveryId);
      jobs.set(d.connectionId, job);
      jobId = job.jobId;
    }
    rows.push({ ...d, jobId });
  }
  const jobInsert = jobs.size
    ? await insertStatement(
        boss,
        deliveriesJob.name,
        [...jobs.values()].map((data) => ({ id: data.jobId, data })),
      )
    : undefined;
  const inserted = new Map((await insertDeliveries(pool, rows, jobInsert)).map((r) => [key(r.connection_id, r.delivery_id), r.id]));

  const given = new Set<string>();
  return items.map((d) => {
    const k = key(d.connectionId, d.deliveryId);
    const rowId = inserted.get(k);
    if (rowId === undefined || given.has(k)) return { stored: false };
    given.add(k);
    return { stored: true, rowId, jobId: d.state === 'queued' ? jobs.get(d.connectionId)!.jobId : null };
  });
}

/** PostgreSQL ended the transaction to break a deadlock (40P01): running it again is the cure. */
export function isDeadlock(err: unknown): boolean {
  return (err as { code?: unknown }).code === '40P01';
}

/**
 * Errors caused by the data of some item (class 22: data exception, 23: integrity, 54: a value over a
 * limit), not by the database being away.
 */
export function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && /^(22|23|54)/.test(code);
}
