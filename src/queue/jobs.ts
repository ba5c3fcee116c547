// The data each queue's jobs carry (queue names and retry policy: names.ts). A dead letter keeps its data,
// so a replay sends it back unchanged: change these shapes only together with the handlers.
import type { ChannelChange } from '../stock/channel.ts';

/** deliveries: the webhook_deliveries rows one receiver transaction stored for one connection (the rows say the rest). */
export interface DeliveryBatchJob {
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
export type DeliveriesJob = DeliveryBatchJob | DeliveryJob;

/** The delivery rows a job on `deliveries` names. */
export const deliveryRowIdsOf = (job: DeliveriesJob): number[] => ('deliveryRowIds' in job ? job.deliveryRowIds : [job.deliveryRowId]);

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
  task: 'prune-sync-log' | 'schedules' | 'pending' | 'probe-lapsed' | 'webhooks';
}
