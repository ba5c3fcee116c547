// The worker role: every queue's handler (handlers.ts) on the shared runtime, then the schedules and the channel
// rules. Several processes share the work through pg-boss.
import { createQueues } from '../queue/queues.ts';
import type { Runtime } from '../runtime.ts';
import { applyRules } from '../sync/maintenance.ts';
import { syncSchedules } from '../sync/schedules.ts';
import { workQueues } from './handlers.ts';

export async function mount(rt: Runtime): Promise<void> {
  const deps = rt.workerDeps();
  await createQueues(rt.boss, rt.config);
  rt.onStop.push(await workQueues(deps));
  await syncSchedules(deps.db, deps.boss, deps.config);
  await applyRules(deps);
}
