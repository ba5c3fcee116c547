// push: one job per outbound operation (order import, ship, ...), whose row holds the input. Sent in the
// transaction that records the operation (or finishes the one before it on the same order). The handler claims
// and runs the operation: src/push/worker.ts.
import type { JobResult } from 'pg-boss';
import type { Executor } from '../db/index.ts';
import { runPushJob } from '../push/worker.ts';
import type { Boss } from '../queue/boss.ts';
import { defineJob } from './job.ts';

export interface PushData {
  operationId: number;
}

/** pg-boss priority of push jobs: outbound work comes before background jobs sharing a worker. */
export const PUSH_JOB_PRIORITY = 10;

export const pushJob = defineJob<PushData>({
  name: 'push',
  policy: { retryLimit: 6, retryDelay: 5, retryBackoff: true, expireInSeconds: 900 },
  // Batches of two, fetched back to back while they come full: with one job per fetch every worker would wait
  // a polling interval between jobs even with a backlog. Each job of a batch is settled on its own.
  work: (config) => {
    const batchSize = Math.min(2, config.WORKER_CONCURRENCY);
    return {
      perJobResults: true,
      batchSize,
      burstWhenBatchFull: true,
      localConcurrency: Math.ceil(config.WORKER_CONCURRENCY / batchSize),
      pollingIntervalSeconds: 1,
    };
  },
  handle: (deps, jobs) =>
    Promise.all(
      jobs.map(async (job): Promise<JobResult> => {
        try {
          await runPushJob(deps, job);
          return { id: job.id, status: 'completed' };
        } catch (err) {
          // A transient failure: pg-boss retries the job with backoff (the operation stays sent).
          return { id: job.id, status: 'failed', output: { message: err instanceof Error ? err.message : String(err) } };
        }
      }),
    ),
});

/** Sends the operation's job in the caller's transaction (after `startAfterSeconds` when given). */
export function sendPushJob(boss: Boss, tx: Executor, operationId: number, startAfterSeconds?: number): Promise<string | null> {
  return pushJob.send(
    boss,
    { operationId },
    { priority: PUSH_JOB_PRIORITY, tx, ...(startAfterSeconds ? { startAfter: startAfterSeconds } : {}) },
  );
}
