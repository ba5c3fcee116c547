// The rate budget of one connection, kept in PostgreSQL (api_budgets) and shared by every process.
// A request is sent only after reserve() granted it a lease; release() returns the lease with what the
// answer's X-Rate-Limit-* headers said. The decisions are pure functions (tested alone); the database
// functions apply them under the budget row's lock so processes never double-spend a slot.
//
// Model: `remaining` is the service's own count for the current window (the lowest X-Rate-Limit-Remaining
// seen, since that count only falls within a window); every request sent but not yet answered is a live
// lease and may or may not be in that count yet, so what we may still send is remaining - leases.
// That count is the application's and account's, not ours: every script and deployment using the same
// application on the same account spends it too (real-service-notes section 7), and nothing tells us about
// their requests until our next answer. So where requests spent elsewhere since our last answer may have taken
// what is left (the end of a window, a count grown old, a new window before its first answer), requests go one
// at a time: a race lost there costs one 429, not one per request in flight, and the window is then spent
// until its reset. How fast the others spend is measured from the counts themselves (applyAnswer: the drop between
// two of our answers, less our own requests counted in between), not assumed.
import { deleteWaiter, readBudget, writeBudget, type BudgetRecord, type BudgetWrite, type Lease } from '../db/budgets.ts';
import type { Db } from '../db/index.ts';
import { priorityRank } from './types.ts';

export interface BudgetState {
  limit: number;
  remaining: number;
  /** Epoch ms at which the service's window resets. */
  resetAt: number;
  /** resetAt came from the service (false: unknown since the last reset, or never heard). */
  resetKnown: boolean;
  /** Epoch ms at which the service's count (`remaining`) was last heard; absent: just now. */
  countedAt?: number;
  /**
   * Requests per ms the other clients of the application spent at the last measurement (absent: not measured yet).
   * Kept across windows: a script's pace outlives the window it was measured in.
   */
  others?: number;
  /** The count of this window the next measurement runs from (absent: none yet, see applyAnswer). */
  sample?: Sample;
}

/** A count heard (remaining at epoch ms `at`) and how many of our answers were counted below it since (`own`). */
export interface Sample {
  remaining: number;
  at: number;
  own: number;
}

export interface RateHeaders {
  limit: number | null;
  remaining: number | null;
  reset: number | null;
}

export type Decision = { ok: true } | { ok: false; waitMs: number; reason: 'spent' | 'reserve' | 'priority' | 'one-at-a-time' };

const jitter = (min: number, max: number) => min + Math.floor(Math.random() * (max - min));

/** X-Rate-Limit-* of an answer; reset as epoch ms. Missing or malformed values are null. */
export function rateHeaders(headers: Headers): RateHeaders | null {
  const num = (name: string) => {
    const v = headers.get(name);
    if (v === null || v.trim() === '') return null;
    const n = Number(v);
    return Number.isFinite(n) ? n : null;
  };
  const limit = num('x-rate-limit-limit');
  const remaining = num('x-rate-limit-remaining');
  const reset = num('x-rate-limit-reset');
  if (limit === null && remaining === null && reset === null) return null;
  // Seconds since epoch per the spec; tolerate milliseconds.
  return { limit, remaining, reset: reset === null ? null : reset > 1e11 ? reset : reset * 1000 };
}

/** Once the known reset time has passed, the service starts a fresh window. */
export function rollover(s: BudgetState, now: number): BudgetState {
  if (s.resetKnown && s.resetAt <= now) return { ...s, remaining: s.limit, resetKnown: false };
  return s;
}

/**
 * The part of the window reconcile may not take: BUDGET_RESERVE, but at most half the window. A reserve
 * close to the service's limit (a small account limit, a large setting) would leave sweeps a slot or none,
 * and `reconcile` would wait without end.
 */
export function effectiveReserve(limit: number, reserve: number): number {
  return Math.max(0, Math.min(reserve, Math.floor(limit / 2)));
}

/**
 * The last slots of a window, sent one at a time: a tenth of it (30 of 300), at least one. Another client of
 * the same application can take a few between our answers however fresh our count.
 */
export function lastSlots(limit: number): number {
  return Math.max(1, Math.ceil(limit / 10));
}

/**
 * The pace the others' measured rate is planned at: a script's pace wavers (its requests' own latency, a pause, a
 * burst), and what it took since our count is only known at our next answer.
 */
