// How many commits the receiver runs at once, learnt from what its commits achieve. Where a commit's flush is slow
// (the disk), commits side by side overlap their flushes and more slots store more; where it is fast, a commit is
// CPU (ours and PostgreSQL's), and fewer, larger batches spend less of it per delivery: one slot can store more
// than two. Which holds depends on the disk, the database's cores and what else runs, so it is measured, not set:
// while every slot is busy and deliveries wait (the only time the number matters), the deliveries stored per second
// are scored per number of slots, a neighbour is tried now and then, and the best scored is kept. Batch size
// follows: a commit takes what waits when its slot frees (up to WEBHOOK_BATCH_SIZE), so fewer slots, larger batches.

export interface SlotOptions {
  /** Most commits at once (WEBHOOK_COMMIT_CONCURRENCY). */
  max: number;
  /** Where to start (clamped to 1..max). */
  initial?: number;
  /** Length of a scoring period. */
  periodMs?: number;
  /** Every this many busy periods, one period tries a neighbour. */
  probeEvery?: number;
}

export class CommitSlots {
  readonly max: number;
  #limit: number;
  #periodMs: number;
  #probeEvery: number;
  /** Deliveries stored per ms while saturated, smoothed, per number of slots. */
  #score = new Map<number, number>();
  #periodStart: number;
  #items = 0;
  #busyMs = 0;
  #busySince: number | null = null;
  #busyPeriods = 0;
  /** The limit to return to after a probe period. */
  #probing: number | null = null;
  #probeUp = true;

  constructor(opts: SlotOptions, now: number) {
    this.max = Math.max(1, opts.max);
    this.#limit = Math.min(this.max, Math.max(1, opts.initial ?? 1));
    this.#periodMs = opts.periodMs ?? 500;
    this.#probeEvery = opts.probeEvery ?? 6;
    this.#periodStart = now;
  }

  /** Commits that may run at once now. */
  get limit(): number {
    return this.#limit;
  }

  /** Deliveries stored per second while saturated, by number of slots (for logs and tests). */
  get scores(): Record<number, number> {
    return Object.fromEntries([...this.#score].map(([k, v]) => [k, Math.round(v * 1000)]));
  }

  /** Whether every slot is busy with deliveries waiting: called by the batcher whenever that may have changed. */
  busy(saturated: boolean, now: number): void {
    if (saturated && this.#busySince === null) this.#busySince = now;
    else if (!saturated && this.#busySince !== null) {
      this.#busyMs += now - this.#busySince;
      this.#busySince = null;
    }
  }

  /** A commit of `items` deliveries ended. */
  committed(items: number, now: number): void {
    this.#items += items;
    if (now - this.#periodStart >= this.#periodMs) this.#endPeriod(now);
  }

  #endPeriod(now: number): void {
    const length = now - this.#periodStart;
    const busy = this.#busyMs + (this.#busySince === null ? 0 : now - this.#busySince);
    const saturated = busy >= length / 2;
    if (saturated) {
      const rate = this.#items / length;
      const before = this.#score.get(this.#limit);
      this.#score.set(this.#limit, before === undefined ? rate : 0.7 * before + 0.3 * rate);
      this.#busyPeriods++;
    }
    this.#periodStart = now;
    this.#items = 0;
    this.#busyMs = 0;
    if (this.#busySince !== null) this.#busySince = now;
    if (!saturated) return;
    if (this.#probing !== null) {
      // The probe is scored: keep whichever of the two did better.
      const home = this.#probing;
      this.#probing = null;
      if ((this.#score.get(home) ?? 0) >= (this.#score.get(this.#limit) ?? 0)) this.#limit = home;
      return;
    }
    if (this.#busyPeriods % this.#probeEvery === 0) {
      const up = this.#limit + 1 <= this.max;
      const down = this.#limit - 1 >= 1;
      if (!up && !down) return;
      const step = (this.#probeUp && up) || !down ? 1 : -1;
      this.#probeUp = !this.#probeUp;
      this.#probing = this.#limit;
      this.#limit += step;
    }
  }
}
