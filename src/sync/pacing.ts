// Pacing: how long a drain of (connection, resource) waits for more marks before it reads — the coalescing
// window — so that the rate budget goes first to what a sales channel sees.
//
// The budget left until the window resets, less a fifth kept for sweeps, follow-up reads and pushes, is a rate
// of requests per second. `stock` reads (variants, bundle makeup) decide channel quantities: whenever they wait,
// they get STOCK_SHARE of that rate, however many other resources wait beside them. `documents` (orders,
// fulfilments, receipts) move stock only through variants whose own events say so, and `reference` data
// (customers, addresses) can wait: they share the rest by weight. Each resource reads about once per
// cost / (rate x its share) seconds, rounded up to a fixed step, where cost is what its drains have lately
// spent per read of up to 250 ids (an order's also reads its lines where lists carry no sideloads; more ids make
// more reads however long a drain waits, so only the cost of one counts). So while the budget is
// plentiful every window is short (1 s), and as it runs out the windows widen, reference data first and stock
// last. A burst is not slowed: the first drain of a quiet pair starts at once and reads everything pending.
import { CHANNEL_ORDER, freshnessOf, type Freshness } from '../catalog/index.ts';
import { effectiveReserve } from '../api/index.ts';
import { budgetWindow } from '../db/budgets.ts';
import type { Db } from '../db/index.ts';

/**
 * The part of the rate stock reads get while anything else waits too. Shared by weight among everything waiting,
 * a variant's part would shrink with every kind of document the account uses (the documented service has 17
 * routes), and channel quantities would lag the further behind the more kinds of document an account has.
 */
export const STOCK_SHARE = 0.8;

/** Weights within a tier, and between documents and reference data. */
export const WEIGHTS: Record<Freshness, number> = { stock: 12, documents: 2, reference: 0.5 };
// Read with stock but less often than variants (a bundle's makeup only for a new or changed bundle, a channel
// order only when it may have moved, a fulfilment per shipment): a variant's part of the stock share would
// otherwise halve whenever one of them waits too, and an equal part would lie idle.
const LIGHT_STOCK = new Set(['composition', CHANNEL_ORDER, 'fulfillment']);
const weightOf = (resource: string) => (LIGHT_STOCK.has(resource) ? 2 : WEIGHTS[freshnessOf(resource)]);

// pg-boss debounces per time slot of the given length: a length that changed with every call (7 s, 8 s, 7 s)
// would open a new slot, and so a new drain, each time. A few fixed steps keep the slots stable.
export const WINDOW_STEPS = [1, 2, 3, 4, 5, 8, 13, 20, 30, 45, 60, 90, 120];
/** The longest a coalescing window is: what a document's read may wait by design (the overview's documents lag). */
export const LONGEST_WINDOW_SECONDS = WINDOW_STEPS.at(-1)!;

/** What pacing looks at for one connection: its budget window and the resources sharing it. */
export interface PacingState {
  /** The service's limit per window (0: not known yet). */
  limit: number;
  remaining: number;
  /** Seconds until the budget window resets (null: not known yet, no answer seen). */
  toReset: number | null;
  /** Resources asked for or read in the last five minutes (by this process): those sharing the budget. */
  active: string[];
  /** Requests a read of up to 250 ids of each resource has lately cost, its lines included (absent: 1). */
  costs?: Record<string, number>;
}

/** The coalescing window of `resource`, in seconds, for a connection in `state`. Pure: see the module comment. */
export function drainWindow(state: PacingState, resource: string): number {
  if (state.toReset === null || state.toReset <= 0) return 1; // no window known, or a fresh one: read at once
  const rate = (0.8 * Math.max(state.remaining, 0)) / state.toReset;
  const sharing = [...new Set([...state.active, resource])];
  const stock = freshnessOf(resource) === 'stock';
  const tier = sharing.filter((r) => (freshnessOf(r) === 'stock') === stock);
  const tierShare = tier.length === sharing.length ? 1 : stock ? STOCK_SHARE : 1 - STOCK_SHARE;
  const share = (tierShare * weightOf(resource)) / tier.reduce((sum, r) => sum + weightOf(r), 0);
  // At least one request: a drain that cleared its rows without a read spent no budget, but its job and claim
  // still cost the database, and with hundreds of accounts shorter windows for such drains cost freshness.
  const cost = Math.max(state.costs?.[resource] ?? 1, 1);
  // Never longer than the time to the reset: the budget is whole again then.
  const wanted = Math.min(cost / Math.max(rate * share, 1e-3), state.toReset);
  return WINDOW_STEPS.find((s) => s >= wanted) ?? LONGEST_WINDOW_SECONDS;
}

// Resources this runtime asked drains for or drained lately, per connection: they share the budget for five
// minutes after (a resource read every few seconds is pending only now and then), with what their drains have
// lately cost. Kept in memory: pacing is a share of the budget, not a guarantee, and a look at the budget is
// then one primary-key read.
const RECENT_MS = 5 * 60_000;

