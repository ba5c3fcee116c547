// In one process, the requests of one connection queue here in priority order (then arrival order), and
// only the first of them asks the database for a slot: however many callers wait, a process polls the budget
// with one query at a time, and a better-ranked arrival wakes the poller at once. Granted requests run in a
// p-queue that bounds the requests in flight per process (API_CONCURRENCY); a slot is reserved only when the
// p-queue can start the request at once, so a lease is never held while queueing locally.
import { randomUUID } from 'node:crypto';
import PQueue from 'p-queue';
import type { Db } from '../db/index.ts';
import { clearWaiter, release, reserve, type BudgetSettings, type RateHeaders, type RememberedBudget } from './budget.ts';

export interface GateOptions {
  db: Db;
  connectionId: number;
  settings: BudgetSettings;
  concurrency: number;
  /** The error given to every waiter when the connection is no longer active (lapsed, unauthorized...). */
  stopped(status: string, reason: string | null): Error;
  /** Told how much of the window is left after each reservation. */
  onAvailable?(available: number): void;
}

interface Waiter {
  rank: number;
  task: (leaseId: number) => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export class BudgetGate {
  readonly queue: PQueue;
  /** This process's name in api_budget_waiters. */
  readonly waiterId = `${process.pid}-${randomUUID()}`;
  #opts: GateOptions;
  #waiters: Waiter[] = [];
  #pumping = false;
  #registered = false;
  #sleepingRank = Infinity;
  #wake: (() => void) | null = null;
  /** The budget row as this process last wrote it: reservations and releases decide from it (api/budget.ts). */
  readonly #memo: RememberedBudget = { row: null, at: 0 };

  constructor(opts: GateOptions) {
    this.#opts = opts;
    this.queue = new PQueue({ concurrency: opts.concurrency });
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** Runs `task` with a lease of the shared budget once one is granted to `rank` (0 best). */
  run<T>(rank: number, task: (leaseId: number) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let at = this.#waiters.findIndex((w) => w.rank > rank);
      if (at < 0) at = this.#waiters.length;
      this.#waiters.splice(at, 0, { rank, task, resolve: resolve as (v: unknown) => void, reject });
      if (rank < this.#sleepingRank) this.#wake?.();
      void this.#pump();
    });
  }

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    const { db, connectionId, settings } = this.#opts;
    try {
      while (this.#waiters.length) {
        await this.#capacity();
        const head = this.#waiters[0]!;
        // A better-ranked waiter may be inserted in front of head while we await: remove head itself.
        const dequeue = () => this.#waiters.splice(this.#waiters.indexOf(head), 1);
        let r;
        try {
          r = await reserve(db, connectionId, head.rank, this.waiterId, settings, this.#memo);
        } catch (err) {
          // The database is the budget: without it nothing may be sent.
          dequeue();
          head.reject(err);
          continue;
        }
        if (r.ok) {
          this.#registered = false;
          dequeue();
          this.#opts.onAvailable?.(r.available);
          this.queue.add(() => head.task(r.leaseId), { priority: -head.rank }).then(head.resolve, head.reject);
          continue;
        }
        if (r.stopped) {
          this.#registered = false;
          const err = this.#opts.stopped(r.status, r.reason);
          for (const w of this.#waiters.splice(0)) w.reject(err);
          break;
        }
        this.#registered = true;
        this.#opts.onAvailable?.(r.available);
        await this.#sleep(r.waitMs, head.rank);
      }
      if (this.#registered) {
        this.#registered = false;
        this.#memo.row = null; // the waiter's removal moves the row's version
        await clearWaiter(db, connectionId, this.waiterId).catch(() => {});
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Returns a lease with the answer's status (null: no answer) and rate headers. */
  release(leaseId: number, status: number | null, headers: RateHeaders | null): Promise<{ available: number; accountingError: boolean }> {
    return release(this.#opts.db, this.#opts.connectionId, leaseId, status, headers, this.#memo);
  }

  /** Resolves when the p-queue can start one more request now. */
  async #capacity(): Promise<void> {
    while (this.queue.pending + this.queue.size >= this.queue.concurrency) {
      await new Promise<void>((r) => this.queue.addEventListener('next', () => r(), { once: true }));
    }
  }

  #sleep(ms: number, rank: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = null;
        this.#sleepingRank = Infinity;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
      this.#sleepingRank = rank;
    });
  }
}
