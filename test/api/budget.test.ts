// The budget's decisions alone (pure), then its database side with real concurrent reservations.
import t from 'tap';
import { sql } from 'kysely';
import {
  applyAnswer,
  decide,
  effectiveReserve,
  expectedRemaining,
  lastSlots,
  rateHeaders,
  release,
  reserve,
  rollover,
  type BudgetState,
  type RememberedBudget,
} from '../../src/api/budget.ts';
import { createDb, createPool, type Db } from '../../src/db/index.ts';
import { testDatabase } from '../support/db.ts';

const now = 1_800_000_000_000;
const state = (s: Partial<BudgetState> = {}): BudgetState => ({
  limit: 300,
  remaining: 300,
  resetAt: now + 60_000,
  resetKnown: true,
  ...s,
});

t.test('a slot is granted while remaining exceeds the leases in flight', async (t) => {
  t.same(decide(state({ remaining: 50 }), 4, 0, 30, false, now), { ok: true });
  t.same(decide(state({ remaining: 1 }), 0, 0, 30, false, now), { ok: true }, 'the last slot, with nothing in flight');
  const d = decide(state({ remaining: 5 }), 5, 0, 30, false, now);
  t.equal(d.ok, false);
  if (!d.ok) t.equal(d.reason, 'spent');
});

t.test("one at a time in a window's last slots and before a new window's first answer (other spenders)", async (t) => {
  t.equal(lastSlots(300), 30);
  t.equal(lastSlots(100), 10);
  t.equal(lastSlots(5), 1, 'at least one');
  // 300 a window, a count just heard: together while more than 30 are left after the requests in flight.
  t.same(decide(state({ remaining: 40 }), 4, 0, 30, false, now), { ok: true });
  for (const [remaining, inFlight] of [
    [34, 4],
    [5, 1],
    [2, 1],
  ]) {
    const d = decide(state({ remaining }), inFlight!, 1, 30, false, now);
    t.ok(!d.ok && d.reason === 'one-at-a-time' && d.waitMs < 250, `${remaining} left, ${inFlight} in flight: waits for the answer`);
  }
  t.same(decide(state({ remaining: 5 }), 0, 1, 30, false, now), { ok: true }, 'nothing in flight: the next one goes');
  // A new window (rolled over, reset not yet named): one request learns it, the others wait for its answer.
  const fresh = rollover(state({ remaining: 0, resetAt: now - 1 }), now);
  t.same(decide(fresh, 0, 0, 30, false, now), { ok: true });
  const d = decide(fresh, 1, 0, 30, false, now);
  t.ok(!d.ok && d.reason === 'one-at-a-time' && d.waitMs < 250, 'the second waits for the first answer of the window');
  t.same(decide(fresh, 1, 0, 30, false, now, 0), { ok: true }, 'a lease whose answer is overdue (a crashed process) holds nothing up');
  const known = applyAnswer(fresh, 200, { limit: 300, remaining: 60, reset: now + 300_000 }, now);
  t.equal(known.countedAt, now, 'the answer is the count heard now');
  t.same(decide(known, 1, 0, 30, false, now), { ok: true }, 'the answer named the window: together again');
});

t.test('an old count is worth less: by the time to the reset it was heard with, not by seconds', async (t) => {
  // 100 left, heard 60 s before a reset: planned as taken by others at twice the even pace, 0 after 30 s.
  const s = state({ remaining: 100, countedAt: now, resetAt: now + 60_000 });
  t.equal(expectedRemaining(s, now), 100);
  t.equal(expectedRemaining(s, now + 15_000), 50);
  t.equal(expectedRemaining(s, now + 30_000), 0);
  t.equal(expectedRemaining(s, now + 45_000), 0);
  t.same(decide(s, 4, 1, 30, false, now + 10_000), { ok: true }, '67 expected, 4 in flight: together');
  const d = decide(s, 1, 1, 30, false, now + 22_000);
  t.ok(!d.ok && d.reason === 'one-at-a-time', '27 expected, 1 in flight: the count is too old to send beside it');
  t.same(decide(s, 0, 1, 30, false, now + 29_000), { ok: true }, 'alone, a request may go: its answer is the new count');
  // The same age early in a long window hardly matters.
  const early = state({ remaining: 100, countedAt: now, resetAt: now + 290_000 });
  t.same(decide(early, 4, 1, 30, false, now + 20_000), { ok: true });
  // Time scale does not matter: a 3-second window behaves as a 300-second one.
  const scaled = state({ remaining: 100, countedAt: now, resetAt: now + 600 });
  t.equal(expectedRemaining(scaled, now + 150), 50);
  t.same(expectedRemaining(state({ remaining: 7 }), now), 7, 'no countedAt: heard just now');
});

