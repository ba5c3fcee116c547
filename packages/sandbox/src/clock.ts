// Sandbox time: real time multiplied by a scale, or a manual clock that moves only when told.
// Every sandbox rule about time (rate windows, token expiry, retry backoff, the 3-day rule, idempotency key
// lifetime) reads this clock, so they all shrink together under a time scale.
export class Clock {
  readonly scale: number;
  readonly manual: boolean;
  private baseReal: number;
  private baseSandbox: number;
  private listeners: (() => void)[] = [];

  constructor(scale = 1, manual = false, start = Date.now()) {
    if (!(scale > 0)) throw new Error('time scale must be a positive number');
    this.scale = scale;
    this.manual = manual;
    this.baseReal = Date.now();
    this.baseSandbox = start;
  }

  /** Sandbox time, epoch milliseconds (whole ms). */
  now(): number {
    if (this.manual) return this.baseSandbox;
    return Math.floor(this.baseSandbox + (Date.now() - this.baseReal) * this.scale);
  }

  iso(ms = this.now()): string {
    return new Date(ms).toISOString();
  }

  /** Real epoch ms at which the sandbox clock will read `sandboxMs` (manual clock: as if at scale 1). */
  toReal(sandboxMs: number): number {
    if (this.manual) return Date.now() + (sandboxMs - this.baseSandbox);
    return this.baseReal + (sandboxMs - this.baseSandbox) / this.scale;
  }

  /** Real milliseconds until sandbox time `sandboxMs`; null on a manual clock (it never gets there alone). */
  realDelay(sandboxMs: number): number | null {
    if (this.manual) return null;
    return Math.max(0, (sandboxMs - this.now()) / this.scale);
  }

  advance(seconds: number): number {
    this.rebase(this.now() + seconds * 1000);
    return this.now();
  }

  set(ms: number): number {
    this.rebase(ms);
    return this.now();
  }

  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  private rebase(ms: number): void {
    this.baseReal = Date.now();
    this.baseSandbox = ms;
    for (const fn of this.listeners) fn();
  }
}
