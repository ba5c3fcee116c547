// Job data of the sync queues and the helpers that send them.
import type { Boss } from '../queue/boss.ts';
import { queues } from '../queue/names.ts';

export interface FetchJob { connectionId: number; resource: string }
export interface ReconcileJob { connectionId: number; full: boolean }
export interface MaintenanceJob { task: 'prune-sync-log' | 'schedules' | 'pending' | 'probe-lapsed' }

/** Seconds a drain waits for more marks of its (connection, resource) before reading: the coalescing window. */
export const DRAIN_WINDOW_SECONDS = 1;

/**
 * Asks for a drain of (connection, resource). Debounced per pair: at most one job per window plus one
 * for the next window, so a burst of deliveries makes one drain and a mark made while a drain runs is
 * always followed by another. The group keeps one busy connection from taking every worker slot.
 */
export async function requestDrain(boss: Boss, connectionId: number, resource: string): Promise<void> {
  await boss.sendDebounced(queues.fetch, { connectionId, resource } satisfies FetchJob, { group: { id: String(connectionId) } },
    DRAIN_WINDOW_SECONDS, `${connectionId}:${resource}`);
}

export async function requestSweep(boss: Boss, connectionId: number, full: boolean): Promise<string | null> {
  return boss.send(queues.reconcile, { connectionId, full } satisfies ReconcileJob, { group: { id: String(connectionId) } });
}
