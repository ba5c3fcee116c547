// Every queue's contract: its name, retry policy, payload type and typed sends. A feature that only sends (a sweep
// asking for a drain, a push store queueing an operation, the receiver) imports this module, never a handler;
// the handlers live with their features and src/worker/handlers.ts gives them to a worker process. Queue names
// are stored in pg-boss's tables: renaming one strands its waiting jobs.
import type { Executor } from '../db/index.ts';
import type { Boss } from './boss.ts';
import { defineQueue, type JobSendOptions } from './queue.ts';

// deliveries: receiver -> worker. One job per connection that owns the rows committed while it waited (the
// receiver inserts it in the same statement batch as the first of them and attaches later rows to it until it
// starts), or one stored delivery an operator replays.

/**
 * The deliveries of one connection stored while this job waited. It owns the rows whose job_id is `jobId`, its own
 * id when the receiver queued it (a delivery id stored before, a retry by the service, keeps its earlier row and
 * job; a dead letter replays under a new id with the same data).
 */
export interface DeliveryBatch {
  kind: 'batch';
  connectionId: number;
  jobId: string;
}

/** One stored delivery, as an operator's replay sends it (src/receiver/replay.ts). */
export interface DeliveryReplay {
  kind: 'replay';
  deliveryRowId: number;
  connectionId: number;
  resource: string | null;
  action: string | null;
  objectId: number | null;
}

export type DeliveriesData = DeliveryBatch | DeliveryReplay;

export const deliveriesQueue = defineQueue<DeliveriesData>('deliveries', {
  retryLimit: 8,
  retryDelay: 2,
  retryBackoff: true,
  // The receiver's job insert is a part of its one statement (src/db/deliveries.ts): its workers poll instead.
  notify: false,
});

// reconcile: one sweep of a connection (incremental or full), on the schedules src/sync/schedules.ts keeps, at a
// connection's first start, or asked for by an operator.

export interface ReconcileData {
  connectionId: number;
  full: boolean;
}

export const reconcileQueue = defineQueue<ReconcileData>('reconcile', {
  retryLimit: 5,
  retryDelay: 30,
  retryBackoff: true,
  expireInSeconds: 3600,
});

/** Asks for a sweep of the connection now; `options` may make it a singleton (a first sweep). */
export function requestSweep(boss: Boss, connectionId: number, full: boolean, options: JobSendOptions = {}): Promise<string | null> {
  return reconcileQueue.send(boss, { connectionId, full }, { group: { id: String(connectionId) }, ...options });
}

// channel-delivery: POST a channel's changes after its destination's cursor (src/channels/dispatch.ts).

export interface ChannelDeliveryData {
  channelId: number;
}

export const channelDeliveryQueue = defineQueue<ChannelDeliveryData>('channel-delivery', {
  retryLimit: 5,
  retryDelay: 5,
  retryBackoff: true,
  expireInSeconds: 300,
});

/**
 * Asks for a delivery of the channel's changes: debounced per channel, at most one job a second plus one for the
 * next second, so a burst of changes makes one job and a change made while a sender runs is always followed by one.
 */
export async function requestDelivery(boss: Boss, channelId: number, startAfterSeconds = 0): Promise<void> {
  // A retry at a time of its own: pg-boss's debounce picks the start itself (a retry folded into it would run at
  // once, find the destination waiting, and be gone). A spare job finds the lease taken or nothing due, and ends.
  if (startAfterSeconds > 0) await channelDeliveryQueue.send(boss, { channelId }, { startAfter: Math.ceil(startAfterSeconds) });
  else await boss.sendDebounced(channelDeliveryQueue.name, { channelId } satisfies ChannelDeliveryData, {}, 1, `channel:${channelId}`);
}

// push: one job per outbound operation (order import, ship, ...), whose row holds the input. Sent in the
// transaction that records the operation (or finishes the one before it on the same order).

export interface PushData {
  operationId: number;
}

/** pg-boss priority of push jobs: outbound work comes before background jobs sharing a worker. */
export const PUSH_JOB_PRIORITY = 10;

export const pushQueue = defineQueue<PushData>('push', { retryLimit: 6, retryDelay: 5, retryBackoff: true, expireInSeconds: 900 });

/** Sends the operation's job in the caller's transaction (after `startAfterSeconds` when given). */
export function sendPushJob(boss: Boss, tx: Executor, operationId: number, startAfterSeconds?: number): Promise<string | null> {
  return pushQueue.send(
    boss,
    { operationId },
    { priority: PUSH_JOB_PRIORITY, tx, ...(startAfterSeconds ? { startAfter: startAfterSeconds } : {}) },
  );
}

// maintenance: housekeeping tasks on schedules (src/sync/schedules.ts); the tasks: src/sync/maintenance.ts.

export type MaintenanceTask =
  | 'retention'
  | 'schedules'
  | 'sweeps'
  | 'full-sweeps'
  | 'pending'
  | 'holds'
  | 'order-watch'
  | 'probe-lapsed'
  | 'webhooks';

export interface MaintenanceData {
  task: MaintenanceTask;
}

export const maintenanceQueue = defineQueue<MaintenanceData>('maintenance', { retryLimit: 2, retryDelay: 60, retryBackoff: false });