t.test('another spender took most of the window: the service count rules, and a race lost is one 429', async (t) => {
  // We sent 10 of this window; the service says 40 are left: 250 went elsewhere. What is left is the service's.
  let s = applyAnswer(state({ remaining: 290 }), 200, { limit: 300, remaining: 40, reset: now + 60_000 }, now);
  t.equal(s.remaining, 40);
  t.equal(
    applyAnswer(s, 200, { limit: 300, remaining: 45, reset: now + 60_000 }, now + 500).countedAt,
    now,
    'an older, higher count is no news',
  );
  t.equal(decide(s, 0, 2, 30, false, now).ok, true, 'a sweep may take what is left above the reserve');
  t.equal(decide(state({ remaining: 30 }), 0, 2, 30, false, now).ok, false, '... and not the reserve, whoever spent the rest');
  t.equal(decide(s, 4, 1, 30, false, now).ok, true, 'webhook reads may go together while 36 are left after the flight');
  t.equal(decide(s, 10, 1, 30, false, now).ok, false, 'and one at a time from 30');
  // The other spender takes the last slots while our request is on its way: 429, the window is spent until its reset.
  s = applyAnswer(s, 429, { limit: 300, remaining: 0, reset: now + 60_000 }, now);
  const d = decide(s, 0, 0, 30, false, now);
  t.ok(!d.ok && d.reason === 'spent' && d.waitMs >= 60_000, 'nothing more is sent before the reset');
});

t.test("the others' rate: the drop between two of our counts less our own requests, whatever order the answers came in", async (t) => {
  const h = (remaining: number) => ({ limit: 300, remaining, reset: now + 60_000 });
  let s = applyAnswer(state({ resetKnown: false, resetAt: now - 1 }), 200, h(200), now);
  t.same(s.sample, { remaining: 200, at: now, own: 0 }, "a window's first count is where the measurement runs from");
  t.equal(s.others, undefined, 'nothing measured yet');
  // Three of ours, answered out of order; a fourth, 5 s later, says 160: 40 fell, 4 of them ours, 36 the others'.
  for (const [r, at] of [
    [197, 100],
    [199, 120],
    [198, 130],
  ] as const)
    s = applyAnswer(s, 200, h(r), now + at);
  t.equal(s.remaining, 197, 'the lowest count');
  t.equal(s.sample?.own, 3, 'the late answers are ours too');
  t.equal(
    applyAnswer(s, 200, h(190), now + 1000).others,
    undefined,
    'too short a span (a twentieth of the time to the reset) measures nothing',
  );
  s = applyAnswer(s, 200, h(160), now + 5000);
  t.equal(s.others, 36 / 5000, '36 requests in 5 s');
  t.same(s.sample, { remaining: 160, at: now + 5000, own: 0 }, 'the next measurement runs from this count');
  t.equal(
    expectedRemaining(s, now + 6000),
    160 - 2 * 36 * (1000 / 5000),
    'a count a second old: less twice what the others took in a second',
  );
  // The next window keeps the rate and measures again from its first count.
  const next = applyAnswer(s, 200, { limit: 300, remaining: 290, reset: now + 360_000 }, now + 61_000);
  t.equal(next.others, s.others);
  t.same(next.sample, { remaining: 290, at: now + 61_000, own: 0 });
});

