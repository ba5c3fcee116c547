// In one process, the requests of one connection queue here in priority order (then arrival order), and
// only the first of them asks the database for slots: however many callers wait, a process polls the budget
// with one query at a time, and a better-ranked arrival wakes the poller at once. Granted requests run in a
// p-queue that bounds the requests in flight per process (API_CONCURRENCY); slots are leased only when the
// p-queue can start a request at once.
//
// The budget in slices: the gate leases what its waiters need plus one (a connection's drains come in runs; the
// spare only far from the window's end) in one statement, at most SLICE, and settles later: the answers of its requests and the slots it did not use go back
// in the statement that takes the next slice, or SETTLE_MS after the last answer. Until then they count as in
// flight for every process, so no process ever spends past the service's limit; a 429, or an answer near the
// window's end, is settled at once.
import { randomUUID } from 'node:crypto';
import PQueue from 'p-queue';
import type { Db } from '../db/index.ts';
import { clearWaiter, exchange, lastSlots, type Answer, type BudgetSettings, type RateHeaders, type RememberedBudget } from './budget.ts';

/** The most slots a gate leases at once. */
const SLICE = 4;
/** How long answers and unused slots stay with the gate, when nothing else carries them back. */
const SETTLE_MS = 250;

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
  /** Slots leased and not yet used. */
  #held: number[] = [];
  /** Answers not yet settled with the budget row. */
  #answers: Answer[] = [];
  #settling: NodeJS.Timeout | null = null;
  /** What the budget had left at the last look (for the metric). */
  #available = 0;

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
        const leaseId = this.#held.shift();
        if (leaseId !== undefined) {
          dequeue();
          this.queue.add(() => head.task(leaseId), { priority: -head.rank }).then(head.resolve, head.reject);
          continue;
        }
        const answers = this.#answers.splice(0);
        const want = Math.min(SLICE, this.#waiters.length + (this.#spareAllowed() ? 1 : 0));
        let r;
        try {
          r = await exchange(db, connectionId, { answers, want, rank: head.rank, waiter: this.waiterId }, settings, this.#memo);
        } catch (err) {
          // The database is the budget: without it nothing may be sent. The answers wait for the next write.
          this.#answers.unshift(...answers);
          dequeue();
          head.reject(err);
          continue;
        }
        if (r.ok) {
          this.#registered = false;
          this.#held.push(...r.leaseIds);
          this.#note(r.available);
          continue;
        }
        if (r.stopped) {
          this.#registered = false;
          const err = this.#opts.stopped(r.status, r.reason);
          for (const w of this.#waiters.splice(0)) w.reject(err);
          break;
        }
        this.#registered = true;
        this.#note(r.available);
        await this.#sleep(r.waitMs, head.rank);
      }
      if (this.#registered) {
        this.#registered = false;
        this.#memo.row = null; // the waiter's removal moves the row's version
        await clearWaiter(db, connectionId, this.waiterId).catch(() => {});
      }
    } finally {
      this.#pumping = false;
      this.#settleSoon();
    }
  }

  /**
   * The budget as this process last wrote it, if within `maxAgeMs` (null: not known here, or older): what pacing
   * needs without a read (src/sync/pacing.ts). Answers not yet settled are not in it.
   */
  seen(maxAgeMs: number): { limit: number; remaining: number; toReset: number | null } | null {
    const row = this.#memo.row;
    const age = performance.now() - this.#memo.at;
    if (!row || age > maxAgeMs) return null;
    const now = row.now.getTime() + age;
    return { limit: row.request_limit, remaining: row.remaining, toReset: row.reset_known ? (row.reset_at.getTime() - now) / 1000 : null };
  }

  /**
   * A spare slot is leased only while the window is far from its end: it is sent up to SETTLE_MS after it was
   * decided, and near the end another spender may have taken it meanwhile (src/api/budget.ts, lastSlots).
   */
  #spareAllowed(): boolean {
    const limit = this.#memo.row?.request_limit;
    return limit !== undefined && this.#available > 3 * lastSlots(limit);
  }

  #note(available: number): void {
    this.#available = available;
    this.#opts.onAvailable?.(available);
  }

  /**
   * Takes a request's answer (status null: none) and rate headers. Any answer goes back with the next slice, or
   * within SETTLE_MS; a 429 at once, and so does a 401 or 402 with the slots held, so the next request asks the
   * row, which knows whether the connection is still active. So does an answer near the window's end (what is left
   * within 3 x lastSlots): there the row's count decides whether requests may go together (decide in budget.ts),
   * and one settled 250 ms late let two go together into a window another spender had just emptied (two 429s).
   */
  async release(
    leaseId: number,
    status: number | null,
    headers: RateHeaders | null,
  ): Promise<{ available: number; accountingError: boolean }> {
    this.#answers.push({ leaseId, status, headers });
    const limit = headers?.limit ?? this.#memo.row?.request_limit;
    const nearEnd = headers?.remaining != null && limit != null && headers.remaining <= 3 * lastSlots(limit);
    if (status !== 429 && status !== 401 && status !== 402 && !nearEnd) {
      this.#settleSoon();
      return { available: this.#available, accountingError: false };
    }
    await this.#settle(true);
    return { available: this.#available, accountingError: status === 429 };
  }

  /** Gives back every answer and every slot held now (a process stopping: src/runtime.ts). */
  async settle(): Promise<void> {
    if (this.#settling) clearTimeout(this.#settling);
    this.#settling = null;
    await this.#settle(true);
  }

  #settleSoon(): void {
    if (this.#settling || (!this.#answers.length && !this.#held.length)) return;
    this.#settling = setTimeout(() => {
      this.#settling = null;
      this.#settle(false).catch(() => {}); // a lease not given back expires on its own
    }, SETTLE_MS);
    this.#settling.unref();
  }

  /** Gives back the answers, and the unused slots: `all`, or unless a waiter will take them. */
  async #settle(all: boolean): Promise<void> {
    const unused = all || !this.#waiters.length ? this.#held.splice(0) : [];
    const answers = this.#answers.splice(0);
    if (!unused.length && !answers.length) return;
    const { db, connectionId, settings } = this.#opts;
    try {
      const r = await exchange(db, connectionId, { answers, unused, want: 0, rank: 0, waiter: this.waiterId }, settings, this.#memo);
      if (r.ok) this.#note(r.available);
    } catch (err) {
      this.#answers.unshift(...answers);
      this.#held.unshift(...unused);
      this.#settleSoon();
      throw err;
    }
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
