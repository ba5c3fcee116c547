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
  work: (config) => ({ batchSize: 1, localConcurrency: Math.max(1, Math.min(config.WORKER_CONCURRENCY, 4)), localGroupConcurrency: 1 }),
  async handle(deps, [job]) {
    if (!(await deps.sync.statuses.active(job!.data.connectionId))) return;
    await handleReconcile(deps, await deps.sync.sweepClient(job!.data.connectionId), job!);
  },
});

/** Asks for a sweep of the connection now; `options` may make it a singleton (a first sweep). */
export async function requestSweep(boss: Boss, connectionId: number, full: boolean, options: JobSendOptions = {}): Promise<string | null> {
  return reconcileJob.send(boss, { connectionId, full }, { group: { id: String(connectionId) }, ...options });
}