/**
 * One window of the service on a clock of whole milliseconds, every step decided by the test: another client of
 * the application starts at `spenderFrom` and spends at `pace` times the even rate of what is left then (what is
 * left / the time to the reset), one request whenever its rate has made one; ours are counted 10 ms after they
 * are sent and answered 10 ms later; we want one request every 100 ms until `steadyUntil`, then nothing, then
 * `slice` at once at `sliceAt` (a drain after a quiet spell). Our budget folds each answer and decides each request
 * as the gate does (applyAnswer, decide). No timer, no race: the same run every time.
 */
function quotaRace(o: { pace: number; spenderFrom: number; steadyUntil: number; sliceAt: number; slice: number }) {
  const LIMIT = 100;
  const WINDOW = 5000;
  const reset = now + WINDOW;
  let left = LIMIT;
  let s: BudgetState = rollover(state({ limit: LIMIT, remaining: 0, resetAt: now - 1 }), now);
  let rate = 0;
  let owed = 0;
  let wanted = 0;
  let inFlight = 0;
  const ours: { sent: number; status?: number; remaining?: number }[] = [];
  let atSlice: BudgetState | null = null;
  for (let ms = 0; ms < WINDOW; ms++) {
    if (ms === o.spenderFrom) rate = (o.pace * left) / (WINDOW - ms);
    for (owed += rate; owed >= 1; owed--) if (left > 0) left--;
    for (const r of ours) {
      if (r.sent + 10 === ms) {
        r.status = left > 0 ? 200 : 429;
        if (left > 0) left--;
        r.remaining = left;
      }
      if (r.sent + 20 === ms) {
        s = applyAnswer(s, r.status!, { limit: LIMIT, remaining: r.remaining!, reset }, now + ms);
        inFlight--;
      }
    }
    if (ms % 100 === 0 && ms < o.steadyUntil) wanted++;
    if (ms === o.sliceAt) {
      wanted += o.slice;
      atSlice = s;
    }
    while (wanted > 0 && decide(s, inFlight, 1, 10, false, now + ms).ok) {
      ours.push({ sent: ms });
      inFlight++;
      wanted--;
    }
  }
  return { ours, rate, atSlice: atSlice!, limited: ours.filter((r) => r.status === 429).length };
}

t.test('another client taking what is left at five times the even pace: its rate read from the counts, one 429 at most', async (t) => {
  // It starts at 1 s, when 90 of 100 are left and 4 s to the reset: 0.1125 requests a ms, all that is left in 0.8 s.
  // We send one request every 100 ms until 1.4 s, then nothing until a drain wants four at 1.75 s: the last count
  // (1.42 s) said 39 were left, and by the time the four are counted the other client has taken them all. Planned
  // as a client at twice the even pace, that count was still worth 32, and the four went together: four 429s.
  const run = quotaRace({ pace: 5, spenderFrom: 1000, steadyUntil: 1500, sliceAt: 1750, slice: 4 });
  const others = run.atSlice.others ?? 0;
  t.ok(
    Math.abs(others - run.rate) / run.rate < 0.2,
    `the other client's rate measured: ${others.toFixed(4)} of ${run.rate.toFixed(4)} a ms`,
  );
  t.ok(run.ours.filter((r) => r.sent >= 1750).length >= 1, 'the slice was sent (one at a time)');
  t.ok(run.limited <= 1, `at most one 429 in the window (${run.limited})`);
  // Nobody else: nothing measured against us, and a count does not grow old; the same quiet spell and slice go together.
  const alone = quotaRace({ pace: 0, spenderFrom: 1000, steadyUntil: 1500, sliceAt: 1750, slice: 4 });
  t.equal(alone.atSlice.others, 0, 'no other client: a rate of 0');
  t.same(
    alone.ours.filter((r) => r.sent >= 1750).map((r) => r.sent),
    [1750, 1750, 1750, 1750],
    'alone, the four go together',
  );
  t.equal(alone.limited, 0);
});

