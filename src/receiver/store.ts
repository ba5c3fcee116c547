// Writes a batch of deliveries in ONE transaction: the delivery rows (with their sync-log entries, see
// db/deliveries.ts) and ONE pg-boss job per connection in the batch naming that connection's new queued
// rows (the worker consumes deliveries in batches anyway, and the row holds everything the job would).
// The caller answers the requests only after this resolves, i.e. after COMMIT.
import { randomUUID } from 'node:crypto';
import type { Db } from '../db/index.ts';
import { insertDeliveries, type NewDelivery } from '../db/deliveries.ts';
import { bossDb, type Boss } from '../queue/boss.ts';
import { queues } from '../queue/names.ts';
import type { DeliveryBatchJob } from '../queue/jobs.ts';

export type IncomingDelivery = Omit<NewDelivery, 'jobId'>;

export type StoreOutcome = { stored: true; rowId: number; jobId: string | null } | { stored: false };

const key = (connectionId: number, deliveryId: string) => `${connectionId}\u0000${deliveryId}`;

/**
 * Stores the batch; returns per item whether it was new (and its row and job) or a duplicate of a delivery
 * stored before (or earlier in the same batch).
 */
export async function storeDeliveries(db: Db, boss: Boss, items: IncomingDelivery[]): Promise<StoreOutcome[]> {
  // Duplicates within the batch go in once; every copy after the first is a duplicate.
  const first = new Map<string, IncomingDelivery>();
  for (const d of items) {
    const k = key(d.connectionId, d.deliveryId);
    if (!first.has(k)) first.set(k, d);
  }
  // Job ids are made up front so each row can name its job.
  const jobIds = new Map<number, string>();
  const rows: NewDelivery[] = [];
  for (const d of first.values()) {
    let jobId: string | null = null;
    if (d.state === 'queued') {
      jobId = jobIds.get(d.connectionId) ?? randomUUID();
      jobIds.set(d.connectionId, jobId);
    }
    rows.push({ ...d, jobId });
  }

  const inserted = await db.transaction().execute(async (trx) => {
    const fresh = await insertDeliveries(trx, rows);
    const byKey = new Map(fresh.map((r) => [key(r.connection_id, r.delivery_id), r.id]));
    const jobs = new Map<number, DeliveryBatchJob>();
    for (const r of rows) {
      const rowId = byKey.get(key(r.connectionId, r.deliveryId));
      if (rowId === undefined || r.jobId === null) continue;
      const job = jobs.get(r.connectionId) ?? { connectionId: r.connectionId, deliveryRowIds: [] };
      job.deliveryRowIds.push(rowId);
      jobs.set(r.connectionId, job);
    }
    // A job only for a connection with new rows: an all-duplicate batch queues nothing.
    if (jobs.size) {
      await boss.insert(
        queues.deliveries,
        [...jobs.values()].map((data) => ({ id: jobIds.get(data.connectionId)!, data })),
        { db: bossDb(trx) },
      );
    }
    return byKey;
  });

  const given = new Set<string>();
  return items.map((d) => {
    const k = key(d.connectionId, d.deliveryId);
    const rowId = inserted.get(k);
    if (rowId === undefined || given.has(k)) return { stored: false };
    given.add(k);
    return { stored: true, rowId, jobId: d.state === 'queued' ? jobIds.get(d.connectionId)! : null };
  });
}

/**
 * Errors caused by the data of some item (class 22: data exception, 23: integrity, 54: a value over a
 * limit), not by the database being away.
 */
export function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && /^(22|23|54)/.test(code);
}
