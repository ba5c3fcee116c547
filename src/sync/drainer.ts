// The drainer: a worker process's drains, taken straight from their table (drain_pairs, src/db/drain-pairs.ts)
// instead of one pg-boss job each. Every POLL_MS, while it has a free slot, it claims due pairs of every
// connection in one statement (stock first, then the pair that waited longest), and drains each (drain.ts); at the
// end a pair's claim goes back with its next coalescing window (src/sync/pacing.ts). A claim that filled every free
// slot is followed by another as soon as a slot frees. Several workers share the table: a pair is drained by one
// of them at a time; a drainer renews its claims while it drains, so a killed worker's claims lapse within half a minute
// and another worker takes them over (src/db/drain-pairs.ts).
import { randomUUID } from 'node:crypto';
import { announceChanges } from '../channels/dispatch.ts';
import {
  claimPairs,
  PAIR_RENEW_SECONDS,
  releasePair,
  releaseWorkerPairs,
  renewPairs,
  type ClaimedPair,
  type PairOutcome,
} from '../db/drain-pairs.ts';
import { errorSummary } from '../db/index.ts';
import { rulesFrom } from '../stock/rules.ts';
import type { SyncDeps } from './state.ts';
import { BATCH, drainPending } from './drain.ts';
import { heldForStock, mayBeHeld } from './pacing.ts';

/** How often an idle drainer looks for due pairs: the most a mark waits beyond its window. */
export const POLL_MS = 250;

const STOP_WAIT_MS = 10_000;

export class Drainer {
  /** This process's name in drain_pairs.claimed_by. */
  readonly worker = `${process.pid}-${randomUUID()}`;
  readonly #deps: SyncDeps;
  readonly #slots: number;
  readonly #pollMs: number;
  /** The drains running, and the pair each holds. */
  readonly #running = new Map<Promise<void>, ClaimedPair>();
  #timer: NodeJS.Timeout | null = null;
  #renewTimer: NodeJS.Timeout | null = null;
  #claiming = false;
  #stopped = false;
  /** The last claim filled every free slot: more may be due. */
  #full = false;
  /** A claim failed and was reported; the next failures stay quiet until one succeeds. */
  #failing = false;

  constructor(deps: SyncDeps, opts: { slots: number; pollMs?: number }) {
    this.#deps = deps;
    this.#slots = opts.slots;
    this.#pollMs = opts.pollMs ?? POLL_MS;
  }

  start(): void {
    this.#timer = setInterval(() => void this.#claim(), this.#pollMs);
    this.#timer.unref();
    this.#renewTimer = setInterval(() => void this.#renew(), PAIR_RENEW_SECONDS * 1000);
    this.#renewTimer.unref();
    void this.#claim();
  }

  /**
   * Stops claiming, waits up to STOP_WAIT_MS for the drains running (one waiting for the budget's reset could take
   * minutes), and gives back every claim left: the pairs are due at once for the other workers.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    const waited = new Promise<void>((r) => setTimeout(r, STOP_WAIT_MS).unref());
    await Promise.race([Promise.allSettled([...this.#running.keys()]), waited]);
    if (this.#renewTimer) clearInterval(this.#renewTimer);
    await releaseWorkerPairs(this.#deps.db, this.worker).catch(() => {});
  }

  /** Keeps the claims of the drains running (one waiting for the budget's reset runs for minutes). */
  async #renew(): Promise<void> {
    if (!this.#running.size) return;
    await renewPairs(this.#deps.db, this.worker, [...this.#running.values()]).catch((err) =>
      // The database is likely away: the claims lapse, and whoever claims them next reads the rows again.
      this.#deps.log.warn({ err: errorSummary(err) }, 'could not renew the drains claimed'),
    );
  }

  async #claim(): Promise<void> {
    if (this.#stopped || this.#claiming) return;
    this.#claiming = true;
    try {
      const free = this.#slots - this.#running.size;
      if (free <= 0) return;
      const pairs = await claimPairs(this.#deps.db, this.worker, free);
      if (this.#failing) this.#deps.log.info('drains claimed again');
      this.#failing = false;
      this.#full = pairs.length === free;
      for (const pair of pairs) {
        const run = this.#drain(pair).finally(() => {
          this.#running.delete(run);
          if (this.#full) void this.#claim();
        });
        this.#running.set(run, pair);
      }
    } catch (err) {
      // The database is likely away: the next poll tries again; nothing was claimed.
      if (!this.#failing) this.#deps.log.warn({ err: errorSummary(err) }, 'could not claim drains; trying again every poll');
      this.#failing = true;
    } finally {
      this.#claiming = false;
    }
  }

  async #drain(pair: ClaimedPair): Promise<void> {
    const { db, log } = this.#deps;
    let out: PairOutcome;
    try {
      out = await drainPair(this.#deps, pair.connectionId, pair.resource);
    } catch (err) {
      // Its rows went back unclaimed and its error is in the sync log (drain.ts): the pair waits 2, 4 ... s.
      log.warn({ err: errorSummary(err), connectionId: pair.connectionId, resource: pair.resource }, 'drain failed');
      out = { drained: false, failed: true, seconds: 0 };
    }
    await releasePair(db, this.worker, pair, out).catch((err) =>
      // The claim lapses within half a minute, as the renewals stop.
      log.warn({ err: errorSummary(err), connectionId: pair.connectionId, resource: pair.resource }, 'could not release a drain'),
    );
  }
}

/**
 * Drains the pending fetches of (connection, resource) once, and says when its next drain may start: at once
 * when it stopped at its batch bound with rows left, after the rest of the rate window when the window's last
 * requests are kept for stock, else after its coalescing window.
 */
export async function drainPair(deps: SyncDeps, connectionId: number, resource: string): Promise<PairOutcome> {
  const { db, config, log, sync } = deps;
  // Stock is never held: no look at the budget first (the one after the drain comes from its own requests).
  const state = mayBeHeld(resource) ? await sync.pacing.state(connectionId) : null;
  if (state && heldForStock(state, resource, config.BUDGET_RESERVE)) {
    log.debug({ connectionId, resource }, 'drain held: the rest of the rate window is kept for stock reads');
    return { drained: false, failed: false, seconds: Math.max(1, Math.ceil(state.toReset ?? 1)) };
  }
  const client = await sync.drainClient(connectionId);
  sync.pacing.noteActive(connectionId, resource);
  const out = await drainPending(
    { db, log, client, rules: rulesFrom(config), jobId: randomUUID(), clockMarginMs: config.SERVICE_CLOCK_MARGIN_SECONDS * 1000 },
    resource,
  );
  // What a read of up to BATCH ids cost (its lines too): more ids make more reads however long a drain waits.
  sync.pacing.noteCost(connectionId, resource, out.requests / Math.max(1, Math.ceil(out.read / BATCH)));
  await announceChanges(deps, [...out.changes, ...out.orderEvents.map((id) => ({ channel_id: id }))]);
  log.debug(
    { connectionId, resource, read: out.read, requests: out.requests, applied: out.applied, changes: out.changes.length },
    'drained',
  );
  if (out.more) return { drained: false, failed: false, seconds: 0 };
  return { drained: true, failed: false, seconds: await sync.pacing.windowSeconds(connectionId, resource) };
}