t.test('reconcile cannot take the reserve; interactive and webhook can', async (t) => {
  const s = state({ remaining: 30 });
  t.equal(decide(s, 0, 0, 30, false, now).ok, true);
  t.equal(decide(s, 0, 1, 30, false, now).ok, true);
  const d = decide(s, 0, 2, 30, false, now);
  t.equal(d.ok, false);
  if (!d.ok) t.equal(d.reason, 'reserve');
  t.equal(decide(state({ remaining: 31 }), 0, 2, 30, false, now).ok, true);
  t.equal(effectiveReserve(20, 30), 10, 'a reserve never takes more than half the window');
  t.equal(effectiveReserve(300, 30), 30, 'within half the window it is taken as configured');
});

t.test('a better-ranked waiter elsewhere gets the slot first', async (t) => {
  const d = decide(state(), 0, 2, 30, true, now);
  t.equal(d.ok, false);
  if (!d.ok) {
    t.equal(d.reason, 'priority');
    t.ok(d.waitMs < 1000);
  }
});

t.test('spent: wait until the reset, shorter while answers are in flight', async (t) => {
  const d = decide(state({ remaining: 0, resetAt: now + 120_000 }), 0, 0, 30, false, now);
  t.ok(!d.ok && d.waitMs >= 120_000 && d.waitMs < 121_000, 'until the reset');
  const e = decide(state({ remaining: 2, resetAt: now + 120_000 }), 2, 0, 30, false, now);
  t.ok(!e.ok && e.waitMs <= 1000, 'looks again soon');
});

t.test('rollover after the known reset refills the window once', async (t) => {
  const s = rollover(state({ remaining: 0, resetAt: now - 1 }), now);
  t.same(s, { limit: 300, remaining: 300, resetAt: now - 1, resetKnown: false });
  t.equal(rollover(s, now + 5000), s, 'no second refill until the service names the next reset');
});

t.test('answers: same window keeps the lowest count, a newer window is adopted, stale ones ignored', async (t) => {
  const s = state({ remaining: 50 });
  t.equal(
    applyAnswer(s, 200, { limit: 300, remaining: 60, reset: s.resetAt }, now).remaining,
    50,
    'a late answer does not raise the count',
  );
  t.equal(applyAnswer(s, 200, { limit: 300, remaining: 40, reset: s.resetAt }, now).remaining, 40);
  const next = applyAnswer(s, 200, { limit: 300, remaining: 299, reset: s.resetAt + 300_000 }, now);
  t.same(next, {
    limit: 300,
    remaining: 299,
    resetAt: s.resetAt + 300_000,
    resetKnown: true,
    countedAt: now,
    sample: { remaining: 299, at: now, own: 0 },
  });
  t.same(applyAnswer(s, 200, { limit: 300, remaining: 10, reset: now - 1000 }, now), s, 'answer of an ended window');
  const unknown = state({ resetKnown: false, resetAt: now - 5000 });
  t.equal(applyAnswer(unknown, 200, { limit: 300, remaining: 250, reset: now + 1000 }, now).remaining, 250);
});

t.test('a 429 empties the window until its reset; no headers counts the request as spent', async (t) => {
  const s = applyAnswer(state({ remaining: 20 }), 429, { limit: 300, remaining: 0, reset: now + 90_000 }, now);
  t.equal(s.remaining, 0);
  t.equal(s.resetAt, now + 90_000);
  t.equal(applyAnswer(state({ remaining: 20 }), null, null, now).remaining, 19);
});

t.test('rate headers: seconds since epoch, absent or garbage -> null', async (t) => {
  const h = rateHeaders(new Headers({ 'X-Rate-Limit-Limit': '300', 'X-Rate-Limit-Remaining': '12', 'X-Rate-Limit-Reset': '1800000100' }));
  t.same(h, { limit: 300, remaining: 12, reset: 1_800_000_100_000 });
  t.equal(rateHeaders(new Headers()), null);
  t.same(rateHeaders(new Headers({ 'X-Rate-Limit-Remaining': 'lots' })), null);
});