export const OTHERS_MARGIN = 2;

/**
 * The shortest time a measurement of the others' rate spans, as a part of the time from its first count to the
 * reset (a twentieth: 15 s of a fresh 300-second window, 1 s of its last 20 s; timed by the window, it holds for
 * a window of any length); and the count must have fallen by a window's last slots (30 of 300) since. Our requests
 * counted by the service but not yet answered look like the others' in the drop; over a longer span and a larger
 * drop those few weigh little, and their answers, once in, are counted as ours.
 */
export const SAMPLE_PART = 1 / 20;

/**
 * What the service may still have left now, for deciding whether requests may go together: the last count heard,
 * less what other spenders may have taken since, planned at the faster of two paces. One is OTHERS_MARGIN times the
 * rate measured from the counts (`others`, applyAnswer): a count is worth nothing once the others, at the pace they
 * were seen spending, would have taken it (a script taking what is left at five times the even pace). The other is
 * a spender not seen yet (one that starts while we are quiet, a burst at a window's start that our last
 * measurement, of the window's quiet end, did not see): taking what was left twice as fast as spending it evenly
 * until the reset would, so a count is worth nothing once half the time from it to the reset has passed.
 */
export function expectedRemaining(s: BudgetState, now: number): number {
  const countedAt = s.countedAt ?? now;
  const age = Math.max(0, now - countedAt);
  const span = s.resetAt - countedAt;
  const unseen = span <= 0 ? s.remaining : s.remaining * Math.max(0, 1 - (2 * age) / span);
  if (s.others === undefined) return unseen;
  return Math.min(unseen, Math.max(0, s.remaining - OTHERS_MARGIN * s.others * age));
}

/**
 * A count heard at `now` (`remaining`, of the window the sample is of) measured against the sample: what fell since
 * the sample's count less what of it was ours is what the others took, over the time between. Measured only once
 * SAMPLE_PART of the time from the sample to the reset has passed and the count fell by lastSlots, and then the next
 * measurement runs from this count; before that, the sample stays (and the rate measured before it).
 */
function measure(s: BudgetState, remaining: number, now: number): Pick<BudgetState, 'others' | 'sample'> {
  const kept = s.others === undefined ? {} : { others: s.others };
  const sample = s.sample;
  if (!sample) return { ...kept, sample: { remaining, at: now, own: 0 } };
  const span = now - sample.at;
  const short = span <= 0 || span < SAMPLE_PART * (s.resetAt - sample.at) || sample.remaining - remaining < lastSlots(s.limit);
  if (short) return { ...kept, sample };
  const taken = Math.max(0, sample.remaining - remaining - sample.own);
  return { others: taken / span, sample: { remaining, at: now, own: 0 } };
}

/**
 * How long the answer of a request in flight is waited for before others go beside it anyway: a lease older than
 * this is a slow request or one of a crashed process (it would otherwise hold every request until it expires).
 */
export const ANSWER_DUE_MS = 5000;

/**
 * May a request of `rank` be sent now? `inFlight`: live leases of all processes; `answering`: those of them whose
 * answer is still due (ANSWER_DUE_MS). `betterWaiting`: another process waits with a better rank, so this slot
 * is theirs.
 *
 * A request joins others in flight only while the window is known (not after a reset before its first answer
 * names the new window: our clock may run ahead of the service's) and more than its last slots are expected to
 * be left after them (expectedRemaining: the count may have grown old while we were idle and others were not).
 * Otherwise requests go one at a time: the answer of the one in flight is due shortly and tells what is left, and
 * if others of the same application took the rest meanwhile, one request is refused, not every one in flight.
 */
export function decide(
  s: BudgetState,
  inFlight: number,
  rank: number,
  reserve: number,
  betterWaiting: boolean,
  now: number,
  answering = inFlight,
): Decision {
  if (betterWaiting) return { ok: false, waitMs: jitter(100, 300), reason: 'priority' };
  const floor = rank >= priorityRank.reconcile ? effectiveReserve(s.limit, reserve) : 0;
  if (s.remaining - inFlight > floor) {
    if (answering === 0 || (s.resetKnown && expectedRemaining(s, now) - inFlight > lastSlots(s.limit))) return { ok: true };
    return { ok: false, waitMs: jitter(50, 200), reason: 'one-at-a-time' };
  }
  const reason = s.remaining - inFlight > 0 ? 'reserve' : 'spent';
  if (!s.resetKnown) return { ok: false, waitMs: jitter(300, 700), reason };
  // Wait for the reset (a little after: the header is rounded to seconds and clocks differ slightly). Answers
  // still in flight can correct the count, so look again sooner while there are some.
  const toReset = Math.max(0, s.resetAt - now) + jitter(50, 250);
  return { ok: false, waitMs: inFlight > 0 ? Math.min(toReset, jitter(500, 1000)) : toReset, reason };
}

