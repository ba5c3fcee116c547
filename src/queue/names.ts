// Every pg-boss queue commerce-sync uses and its policy (retries, expiry, dead letters), in one place; the data
// each carries is in jobs.ts. Each has its own dead-letter queue
// (`<name>-dead`): a job that keeps failing lands there with its last error, and replaying it means
// sending its data back to `<name>`.
import type { Config } from '../config.ts';
import type { Boss } from './boss.ts';

export const queues = {
  /** receiver -> worker: one job per connection per committed batch of deliveries, data DeliveriesJob (jobs.ts). */
  deliveries: 'deliveries',
  /** drain of pending (connection, resource, id) fetches, data { connectionId, resource }. */
  fetch: 'fetch',
  /** reconciliation sweeps, data { connectionId, full }. */
  reconcile: 'reconcile',
  /** channel quantity changes for whatever publishes to the sales channel. */
  channelStock: 'channel-stock',
  /** outbound operations (order import, ship, ...), data { operationId }. */
  push: 'push',
  /** housekeeping: retention of the tables that grow with traffic, schedules, and the like. */
  maintenance: 'maintenance',
} as const;

export type QueueName = (typeof queues)[keyof typeof queues];

export const deadLetterOf = (name: string) => `${name}-dead`;
export const isDeadLetter = (name: string) => name.endsWith('-dead');
export const liveQueueOf = (dead: string) => dead.replace(/-dead$/, '');

type QueueOptions = { retryLimit: number; retryDelay: number; retryBackoff: boolean; expireInSeconds?: number; retentionSeconds?: number };

// A running job heartbeats (pg-boss does it for the handler); a worker killed mid-job stops heartbeating and
// its job is retried within about this long, instead of waiting out expireInSeconds (15 min for a push).
const HEARTBEAT_SECONDS = 10;

const retries: Record<QueueName, QueueOptions> = {
  deliveries: { retryLimit: 8, retryDelay: 2, retryBackoff: true },
  fetch: { retryLimit: 10, retryDelay: 2, retryBackoff: true, expireInSeconds: 900 },
  reconcile: { retryLimit: 5, retryDelay: 30, retryBackoff: true, expireInSeconds: 3600 },
  // Taken only by a publisher of the operator's (or by CHANNEL_WEBHOOK_URL's poster): without one, changes
  // would pile up for 14 days. A day by default; JOB_RETENTION_HOURS where the settings are given (createQueues).
  // GET /api/channel-stock keeps the history by cursor (CHANNEL_CHANGE_RETENTION_DAYS).
  'channel-stock': { retryLimit: 10, retryDelay: 5, retryBackoff: true, retentionSeconds: 86_400 },
  push: { retryLimit: 6, retryDelay: 5, retryBackoff: true, expireInSeconds: 900 },
  maintenance: { retryLimit: 2, retryDelay: 60, retryBackoff: false },
};

/** How long pg-boss keeps finished jobs and waiting dead letters: the settings, which processes running workers pass. */
export type QueueRetention = Pick<Config, 'JOB_RETENTION_HOURS' | 'DEAD_LETTER_RETENTION_DAYS'>;

/**
 * Creates every queue and its dead-letter queue (idempotent; safe from several processes). With `retention`, every
 * queue deletes finished jobs after JOB_RETENTION_HOURS (pg-boss's deleteAfterSeconds, 7 days by default), so does
 * channel-stock a change no publisher took (its retentionSeconds), and a dead letter nobody replayed goes after
 * DEAD_LETTER_RETENTION_DAYS (its dead queue's retentionSeconds, 14 days by default, fixed on each letter when it
 * arrives); without, what the queues have stays.
 */
export async function createQueues(boss: Boss, retention?: QueueRetention): Promise<void> {
  const existing = new Set((await boss.getQueues()).map((q) => q.name));
  const jobSeconds = retention ? Math.max(1, Math.round(retention.JOB_RETENTION_HOURS * 3600)) : undefined;
  const finished = jobSeconds ? { deleteAfterSeconds: jobSeconds } : {};
  const letters = retention
    ? { ...finished, retentionSeconds: Math.max(1, Math.round(retention.DEAD_LETTER_RETENTION_DAYS * 86_400)) }
    : {};
  for (const name of Object.values(queues)) {
    const dead = deadLetterOf(name);
    if (!existing.has(dead)) await boss.createQueue(dead, letters).catch(ignoreExists);
    else if (retention) await boss.updateQueue(dead, letters);
    const options = { ...retries[name], ...finished, heartbeatSeconds: HEARTBEAT_SECONDS, deadLetter: dead };
    // A channel change nobody took waits as long as a finished job is kept.
    if (name === queues.channelStock && jobSeconds) options.retentionSeconds = jobSeconds;
    if (!existing.has(name)) await boss.createQueue(name, options).catch(ignoreExists);
    else await boss.updateQueue(name, options);
  }
}

function ignoreExists(err: Error): void {
  if (!/already exists|duplicate key/i.test(err.message)) throw err;
}
