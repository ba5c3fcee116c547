// The worker role: every job's worker (src/jobs/: deliveries, fetch, reconcile, channel-delivery, push,
// maintenance) on the shared runtime, then the schedules and the channel rules.
// Several processes share the work through pg-boss.
import { createQueues, workJobs } from '../jobs/index.ts';
import type { Runtime } from '../runtime.ts';
import { applyRules } from './maintenance.ts';
import { syncSchedules } from './schedules.ts';

export async function mount(rt: Runtime): Promise<void> {
  const deps = rt.workerDeps();
  await createQueues(rt.boss, rt.config);
  rt.onStop.push(await workJobs(deps));
  await syncSchedules(deps.db, deps.boss, deps.config);
  await applyRules(deps);
}