/**
 * Folds an answer (or its absence: status null, a lost answer) into the state. Answers from a window that
 * has already ended are ignored; a 429 means the window is spent until its reset.
 */
export function applyAnswer(s: BudgetState, status: number | null, h: RateHeaders | null, now: number): BudgetState {
  const limit = h?.limit && h.limit > 0 ? h.limit : s.limit;
  if (status === 429) {
    const reset = h?.reset ?? now + 5000;
    // Refused in the window we follow: the others took all it had left since the sample (a measurement, if long
    // enough). A refusal naming a later window starts nothing to measure from: its count is not heard.
    const same = s.resetKnown && reset <= s.resetAt;
    const measured = same ? measure(s, 0, now) : s.others === undefined ? {} : { others: s.others };
    return {
      limit,
      remaining: 0,
      resetAt: s.resetKnown ? Math.max(s.resetAt, reset) : reset,
      resetKnown: true,
      countedAt: now,
      ...measured,
    };
  }
  // A refused token is not the account's caller: its headers may describe some other window.
  if (!h || h.remaining === null || h.reset === null || status === 401) {
    // No count from the service: assume the request was counted.
    return { ...s, limit, remaining: Math.max(0, s.remaining - 1) };
  }
  if (h.reset <= now) return { ...s, limit };
  const remaining = Math.max(0, h.remaining);
  // A new window: its first count is where the next measurement of the others runs from; their rate stays.
  if (!s.resetKnown || h.reset > s.resetAt) {
    const next: BudgetState = {
      limit,
      remaining,
      resetAt: h.reset,
      resetKnown: true,
      countedAt: now,
      sample: { remaining, at: now, own: 0 },
    };
    return s.others === undefined ? next : { ...next, others: s.others };
  }
  if (h.reset !== s.resetAt) return { ...s, limit };
  // An answer of ours counted after the sample's count, whatever order the answers came in: its request is ours in
  // the drop the next measurement sees, not the others'.
  const sample = s.sample && remaining < s.sample.remaining ? { ...s.sample, own: s.sample.own + 1 } : s.sample;
  // A higher count of the same window was counted before the one we hold: it tells nothing newer.
  if (remaining > s.remaining) return { ...s, limit, ...(sample ? { sample } : {}) };
  return { ...s, limit, remaining, countedAt: now, ...measure({ ...s, sample }, remaining, now) };
}

// ---- database side ----

export type Reservation =
  | { ok: true; leaseId: number; available: number }
  | { ok: false; stopped: false; waitMs: number; reason: string; available: number }
  | { ok: false; stopped: true; status: string; reason: string | null };

export interface BudgetSettings {
  reserve: number;
  leaseMs: number;
}

const toState = (r: BudgetRecord): BudgetState => ({
  limit: r.request_limit,
  remaining: r.remaining,
  resetAt: r.reset_at.getTime(),
  resetKnown: r.reset_known,
  countedAt: r.counted_at.getTime(),
  ...(r.others_rate === null ? {} : { others: r.others_rate / 1000 }),
  ...(r.sample_remaining === null || r.sample_at === null
    ? {}
    : { sample: { remaining: r.sample_remaining, at: r.sample_at.getTime(), own: r.sample_own } }),
});

const stateWrite = (s: BudgetState, r: BudgetRecord): Omit<BudgetWrite, 'leases' | 'waiters'> => ({
  limit: s.limit,
  remaining: s.remaining,
  resetAt: new Date(s.resetAt),
  resetKnown: s.resetKnown,
  countedAt: s.countedAt === undefined ? null : new Date(s.countedAt),
  othersRate: s.others === undefined ? null : s.others * 1000,
  sample: s.sample ? { remaining: s.sample.remaining, at: new Date(s.sample.at), own: s.sample.own } : null,
  leaseSeq: r.lease_seq,
});

