// Pacing: how long a drain of (connection, resource) waits for more marks before it reads — the coalescing
// window — so that the rate budget goes first to what a sales channel sees.
//
// The budget left until the window resets, less a fifth kept for sweeps, follow-up reads and pushes, is a rate
// of requests per second. The resources waiting share it by weight: `stock` reads (variants, bundle makeup)
// decide channel quantities and get most of it; `documents` (orders, fulfilments, receipts) move stock only
// through variants whose own events say so; `reference` data (customers, addresses) can wait. Each resource
// reads about once per 1 / (rate x its share) seconds, rounded up to a fixed step. So while the budget is
// plentiful every window is short (1 s), and as it runs out the windows widen, reference data first and stock
// last. A burst is not slowed: the first drain of a quiet pair starts at once and reads everything pending.
import { catalog, type Freshness } from '../catalog/index.ts';
import { budgetWindow } from '../db/budgets.ts';
import type { Db } from '../db/index.ts';
import { pendingResources } from '../db/pending.ts';

/** Share of the budget per resource waiting, by freshness: stock reads get most of it. */
export const WEIGHTS: Record<Freshness, number> = { stock: 12, documents: 2, reference: 0.5 };

// pg-boss debounces per time slot of the given length: a length that changed with every call (7 s, 8 s, 7 s)
// would open a new slot, and so a new drain, each time. A few fixed steps keep the slots stable.
export const WINDOW_STEPS = [1, 2, 3, 4, 5, 8, 13, 20, 30, 45, 60];

/** What pacing looks at for one connection. */
export interface BudgetState {
  remaining: number;
  /** Seconds until the budget window resets (null: not known yet, no answer seen). */
  toReset: number | null;
  /** Resources waiting to be read or read in the last five minutes: those sharing the budget. */
  active: string[];
}

/** The freshness of a resource name a pending fetch may carry (composition: a bundle's makeup, stock). */
export function freshnessOf(resource: string): Freshness {
  return resource === 'composition' ? 'stock' : (catalog[resource]?.freshness ?? 'reference');
}

/** The coalescing window of `resource`, in seconds, for a connection in `state`. Pure: see the module comment. */
export function drainWindow(state: BudgetState, resource: string): number {
  if (state.toReset === null || state.toReset <= 0) return 1; // no window known, or a fresh one: read at once
  const rate = (0.8 * Math.max(state.remaining, 0)) / state.toReset;
  const sharing = new Set([...state.active, resource]);
  const total = [...sharing].reduce((sum, r) => sum + WEIGHTS[freshnessOf(r)], 0);
  const share = WEIGHTS[freshnessOf(resource)] / total;
  const wanted = 1 / Math.max(rate * share, 1e-3);
  return WINDOW_STEPS.find((s) => s >= wanted) ?? 60;
}

// Resources this process drained lately, per connection: they still share the budget for five minutes after
// their last read (a resource read every few seconds is pending only now and then).
const RECENT_MS = 5 * 60_000;
const recent = new Map<number, Map<string, number>>();

/** Notes a drain of (connection, resource): it shares the budget for the next five minutes. */
export function noteRead(connectionId: number, resource: string, now = Date.now()): void {
  let m = recent.get(connectionId);
  if (!m) recent.set(connectionId, (m = new Map()));
  m.set(resource, now);
}

function recentlyRead(connectionId: number, now: number): string[] {
  const m = recent.get(connectionId);
  if (!m) return [];
  for (const [r, at] of m) if (now - at > RECENT_MS) m.delete(r);
  if (!m.size) recent.delete(connectionId);
  return [...m.keys()];
}

// Deliveries arrive in batches that each ask for drains: one look at the budget per connection and second
// serves them all, rather than a query per drain asked for.
const CACHE_MS = 1000;
const cache = new Map<number, { at: number; state: BudgetState }>();

export async function budgetState(db: Db, connectionId: number): Promise<BudgetState> {
  const now = Date.now();
  const hit = cache.get(connectionId);
  if (hit && now - hit.at < CACHE_MS) return hit.state;
  const [budget, pending] = await Promise.all([budgetWindow(db, connectionId), pendingResources(db, connectionId)]);
  const active = [...new Set([...pending, ...recentlyRead(connectionId, now)])];
  const state: BudgetState = budget ? { ...budget, active } : { remaining: 0, toReset: null, active };
  if (cache.size > 10_000) cache.clear();
  cache.set(connectionId, { at: now, state });
  return state;
}

/** The coalescing window of (connection, resource) now, in seconds. */
export async function drainWindowSeconds(db: Db, connectionId: number, resource: string): Promise<number> {
  return drainWindow(await budgetState(db, connectionId), resource);
}
