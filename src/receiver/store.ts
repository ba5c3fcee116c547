// Writes a batch of deliveries in ONE transaction: the delivery rows, one pg-boss job per new queued row
// (through pg-boss's own insert, on this transaction), and a sync-log entry per new row (action
// delivery.received, delivery.unhandled or delivery.rejected). The caller answers
// the requests only after this resolves, i.e. after COMMIT.
import { randomUUID } from 'node:crypto';
import { CompiledQuery } from 'kysely';
import type { Db } from '../db/index.ts';
import type { Boss } from '../queue/boss.ts';
import { queues } from '../queue/names.ts';
import type { DeliveryJob } from '../queue/jobs.ts';

export type DeliveryState = 'queued' | 'unhandled' | 'rejected';

export interface IncomingDelivery {
  connectionId: number;
  deliveryId: string;
  event: string | null;
  resource: string | null;
  action: string | null;
  objectId: number | null;
  eventAt: Date | null;
  resourceUrl: string | null;
  body: string;
  state: DeliveryState;
  /** Why a delivery was rejected or left unhandled. */
  error: string | null;
}

export type StoreOutcome = { stored: true; rowId: number; jobId: string | null } | { stored: false };

const key = (d: IncomingDelivery) => `${d.connectionId}\u0000${d.deliveryId}`;

// One statement for the whole batch, whatever its size: columns as arrays, unnested into rows. The same
// statement writes each new row's sync-log entry and the NOTIFY that logSync (src/synclog) would: logSync binds
// 14 parameters per entry, which measured 2.5x slower than this for a batch of 200 (see docs/receiver.md).
const insertRows = `
  WITH ins AS (
    INSERT INTO webhook_deliveries
      (connection_id, delivery_id, event, resource, action, object_id, event_at, resource_url, body, state, error, job_id)
    SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::timestamptz[],
      $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])
    ON CONFLICT (connection_id, delivery_id) DO NOTHING
    RETURNING id, connection_id, delivery_id, event, resource, object_id, state, error, job_id
  ), log AS (
    INSERT INTO sync_log (connection_id, resource, record_id, action, delivery_id, job_id, outcome, error, detail)
    SELECT connection_id, resource, object_id,
      CASE state WHEN 'queued' THEN 'delivery.received' ELSE 'delivery.' || state END,
      delivery_id, job_id,
      CASE state WHEN 'queued' THEN 'ok' WHEN 'unhandled' THEN 'skipped' ELSE 'warning' END,
      error, jsonb_build_object('event', event)
    FROM ins
    RETURNING id
  ), notified AS (
    SELECT pg_notify('sync_log', max(id)::text) FROM log HAVING count(*) > 0
  )
  SELECT id, connection_id, delivery_id, x.notified FROM ins CROSS JOIN (SELECT count(*) AS notified FROM notified) AS x`;
// (x.notified is selected so the planner cannot drop the join, and with it the NOTIFY.)

/**
 * Stores the batch; returns per item whether it was new (and its row and job) or a duplicate of a delivery
 * stored before (or earlier in the same batch).
 */
export async function storeDeliveries(db: Db, boss: Boss, items: IncomingDelivery[]): Promise<StoreOutcome[]> {
  // Duplicates within the batch go in once; every copy after the first is a duplicate.
  const first = new Map<string, IncomingDelivery>();
  for (const d of items) if (!first.has(key(d))) first.set(key(d), d);
  const unique = [...first.values()];
  const jobIds = new Map<IncomingDelivery, string>();
  for (const d of unique) if (d.state === 'queued') jobIds.set(d, randomUUID());
  const col = <V>(f: (d: IncomingDelivery) => V) => unique.map(f);

  const inserted = await db.transaction().execute(async (trx) => {
    const { rows } = await trx.executeQuery<{ id: number; connection_id: number; delivery_id: string }>(CompiledQuery.raw(insertRows, [
      col((d) => d.connectionId), col((d) => d.deliveryId), col((d) => d.event), col((d) => d.resource), col((d) => d.action),
      col((d) => d.objectId), col((d) => d.eventAt), col((d) => d.resourceUrl), col((d) => d.body), col((d) => d.state),
      col((d) => d.error), col((d) => jobIds.get(d) ?? null),
    ]));
    const byKey = new Map(rows.map((r) => [`${r.connection_id}\u0000${r.delivery_id}`, r.id]));
    const fresh = unique.filter((d) => byKey.has(key(d)));
    const jobs = fresh.filter((d) => jobIds.has(d)).map((d) => ({
      id: jobIds.get(d)!,
      data: { deliveryRowId: byKey.get(key(d))!, connectionId: d.connectionId, resource: d.resource, action: d.action, objectId: d.objectId } satisfies DeliveryJob,
    }));
    if (jobs.length) {
      await boss.insert(queues.deliveries, jobs, {
        db: { executeSql: (text: string, values?: unknown[]) => trx.executeQuery(CompiledQuery.raw(text, values ?? [])) },
      });
    }
    return byKey;
  });

  const given = new Set<string>();
  return items.map((d) => {
    const k = key(d);
    const rowId = inserted.get(k);
    if (rowId === undefined || given.has(k)) return { stored: false };
    given.add(k);
    return { stored: true, rowId, jobId: jobIds.get(d) ?? null };
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
