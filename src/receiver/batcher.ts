// Group commit: requests arriving together share one transaction. Items wait until the oldest has waited
// `maxWaitMs` or `maxBatch` are queued, and while every commit slot is busy; what waited is then shared among
// the free slots (up to maxBatch each). Under load batches grow by themselves, when idle an item goes alone.
// How many slots there are is learnt from the commits themselves (slots.ts) unless fixed.
// An item not committed within `maxAgeMs` is refused (its request answers 503 in time); one timer watches the
// oldest item for all of them, since a timer and a promise race per request would cost measurable CPU.
import { CommitSlots } from './slots.ts';

export class BatcherClosed extends Error {
  constructor() {
    super('receiver is shutting down');
  }
}
export class BatcherOverloaded extends Error {
  constructor() {
    super('too many deliveries waiting for the database');
  }
}
export class BatcherTimeout extends Error {
  constructor(ms: number) {
    super(`not committed within ${ms} ms`);
  }
}

export interface BatcherOptions {
  /** Most items in one commit. */
  maxBatch: number;
  /** Longest an item waits for company before its commit starts, when a slot is free. */
  maxWaitMs: number;
  /** Most commits in flight at once. */
  concurrency: number;
  /** Learn how many of them pay (slots.ts), starting from one; false: always `concurrency`. */
  adaptive?: boolean;
  /** Items waiting beyond this are refused at once (the database is not keeping up). */
  maxPending: number;
  /** An item not committed this long after submit is rejected with BatcherTimeout (it may still commit later). */
  maxAgeMs: number;
}

export interface Batcher<T, R> {
  submit(item: T): Promise<R>;
  /** Items waiting plus items in commits in flight. */
  readonly pending: number;
  /** Commits that may run at once now (learnt when adaptive). */
  readonly slots: number;
  /** Refuses new items, commits every item already submitted, resolves when all commits are done. */
  close(): Promise<void>;
}

interface Waiting<T, R> {
  item: T;
  at: number;
  /** Answered: committed, failed or timed out. */
  settled: boolean;
  resolve(r: R): void;
  reject(e: unknown): void;
}

/** `commit` gets a batch and returns one result per item, in order; a throw fails every item in it. */
export function createBatcher<T, R>(commit: (items: T[]) => Promise<R[]>, opts: BatcherOptions): Batcher<T, R> {
  const slots = opts.adaptive ? new CommitSlots({ max: opts.concurrency }, performance.now()) : null;
  const limit = () => slots?.limit ?? opts.concurrency;
  const queue: Waiting<T, R>[] = [];
  let inFlight = 0;
  let inFlightItems = 0;
  let timer: NodeJS.Timeout | null = null;
  let closed = false;
  let idle: (() => void) | null = null;
  // Every unsettled item in submit order (so oldest first); settled ones leave from the front.
  const unsettled: Waiting<T, R>[] = [];
  let ageTimer: NodeJS.Timeout | null = null;

  const expire = () => {
    ageTimer = null;
    const cutoff = performance.now() - opts.maxAgeMs;
    while (unsettled.length && unsettled[0]!.at <= cutoff) settle(unsettled[0]!, undefined, new BatcherTimeout(opts.maxAgeMs));
    watchAge();
  };
  const watchAge = () => {
    if (ageTimer || !unsettled.length) return;
    ageTimer = setTimeout(expire, Math.max(1, Math.ceil(unsettled[0]!.at + opts.maxAgeMs - performance.now())));
  };
  // A late commit of an item already timed out changes nothing: its request has had its answer.
  const settle = (w: Waiting<T, R>, result: R | undefined, err?: unknown) => {
    if (w.settled) return;
    w.settled = true;
    if (err === undefined) w.resolve(result!);
    else w.reject(err);
    // Batches commit mostly in order: this keeps the list to the items actually outstanding.
    while (unsettled.length && unsettled[0]!.settled) unsettled.shift();
    if (!unsettled.length && ageTimer) {
      clearTimeout(ageTimer);
      ageTimer = null;
    }
  };

  const start = (batch: Waiting<T, R>[]) => {
    inFlight++;
    inFlightItems += batch.length;
    commit(batch.map((w) => w.item))
      .then(
        (results) => batch.forEach((w, i) => settle(w, results[i]!)),
        (err) => batch.forEach((w) => settle(w, undefined, err ?? new Error('commit failed'))),
      )
      .finally(() => {
        inFlight--;
        inFlightItems -= batch.length;
        slots?.committed(batch.length, performance.now());
        schedule();
        if (closed && !queue.length && !inFlight) idle?.();
      });
  };

  const schedule = () => {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    try {
      startWaiting();
    } finally {
      slots?.busy(queue.length > 0 && inFlight >= limit(), performance.now());
    }
  };
  const startWaiting = () => {
    while (queue.length && inFlight < limit()) {
      const waited = performance.now() - queue[0]!.at;
      if (!closed && queue.length < opts.maxBatch && waited < opts.maxWaitMs) {
        timer = setTimeout(schedule, Math.max(1, Math.ceil(opts.maxWaitMs - waited)));
        return;
      }
      // What waits is shared among the free slots: two half batches commit side by side on two backends
      // (and cores), where one whole batch would leave the other idle while this process waits for it.
      const free = limit() - inFlight;
      start(queue.splice(0, Math.min(opts.maxBatch, Math.ceil(queue.length / free))));
    }
  };

  return {
    submit(item) {
      if (closed) return Promise.reject(new BatcherClosed());
      if (queue.length >= opts.maxPending) return Promise.reject(new BatcherOverloaded());
      return new Promise<R>((resolve, reject) => {
        const w: Waiting<T, R> = { item, at: performance.now(), settled: false, resolve, reject };
        queue.push(w);
        unsettled.push(w);
        watchAge();
        if (queue.length === 1 || queue.length >= opts.maxBatch) schedule();
        else if (inFlight >= limit()) slots?.busy(true, w.at);
      });
    },
    get pending() {
      return queue.length + inFlightItems;
    },
    get slots() {
      return limit();
    },
    close() {
      closed = true;
      if (!queue.length && !inFlight) return Promise.resolve();
      const drained = new Promise<void>((resolve) => {
        idle = resolve;
      });
      schedule();
      return drained;
    },
  };
}