/** A connection `name` and its budget row: `limit` requests a window, `remaining` left, the window's known end. */
async function budgetOf(db: Db, name: string, b: { limit: number; remaining: number; resetAt: Date }): Promise<number> {
  const [c] = await db.insertInto('connections').values({ name, base_url: 'http://x', auth_kind: 'token' }).returning('id').execute();
  await db
    .insertInto('api_budgets')
    .values({ connection_id: c!.id, request_limit: b.limit, remaining: b.remaining, reset_at: b.resetAt, reset_known: true })
    .execute();
  return c!.id;
}

t.test('database: concurrent reservations never exceed the window, leases free nothing without answers', async (t) => {
  const { db } = await testDatabase(t, { poolSize: 12 });
  const id = await budgetOf(db, 'b', { limit: 10, remaining: 10, resetAt: new Date(Date.now() + 60_000) });
  const cfg = { reserve: 3, leaseMs: 60_000 };
  const results = await Promise.all(Array.from({ length: 25 }, (_, i) => reserve(db, id, 0, `w${i}`, cfg)));
  const granted = results.filter((r) => r.ok);
  t.equal(granted.length, 9, 'the window but its last slot, which goes alone once the others are answered');
  const row = await db.selectFrom('api_budgets').selectAll().where('connection_id', '=', id).executeTakeFirstOrThrow();
  t.equal(row.in_flight, 9);
  // One answer names the window: 0 left until a reset 60 s away.
  const reset = Math.ceil(Date.now() / 1000) + 60;
  const first = granted[0]!;
  if (first.ok) await release(db, id, first.leaseId, 200, { limit: 10, remaining: 0, reset: reset * 1000 });
  const again = await reserve(db, id, 0, 'late', cfg);
  t.equal(again.ok, false);
  if (!again.ok && !again.stopped) {
    t.equal(again.reason, 'spent');
    t.ok(again.waitMs >= 500, `waits rather than sending (${again.waitMs} ms)`);
  }
});

t.test('database: a low-priority reservation yields to a waiting better rank, and the reserve holds', async (t) => {
  const { db } = await testDatabase(t);
  const id = await budgetOf(db, 'p', { limit: 10, remaining: 0, resetAt: new Date(Date.now() + 60_000) });
  const cfg = { reserve: 3, leaseMs: 60_000 };
  const high = await reserve(db, id, 0, 'high', cfg);
  t.equal(high.ok, false, 'spent: the interactive caller waits and is registered');
  await db.updateTable('api_budgets').set({ remaining: 10 }).where('connection_id', '=', id).execute();
  const low = await reserve(db, id, 2, 'low', cfg);
  t.equal(low.ok, false, 'reconcile yields while a better rank waits');
  if (!low.ok && !low.stopped) t.equal(low.reason, 'priority');
  t.equal((await reserve(db, id, 0, 'high', cfg)).ok, true, 'the waiter gets its slot');
  const lows = [];
  for (let i = 0; i < 10; i++) lows.push(await reserve(db, id, 2, 'low', cfg));
  t.equal(lows.filter((r) => r.ok).length, 6, 'reconcile stops at the reserve of 3 (10 - 1 taken - 3)');
  await db.updateTable('connections').set({ status: 'lapsed', status_reason: 'test' }).where('id', '=', id).execute();
  const stopped = await reserve(db, id, 0, 'high', cfg);
  t.ok(!stopped.ok && stopped.stopped, 'a lapsed connection spends nothing');
});

