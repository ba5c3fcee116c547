// The data each queue's jobs carry (queue names and retry policy: names.ts). A dead letter keeps its data,
// so a replay sends it back unchanged: change these shapes only together with the handlers.
import type { DeliveryRefs } from '../db/deliveries.ts';
import type { ChannelChange } from '../stock/channel.ts';

/**
 * deliveries: the deliveries one receiver transaction stored for one connection, by delivery id. It owns
 * the rows whose job_id is `jobId`, its own id when the receiver queued it (a delivery id stored before, a
 * retry by the service, keeps its earlier row and job; a dead letter replays under a new id with the same
 * data). Named by delivery id rather than row id so the job is known before the insert and goes to the
 * database in the same round trip as the rows (src/receiver/store.ts).
 */
export interface DeliveryBatchJob {
  connectionId: number;
  jobId: string;
  deliveryIds: string[];
}

/** deliveries: rows by id, as jobs queued before batch jobs named deliveries by id carry them. */
export interface DeliveryRowsJob {
  connectionId: number;
  deliveryRowIds: number[];
}

/** deliveries: one delivery, as an operator's replay sends it (and as jobs queued before batch jobs carry it). */
export interface DeliveryJob {
  deliveryRowId: number;
  connectionId: number;
  resource: string | null;
  action: string | null;
  objectId: number | null;
}

/** Data of a job on `deliveries`. */
export type DeliveriesJob = DeliveryBatchJob | DeliveryRowsJob | DeliveryJob;

/** The webhook_deliveries rows jobs on `deliveries` name. */
export function deliveryRefsOf(jobs: DeliveriesJob[]): DeliveryRefs {
  const refs: DeliveryRefs = { rowIds: [], keys: [] };
  for (const data of jobs) {
    if ('deliveryIds' in data)
      for (const deliveryId of data.deliveryIds) refs.keys.push({ connectionId: data.connectionId, deliveryId, jobId: data.jobId });
    else if ('deliveryRowIds' in data) refs.rowIds.push(...data.deliveryRowIds);
    else refs.rowIds.push(data.deliveryRowId);
  }
  return refs;
}

/** fetch: drain the pending fetches of (connection, resource). */
export interface FetchJob {
  connectionId: number;
  resource: string;
}

/** reconcile: one sweep of a connection. */
export interface ReconcileJob {
  connectionId: number;
  full: boolean;
}

/** channel-stock: one channel quantity change for whatever publishes to the sales channel. */
export type ChannelStockJob = ChannelChange;

/** push: one outbound operation (its row holds the input). */
export interface PushJob {
  operationId: number;
}

/** maintenance: one housekeeping task. */
export interface MaintenanceJob {
  /** prune-sync-log: replaced by retention; still handled for a job queued before the change. */
  task: 'retention' | 'prune-sync-log' | 'schedules' | 'pending' | 'probe-lapsed' | 'webhooks';
}
