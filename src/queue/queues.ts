// Every queue commerce-sync has, in one list: it creates the queues (and their dead-letter queues) and tells the
// console which dead letters it may replay. Adding a queue is its contract in contracts.ts, one line here, and
// its handler in src/worker/handlers.ts.
import type { Config } from '../config.ts';
import type { Boss } from './boss.ts';
import { channelDeliveryQueue, deliveriesQueue, maintenanceQueue, pushQueue, reconcileQueue } from './contracts.ts';
import { isDeadLetter, liveQueueOf, deadLetterOf, type Queue } from './queue.ts';

export const queues: readonly Queue<unknown>[] = [deliveriesQueue, reconcileQueue, channelDeliveryQueue, pushQueue, maintenanceQueue];

/** The queue of a name (live or dead letter), if it is ours. */
export function queueOf(name: string): Queue<unknown> | undefined {
  const live = isDeadLetter(name) ? liveQueueOf(name) : name;
  return queues.find((q) => q.name === live);
}

// A running job heartbeats (pg-boss does it for the handler); a worker killed mid-job stops heartbeating and
// its job is retried within about this long, instead of waiting out expireInSeconds (15 min for a push).
const HEARTBEAT_SECONDS = 10;

/** How long pg-boss keeps finished jobs and waiting dead letters: the settings, which processes running workers pass. */
export type QueueRetention = Pick<Config, 'JOB_RETENTION_HOURS' | 'DEAD_LETTER_RETENTION_DAYS'>;

/**
 * Creates every queue and its dead-letter queue (idempotent; safe from several processes). With `retention`, every
 * queue deletes finished jobs after JOB_RETENTION_HOURS (pg-boss's deleteAfterSeconds, 7 days by default), so does
 * a queue with a retentionSeconds of its own a job nobody took, and a dead
 * letter nobody replayed goes after DEAD_LETTER_RETENTION_DAYS (its dead queue's retentionSeconds, 14 days by
 * default, fixed on each letter when it arrives); without, what the queues have stays.
 */
export async function createQueues(boss: Boss, retention?: QueueRetention): Promise<void> {
  const existing = new Set((await boss.getQueues()).map((q) => q.name));
  const jobSeconds = retention ? Math.max(1, Math.round(retention.JOB_RETENTION_HOURS * 3600)) : undefined;
  const finished = jobSeconds ? { deleteAfterSeconds: jobSeconds } : {};
  const letters = retention
    ? { ...finished, retentionSeconds: Math.max(1, Math.round(retention.DEAD_LETTER_RETENTION_DAYS * 86_400)) }
    : {};
  for (const { name, policy } of queues) {
    const dead = deadLetterOf(name);
    if (!existing.has(dead)) await boss.createQueue(dead, letters).catch(ignoreExists);
    else if (retention) await boss.updateQueue(dead, letters);
    // notify: a job put on the queue wakes the workers listening (src/queue/boss.ts), so they poll seldom.
    const options = { notify: true, ...policy, ...finished, heartbeatSeconds: HEARTBEAT_SECONDS, deadLetter: dead };
    // A job nobody took waits as long as a finished job is kept.
    if (policy.retentionSeconds && jobSeconds) options.retentionSeconds = jobSeconds;
    if (!existing.has(name)) await boss.createQueue(name, options).catch(ignoreExists);
    else await boss.updateQueue(name, options);
  }
}

/**
 * createQueues at most once, on first use, for a process that only sends (the console's routes): a queue must
 * exist before a job goes on it, and a worker may never have started. A failure is tried again next time.
 */
export function queuesOnce(boss: Boss): () => Promise<void> {
  let ready: Promise<void> | undefined;
  return () =>
    (ready ??= createQueues(boss).catch((err) => {
      ready = undefined;
      throw err;
    }));
}

function ignoreExists(err: Error): void {
  if (!/already exists|duplicate key/i.test(err.message)) throw err;
}
