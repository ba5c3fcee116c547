// reconcile: one sweep of a connection (incremental or full), on the schedules src/sync/schedules.ts keeps, at
// a connection's first start, or asked for by an operator. The sweep itself: src/sync/reconcile.ts.
import type { Boss } from '../queue/boss.ts';
import { handleReconcile } from '../sync/reconcile.ts';
import { defineJob, type JobSendOptions } from './job.ts';

export interface ReconcileData {
  connectionId: number;
  full: boolean;
}

export const reconcileJob = defineJob<ReconcileData>({
  name: 'reconcile',
  policy: { retryLimit: 5, retryDelay: 30, retryBackoff: true, expireInSeconds: 3600 },
  // Sweeps mostly wait on the API and hold no database connection while they do (their lock is a lease,
  // src/db/locks.ts), so like drains they get twice WORKER_CONCURRENCY slots. Four, while each sweep held a pooled
  // connection, made the first sweeps of 5,000 accounts take 42 minutes.
  work: (config) => ({ batchSize: 1, localConcurrency: config.WORKER_CONCURRENCY * 2, localGroupConcurrency: 1 }),
  async handle(deps, [job]) {
    if (!(await deps.sync.statuses.active(job!.data.connectionId))) return;
    await handleReconcile(deps, await deps.sync.sweepClient(job!.data.connectionId), job!);
  },
});

/** Asks for a sweep of the connection now; `options` may make it a singleton (a first sweep). */
export async function requestSweep(boss: Boss, connectionId: number, full: boolean, options: JobSendOptions = {}): Promise<string | null> {
  return reconcileJob.send(boss, { connectionId, full }, { group: { id: String(connectionId) }, ...options });
}