/** The live leases (expired ones are a crashed process's: dropped) and the live waiters of a row read at `now`. */
function live<T extends { exp: number }>(entries: Record<string, T>, now: number): Record<string, T> {
  return Object.fromEntries(Object.entries(entries).filter(([, e]) => e.exp >= now));
}

/**
 * A connection's budget row as this process last wrote it (its gate keeps one: src/api/gate.ts). The next reservation
 * or release decides from it and writes at once, one statement where reading the row first made two: the write
 * names the version it was decided from (and the connection's status), so if another process wrote the row since,
 * or the status moved, it changes nothing and the row is read again. The row is what the database holds at that
 * version: every write moves the version, and this process knows what it wrote. Its clock is the database's at the
 * write, moved on by this process's monotonic clock.
 */
export interface RememberedBudget {
  row: BudgetRecord | null;
  /** performance.now() when row.now was the database's clock. */
  at: number;
}

/** A remembered row older than this is read again rather than its clock moved on this far. */
const REMEMBER_MS = 60_000;

/** The row as written: what `w` set, the next version, the database's clock at the write. */
function written(row: BudgetRecord, w: BudgetWrite, now: Date): BudgetRecord {
  return {
    ...row,
    request_limit: w.limit,
    remaining: w.remaining,
    reset_at: w.resetAt,
    reset_known: w.resetKnown,
    counted_at: w.countedAt ?? row.counted_at,
    others_rate: w.othersRate,
    sample_remaining: w.sample?.remaining ?? null,
    sample_at: w.sample?.at ?? null,
    sample_own: w.sample?.own ?? 0,
    leases: w.leases,
    waiters: w.waiters,
    lease_seq: w.leaseSeq,
    version: row.version + 1,
    now,
  };
}

/**
 * Decides from the remembered row (or reads it), and writes what was decided if nobody wrote the row meanwhile;
 * else reads and decides again. Every process reserving or releasing for the connection goes through its row, so
 * no two ever spend the same slot; a reservation costs one statement while this process is the row's only writer,
 * two when another wrote it since (a release too), where a locked transaction cost eight round trips.
 */
async function update<R>(
  db: Db,
  connectionId: number,
  memo: RememberedBudget | undefined,
  step: (row: BudgetRecord) => { write: BudgetWrite | null; result: R },
): Promise<R> {
  for (;;) {
    const kept = memo?.row && performance.now() - memo.at < REMEMBER_MS ? memo : null;
    const row = kept
      ? { ...kept.row!, now: new Date(kept.row!.now.getTime() + (performance.now() - kept.at)) }
      : await readBudget(db, connectionId);
    if (memo) memo.row = null;
    const { write, result } = step(row);
    if (!write) return result;
    const now = await writeBudget(db, connectionId, row.version, row.status, write);
    if (now) {
      if (memo && row.status === 'active') {
        memo.row = written(row, write, now);
        memo.at = performance.now();
      }
      return result;
    }
  }
}

/** A request's answer as the budget takes it: its lease, status (null: no answer) and rate headers. */
export interface Answer {
  leaseId: number;
  status: number | null;
  headers: RateHeaders | null;
}

/** What a process gives back and asks for in one write of the budget row (see exchange). */
export interface Trade {
  /** Answers of requests sent under this process's leases, in the order they came. */
  answers?: Answer[];
  /** Leases granted and never used: given back. */
  unused?: number[];
  /** Slots wanted now, for requests of `rank` (0: only giving back). */
  want: number;
  rank: number;
  /** This process's name among the row's waiters: registered when nothing is granted. */
  waiter: string;
}

export type Exchange =
  | { ok: true; leaseIds: number[]; available: number; accountingError: boolean }
  | { ok: false; stopped: false; waitMs: number; reason: string; available: number; accountingError: boolean }
  | { ok: false; stopped: true; status: string; reason: string | null; accountingError: boolean };

/**
 * One write of the budget row for everything a process has to settle: the answers of its requests (their counts
 * followed, their leases ended), the leases it did not use, and up to `want` new slots, each granted as decide()
 * allows with the ones granted before it in flight. So a process leases a slice of the window and gives back
 * what it did not use in the statement that takes the next slice (src/api/gate.ts).
 */
