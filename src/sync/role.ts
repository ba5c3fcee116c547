// The worker role: the sync workers on the shared runtime (see worker.ts).
import type { Runtime } from '../runtime.ts';
import { startSyncWorkers } from './worker.ts';

export async function mount(rt: Runtime): Promise<void> {
  await startSyncWorkers({ db: rt.database.db, boss: rt.boss, config: rt.config, log: rt.log });
}
