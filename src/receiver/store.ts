// Writes a batch of deliveries in ONE round trip and ONE transaction: the delivery rows and, for each connection
// in the batch with queued rows, the pg-boss job that consumes them: the one already waiting for that connection,
// or a new one (db/deliveries.ts). The worker consumes deliveries in batches anyway, and the row holds everything
// the job would. The caller answers the requests only after this resolves, i.e. after COMMIT.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { insertDeliveries, type NewDelivery } from '../db/deliveries.ts';
import { insertStatement, type Boss } from '../queue/boss.ts';
import { deliveriesQueue, type DeliveryBatch } from '../queue/contracts.ts';

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
  // A candidate job per connection is made up front, so the rows and the job go in one statement batch; the
  // database keeps it only if no job of that connection waits already. A delivery the database already holds
  // keeps its row and first job.
  const jobs = new Map<number, DeliveryBatch>();
  const rows: NewDelivery[] = [];
  for (const d of first.values()) {
    let jobId: string | null = null;
    if (d.state === 'queued') {
      const job = jobs.get(d.connectionId) ?? { kind: 'batch' as const, connectionId: d.connectionId, jobId: randomUUID() };
      jobs.set(d.connectionId, job);
      jobId = job.jobId;
    }
    rows.push({ ...d, jobId });
  }
  const jobInsert = jobs.size
    ? await insertStatement(
        boss,
        deliveriesQueue.name,
        [...jobs.values()].map((data) => ({ id: data.jobId, data })),
      )
    : undefined;
  const inserted = new Map((await insertDeliveries(pool, rows, jobInsert)).map((r) => [key(r.connection_id, r.delivery_id), r]));

  const given = new Set<string>();
  return items.map((d) => {
    const k = key(d.connectionId, d.deliveryId);
    const row = inserted.get(k);
    if (row === undefined || given.has(k)) return { stored: false };
    given.add(k);
    return { stored: true, rowId: row.id, jobId: row.job_id };
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
