// What the sync workers of one runtime keep in memory (src/runtime.ts creates it): the pacing memory, a short
// cache of connection statuses, and the clients drains and sweeps use. Nothing of it lives at module level, so
// two runtimes in one process (tests) share nothing by accident.
import { clientCache, ClientState, type ApiClient, type ClientDeps } from '../api/index.ts';
import { connectionStatus } from '../db/connections.ts';
import type { Db } from '../db/index.ts';
import { Pacing } from './pacing.ts';
import type { WorkerDeps } from '../queue/handler.ts';

// A connection's status, looked at by every drain: cached for two seconds (hundreds of connections make dozens of
// drains a second). A drain that starts just after a connection stopped is refused by the client's budget anyway
// (the reservation reads the status under the budget's lock), so the cache only decides how that drain ends.
const STATUS_MS = 2000;

export class ConnectionStatuses {
  readonly #db: Db;
  readonly #seen = new Map<number, { at: number; active: boolean }>();

  constructor(db: Db) {
    this.#db = db;
  }

  async active(id: number): Promise<boolean> {
    const now = Date.now();
    const hit = this.#seen.get(id);
    if (hit && now - hit.at < STATUS_MS) return hit.active;
    const active = (await connectionStatus(this.#db, id)) === 'active';
    if (this.#seen.size > 10_000) this.#seen.clear();
    this.#seen.set(id, { at: now, active });
    return active;
  }
}

export interface SyncState {
  pacing: Pacing;
  statuses: ConnectionStatuses;
  /** Clients of drains and of sweeps: see createSyncState. */
  drainClient: (connectionId: number) => Promise<ApiClient>;
  sweepClient: (connectionId: number) => Promise<ApiClient>;
  /** Gives back what the drains' and sweeps' gates hold of the budgets (ClientState.settle). */
  settle(): Promise<void>;
}

export function createSyncState(deps: Omit<ClientDeps, 'clients'>): SyncState {
  const drains = new ClientState();
  const sweeps = new ClientState();
  return {
    // The budget a drain's own requests just showed spares pacing a read after each drain.
    pacing: new Pacing(deps.db, (id, maxAgeMs) => drains.budgetSeen(id, maxAgeMs)),
    statuses: new ConnectionStatuses(deps.db),
    // Drains and sweeps get clients with gates of their own: a gate that mixes priorities can lose a
    // waiting request (a webhook read queued ahead of a sweep's read while the sweep's reservation was in
    // progress). Separate gates share the budget in PostgreSQL as separate processes do.
    drainClient: clientCache({ ...deps, clients: drains }),
    sweepClient: clientCache({ ...deps, clients: sweeps }),
    settle: async () => {
      await Promise.all([drains.settle(), sweeps.settle()]);
    },
  };
}

/** What sync's work needs beyond every handler's deps: the sync workers' memory of this process (drains, sweeps). */
export type SyncDeps = WorkerDeps & { sync: SyncState };