// Deliveries arrive in batches that each ask for drains: one look at the budget per connection serves them all
// for a second, or for five while at least a third of a full budget is left (every window is then 1-2 s, and the
// client itself never lets a connection spend past its budget).
const CACHE_MS = 1000,
  PLENTY_CACHE_MS = 5000;

type Budget = { limit: number; remaining: number; toReset: number | null };

/** The budget as this runtime's drains' gate last wrote it, if within `maxAgeMs` (ClientState.budgetSeen). */
export type BudgetSeen = (connectionId: number, maxAgeMs: number) => Budget | null;

/** The pacing memory of one runtime (src/runtime.ts makes it): what its drains read lately and a short look at each budget. */
export class Pacing {
  readonly #db: Db;
  readonly #recent = new Map<number, Map<string, { at: number; cost?: number }>>();
  readonly #budgets = new Map<number, { at: number; until: number; budget: Budget | null }>();
  readonly #seen: BudgetSeen | undefined;

  /** `seen`: what a drain's own requests just showed of the budget, which spares the read after a drain. */
  constructor(db: Db, seen?: BudgetSeen) {
    this.#db = db;
    this.#seen = seen;
  }

  #entry(connectionId: number, resource: string, now: number) {
    let m = this.#recent.get(connectionId);
    if (!m) this.#recent.set(connectionId, (m = new Map()));
    const e = m.get(resource) ?? { at: now };
    e.at = now;
    m.set(resource, e);
    return e;
  }

  /** Notes that (connection, resource) is being read: it shares the budget for the next five minutes. */
  noteActive(connectionId: number, resource: string, now = Date.now()): void {
    this.#entry(connectionId, resource, now);
  }

  /** Notes what a read of up to 250 ids of (connection, resource) cost, in requests: a moving average. */
  noteCost(connectionId: number, resource: string, requests: number, now = Date.now()): void {
    const e = this.#entry(connectionId, resource, now);
    e.cost = e.cost === undefined ? requests : 0.7 * e.cost + 0.3 * requests;
  }

  #activeResources(connectionId: number, now: number): { active: string[]; costs: Record<string, number> } {
    const m = this.#recent.get(connectionId);
    const costs: Record<string, number> = {};
    if (!m) return { active: [], costs };
    for (const [r, e] of m) {
      if (now - e.at > RECENT_MS) m.delete(r);
      else if (e.cost !== undefined) costs[r] = e.cost;
    }
    if (!m.size) this.#recent.delete(connectionId);
    return { active: [...m.keys()], costs };
  }

  async state(connectionId: number): Promise<PacingState> {
    const now = Date.now();
    let hit = this.#budgets.get(connectionId);
    if (!hit || now >= hit.until) {
      const budget = this.#seen?.(connectionId, CACHE_MS) ?? (await budgetWindow(this.#db, connectionId));
      const plenty = budget !== null && budget.remaining >= 100;
      if (this.#budgets.size > 10_000) this.#budgets.clear();
      hit = { at: now, until: now + (plenty ? PLENTY_CACHE_MS : CACHE_MS), budget };
      this.#budgets.set(connectionId, hit);
    }
    const { active, costs } = this.#activeResources(connectionId, now);
    if (!hit.budget) return { limit: 0, remaining: 0, toReset: null, active, costs };
    const age = (now - hit.at) / 1000; // toReset as of now, not as of the read
    const { limit, remaining, toReset } = hit.budget;
    return { limit, remaining, toReset: toReset === null ? null : toReset - age, active, costs };
  }

  /** The coalescing window of (connection, resource) now, in seconds. */
  async windowSeconds(connectionId: number, resource: string): Promise<number> {
    return drainWindow(await this.state(connectionId), resource);
  }
}

// The reserve is for what channel quantities are made of: variants and a bundle's makeup. Fulfilments and channel
// orders are paced with stock but leave the reserve alone: spending it, they starved the variants' reads until the
// window reset (the order benchmark's stock p95 went from 7.5 s to 103 s at 10 operations a second).
const RESERVE_FOR = new Set(['variant', 'composition']);

/**
 * Whether a drain of `resource` should wait for the next window: the last `reserve` requests of a window are kept
 * for stock reads (and pushes), as sweeps may not take them either. Pacing spends at most four fifths of a window,
 * but a document's drain costs more than its own read (its lines, read apart where lists carry no sideloads), and
 * at high activity a window can run out before its reset: stock reads would then wait for the reset with
 * everything else. A held drain leaves its rows pending; the next mark or the maintenance minute asks for it again,
 * and it reads once the window has reset.
 */
export function heldForStock(state: PacingState, resource: string, reserve: number): boolean {
  if (!mayBeHeld(resource)) return false;
  if (state.toReset === null || state.toReset <= 0) return false;
  return state.remaining <= effectiveReserve(state.limit, reserve);
}

/** Whether a drain of `resource` can be held at all (so whether a look at the budget is needed first). */
export const mayBeHeld = (resource: string): boolean => !RESERVE_FOR.has(resource);