export function exchange(db: Db, connectionId: number, trade: Trade, cfg: BudgetSettings, memo?: RememberedBudget): Promise<Exchange> {
  return update<Exchange>(db, connectionId, memo, (row) => {
    const now = row.now.getTime();
    const leases = live(row.leases, now);
    const waiters = live(row.waiters, now);
    let state = rollover(toState(row), now);
    let accountingError = false;
    for (const a of trade.answers ?? []) {
      delete leases[a.leaseId];
      state = applyAnswer(state, a.status, a.headers, now);
      accountingError ||= a.status === 429;
    }
    for (const id of trade.unused ?? []) delete leases[id];
    const settled = !!trade.answers?.length || !!trade.unused?.length;
    const unusedCount = trade.unused?.length ?? 0;
    const inFlight = Object.keys(leases).length;
    if (trade.want <= 0) {
      return {
        write: { ...stateWrite(state, row), leases, waiters, sent: -unusedCount, accountingError },
        result: { ok: true, leaseIds: [], available: state.remaining - inFlight, accountingError },
      };
    }
    delete waiters[trade.waiter];
    if (row.status !== 'active') {
      const write =
        settled || trade.waiter in row.waiters
          ? {
              ...stateWrite(state, row),
              ...(trade.answers?.length ? {} : { countedAt: null }),
              leases,
              waiters,
              sent: -unusedCount,
              accountingError,
            }
          : null;
      return { write, result: { ok: false, stopped: true, status: row.status, reason: row.status_reason, accountingError } };
    }
    const answering = Object.values(leases).filter((l) => l.at > now - ANSWER_DUE_MS).length;
    const better = Object.values(waiters).some((w) => w.rank < trade.rank);
    const granted: Record<string, Lease> = {};
    let seq = row.lease_seq;
    let d: Decision = { ok: true };
    while (seq - row.lease_seq < trade.want) {
      const n = seq - row.lease_seq;
      d = decide(state, inFlight + n, trade.rank, cfg.reserve, better, now, answering + n);
      if (!d.ok) break;
      granted[++seq] = { rank: trade.rank, at: now, exp: now + cfg.leaseMs };
    }
    const taken = seq - row.lease_seq;
    const available = state.remaining - inFlight - taken;
    if (taken) {
      return {
        write: {
          ...stateWrite(state, row),
          leaseSeq: seq,
          leases: { ...leases, ...granted },
          waiters,
          sent: taken - unusedCount,
          accountingError,
        },
        result: { ok: true, leaseIds: Object.keys(granted).map(Number), available, accountingError },
      };
    }
    if (d.ok) throw new Error('unreachable: nothing granted without a refusal');
    waiters[trade.waiter] = { rank: trade.rank, exp: now + d.waitMs + 2000 };
    return {
      write: { ...stateWrite(state, row), leases, waiters, sent: -unusedCount, accountingError },
      result: { ok: false, stopped: false, waitMs: d.waitMs, reason: d.reason, available, accountingError },
    };
  });
}

/** Takes a slot for a request of `rank`, or says how long to wait (and registers `waiter` as waiting). */
export async function reserve(
  db: Db,
  connectionId: number,
  rank: number,
  waiter: string,
  cfg: BudgetSettings,
  memo?: RememberedBudget,
): Promise<Reservation> {
  const r = await exchange(db, connectionId, { want: 1, rank, waiter }, cfg, memo);
  if (r.ok) return { ok: true, leaseId: r.leaseIds[0]!, available: r.available };
  if (r.stopped) return { ok: false, stopped: true, status: r.status, reason: r.reason };
  return { ok: false, stopped: false, waitMs: r.waitMs, reason: r.reason, available: r.available };
}

/** Returns a lease with the answer's status (null: no answer) and rate headers. */
export async function release(
  db: Db,
  connectionId: number,
  leaseId: number,
  status: number | null,
  headers: RateHeaders | null,
  memo?: RememberedBudget,
): Promise<{ available: number; accountingError: boolean }> {
  const r = await exchange(db, connectionId, { answers: [{ leaseId, status, headers }], want: 0, rank: 0, waiter: '' }, NO_SETTINGS, memo);
  return { available: r.ok ? r.available : 0, accountingError: r.accountingError };
}

/** Settings a trade that asks for nothing never reads. */
const NO_SETTINGS: BudgetSettings = { reserve: 0, leaseMs: 0 };

/** This process no longer waits for the connection's budget. */
export async function clearWaiter(db: Db, connectionId: number, waiter: string): Promise<void> {
  await deleteWaiter(db, connectionId, waiter);
}