t.test("database: after a reset one request at a time, and a crashed process's lease is waited for only briefly", async (t) => {
  const { db } = await testDatabase(t);
  // The window ended a moment ago: the next answer names the new one.
  const id = await budgetOf(db, 'r', { limit: 300, remaining: 0, resetAt: new Date(Date.now() - 1000) });
  const cfg = { reserve: 30, leaseMs: 60_000 };
  const first = await reserve(db, id, 0, 'a', cfg);
  t.equal(first.ok, true, 'the first request of the new window goes');
  const second = await reserve(db, id, 0, 'b', cfg);
  t.ok(!second.ok && !second.stopped && second.reason === 'one-at-a-time', 'the next waits for its answer');
  if (first.ok) await release(db, id, first.leaseId, 200, { limit: 300, remaining: 250, reset: Date.now() + 290_000 });
  const parallel = await Promise.all([0, 1, 2].map((i) => reserve(db, id, 0, `p${i}`, cfg)));
  t.equal(parallel.filter((r) => r.ok).length, 3, 'once it named the window, requests go together');
  const row = await db.selectFrom('api_budgets').selectAll().where('connection_id', '=', id).executeTakeFirstOrThrow();
  t.ok(Date.now() - row.updated_at.getTime() < 5000, 'updated_at: when the count was heard');
  // A crashed process's lease, sent 10 s ago, in a new window: not waited for.
  await db
    .updateTable('api_budgets')
    .set({
      reset_at: new Date(Date.now() - 1000),
      reset_known: true,
      leases: JSON.stringify({ 99: { rank: 1, at: Date.now() - 10_000, exp: Date.now() + 50_000 } }),
      version: sql`version + 1`,
    })
    .where('connection_id', '=', id)
    .execute();
  t.equal((await reserve(db, id, 0, 'c', cfg)).ok, true, 'an overdue lease holds nothing up');
});

t.test(
  'database: a process that alone writes the row decides from what it wrote; another writer or a status change makes it read again',
  async (t) => {
    const { db: other, url } = await testDatabase(t);
    // This process's own pool, counting its statements on api_budgets.
    const pool = createPool(url, 2);
    let statements = 0;
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...a: unknown[]) => unknown;
      (client as { query: unknown }).query = (...a: unknown[]) => {
        const text = typeof a[0] === 'string' ? a[0] : (a[0] as { text?: string }).text;
        if (text?.includes('api_budgets')) statements++;
        return query(...a);
      };
    });
    const db = createDb(pool);
    t.teardown(() => db.destroy());
    const reset = Date.now() + 200_000;
    const id = await budgetOf(other, 'm', { limit: 300, remaining: 300, resetAt: new Date(reset) });
    const cfg = { reserve: 30, leaseMs: 60_000 };
    const memo: RememberedBudget = { row: null, at: 0 };
    const counted = async <T>(what: () => Promise<T>): Promise<{ value: T; n: number }> => {
      const before = statements;
      const value = await what();
      return { value, n: statements - before };
    };

    const first = await counted(() => reserve(db, id, 0, 'a', cfg, memo));
    t.ok(first.value.ok, 'granted');
    t.equal(first.n, 2, 'the first reservation reads the row and writes it');
    const answered = await counted(() =>
      first.value.ok
        ? release(db, id, first.value.leaseId, 200, { limit: 300, remaining: 299, reset }, memo)
        : Promise.reject(new Error('no lease')),
    );
    t.equal(answered.n, 1, 'its release writes at once');
    const second = await counted(() => reserve(db, id, 0, 'a', cfg, memo));
    t.ok(second.value.ok);
    t.equal(second.n, 1, 'so does the next reservation');

    // Another process takes a slot: the remembered row is a version behind.
    t.ok((await reserve(other, id, 0, 'b', cfg)).ok, "the other process's reservation");
    const third = await counted(() => reserve(db, id, 0, 'a', cfg, memo));
    t.ok(third.value.ok);
    t.equal(third.n, 3, 'a write from a stale row changes nothing; the row is read and written again');
    const row = await other.selectFrom('api_budgets').selectAll().where('connection_id', '=', id).executeTakeFirstOrThrow();
    t.equal(row.in_flight, 3, "no lease lost: this process's two and the other's");
    t.equal(row.remaining, 299, 'the count the answer gave');

    await other.updateTable('connections').set({ status: 'lapsed', status_reason: 'test' }).where('id', '=', id).execute();
    const stopped = await reserve(db, id, 0, 'a', cfg, memo);
    t.ok(!stopped.ok && stopped.stopped, 'a status change since the remembered row is seen: a lapsed connection spends nothing');
  },
);
