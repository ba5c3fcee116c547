// maintenance: housekeeping tasks on schedules (src/sync/schedules.ts): retention, the schedules themselves and
// channel rules, the sweeps that are due, lapsed connections, webhook subscriptions, the pending-fetch safety net,
// and holds that expired. The tasks: src/sync/maintenance.ts.
import { handleMaintenance } from '../sync/maintenance.ts';
import { defineJob } from './job.ts';

export type MaintenanceTask = 'retention' | 'schedules' | 'sweeps' | 'full-sweeps' | 'pending' | 'holds' | 'probe-lapsed' | 'webhooks';
/** A task retention replaced; a job of it queued before the change is run as retention. */
export type LegacyMaintenanceTask = 'prune-sync-log';

export interface MaintenanceData {
  task: MaintenanceTask | LegacyMaintenanceTask;
}

export const maintenanceJob = defineJob<MaintenanceData>({
  name: 'maintenance',
  policy: { retryLimit: 2, retryDelay: 60, retryBackoff: false },
  work: () => ({ batchSize: 1 }),
  async handle(deps, [job]) {
    const task = job!.data.task;
    await handleMaintenance(deps, task === 'prune-sync-log' ? 'retention' : task);
  },
});
