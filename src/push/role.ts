// The push workers as part of the worker role (src/start.ts runs this next to src/sync/role.ts).
import type { Runtime } from '../runtime.ts';
import { startPushWorker } from './worker.ts';

export async function mount(rt: Runtime): Promise<void> {
  await startPushWorker(rt);
}
