// What every aggregate of the account shares: the store and clock, the running operation (its events, fired
// once each after it succeeded, and the cause of its stock moves), look-ups, 422 checks, and the one status
// helper that orders, purchase orders, fulfillments and returns all follow.
import { ApiFail, invalid, type Row, type Stock, type Store } from './store.ts';
import { RESOURCES } from './resources.ts';
import { ALL_EVENTS, profileEvents, type Profile } from './profile.ts';
import type { Clock } from './clock.ts';

export type Body = Record<string, any>;
export type Errors = Record<string, string[]>;

export const MAX_LINES_PER_REQUEST = 250;

/** The statuses a document may be created in, the moves a PUT may make, and the events of statuses reached. */
export interface Lifecycle {
  readonly created: readonly string[];
  readonly moves: Readonly<Record<string, readonly string[]>>;
  readonly reached?: Readonly<Record<string, string>>;
}

export class Core {
  readonly store: Store;
  readonly clock: Clock;
  readonly events: ReadonlySet<string>;
  private pending: Map<string, [string, number]> | null = null;
  /** What the running operation is (`order.create`, `order.fulfil`...): the cause of its stock moves. */
  private cause: string | null = null;
  /** True while seeding: no events at all. */
  muted = false;
  private readonly onEvent: (event: string, id: number) => void;
  private readonly nullsCache = new Map<string, Record<string, null>>();

  constructor(store: Store, clock: Clock, profile: Profile, onEvent: (event: string, id: number) => void) {
    this.store = store;
    this.clock = clock;
    this.events = profileEvents(profile);
    this.onEvent = onEvent;
  }

  /**
   * Runs one operation, named `cause` (`<resource>.<create|update|destroy|action>`, the cause of its stock
   * moves); its events are fired once each, after it succeeded.
   */
  run<T>(cause: string, fn: () => T): T {
    if (this.pending) return fn();
    this.pending = new Map();
    this.cause = cause;
    try {
      const out = fn();
      const fired = [...this.pending.values()];
      this.pending = null;
      for (const [e, id] of fired) this.onEvent(e, id);
      return out;
    } finally {
      this.pending = null;
      this.cause = null;
    }
  }

  fire(event: string, id: number): void {
    if (!ALL_EVENTS.has(event)) throw new Error(`sandbox bug: ${event} is neither a spec nor a documented event`);
    if (this.muted || !this.events.has(event)) return;
    if (this.pending) this.pending.set(`${event}:${id}`, [event, id]);
    else this.onEvent(event, id);
  }

  /** Logs a change of a variant's stock at a location (admin `stock_moves`), with the running operation. */
  recordMove(variantId: number, locationId: number, stock: Stock): void {
    if (!this.muted) this.store.recordMove(variantId, locationId, stock, this.clock.iso(), this.cause ?? 'unknown');
  }

  /** Every writable field of a resource as null: a new record renders all its fields. */
  nulls(plural: string): Record<string, null> {
    let n = this.nullsCache.get(plural);
    if (!n) this.nullsCache.set(plural, (n = Object.fromEntries(Object.keys(RESOURCES[plural]!.writable).map((k) => [k, null]))));
    return n;
  }
}

/** The base of each aggregate: the shared core's helpers under short names. */
export class Part {
  protected readonly core: Core;
  constructor(core: Core) {
    this.core = core;
  }
  get store(): Store {
    return this.core.store;
  }
  get clock(): Clock {
    return this.core.clock;
  }
  protected fire(event: string, id: number): void {
    this.core.fire(event, id);
  }
  now(): string {
    return this.clock.iso();
  }
  today(): string {
    return this.now().slice(0, 10);
  }
  protected stamp(): { created_at: string; updated_at: string } {
    const t = this.now();
    return { created_at: t, updated_at: t };
  }
  protected touch(row: Row): void {
    row.updated_at = this.now();
  }
  protected nulls(plural: string): Record<string, null> {
    return this.core.nulls(plural);
  }

  find(plural: string, id: number): Row {
    const row = this.store.table(plural)?.get(id);
    if (!row) throw new ApiFail(404, `${RESOURCES[plural]?.singular ?? plural} ${id} not found`);
    return row;
  }
  protected need(plural: string, id: unknown, field: string, errors: Errors): Row | undefined {
    if (id === undefined || id === null) return undefined;
    const row = typeof id === 'number' ? this.store.table(plural)?.get(id) : undefined;
    if (!row) (errors[field] ??= []).push('does not exist');
    return row;
  }
  protected check(errors: Errors): void {
    if (Object.keys(errors).length) throw invalid(errors);
  }

  /** An active currency by ISO code (any case), or an error on `currency_iso`. */
  protected currency(iso: unknown, errors: Errors): Row | undefined {
    const c = this.store.currencies.order.find((x) => x.iso === String(iso).toUpperCase() && x.status === 'active');
    if (!c) errors.currency_iso = ['does not match a currency; create the currency first'];
    return c;
  }

  // ---- the status helper -----------------------------------------------------------------------------------

  /** The status a create asks for (or `dflt`), checked against the lifecycle. */
  protected createdStatus(life: Lifecycle, requested: unknown, dflt: string, errors: Errors): string {
    const status = (requested as string | undefined) ?? dflt;
    if (!life.created.includes(status)) errors.status = [`must be ${life.created.join(' or ')} on creation`];
    return status;
  }
  /** A PUT's status change: allowed moves only (`hint` explains a refusal). */
  protected checkMove(life: Lifecycle, row: Row, to: unknown, errors: Errors, hint = ''): void {
    if (to === undefined || to === row.status) return;
    if (!(life.moves[row.status] ?? []).includes(to as string)) errors.status = [`cannot change from ${row.status} to ${to}${hint}`];
  }
  /**
   * Fires the event of a status the record has newly reached (`order.finalized`...), whichever path got it
   * there: every operation on the record ends here, so no path can miss or repeat one.
   */
  protected reached(life: Lifecycle, row: Row): void {
    if (row._status === row.status) return;
    row._status = row.status;
    const event = life.reached?.[row.status];
    if (event) this.fire(event, row.id);
  }
}
