// The worker role: every queue's handler (handlers.ts) and the drainer on the shared runtime, then the schedules
// and the channel rules; a worker process also evaluates the alerts (src/alerts/role.ts, in `modules`). Several
// processes share the work through pg-boss and drain_pairs.
import * as alertsRole from '../alerts/role.ts';
import { createQueues } from '../queue/queues.ts';
import type { RoleModule, Runtime } from '../runtime.ts';
import { Drainer } from '../sync/drainer.ts';
import { checkAccounts } from '../sync/account.ts';
import { applyRules } from '../sync/maintenance.ts';
import { syncSchedules } from '../sync/schedules.ts';
import { workQueues } from './handlers.ts';

export async function mount(rt: Runtime): Promise<void> {
  const deps = rt.workerDeps();
  // Before any queue works: a connection whose account is not its mirror's must not send a thing.
  await checkAccounts(deps);
  await createQueues(rt.boss, rt.config);
  rt.onStop.push(await workQueues(deps));
  // Drains mostly wait on the API, so there are twice WORKER_CONCURRENCY of them at once.
  const drainer = new Drainer(deps, { slots: deps.config.WORKER_CONCURRENCY * 2 });
  drainer.start();
  rt.onStop.push(() => drainer.stop());
  await syncSchedules(deps.db, deps.boss, deps.config);
  await applyRules(deps);
}

/** What a process of the worker role mounts: the workers, then the alerts they evaluate. */
export const modules: RoleModule[] = [{ mount }, alertsRole];
