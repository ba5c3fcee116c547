// The budget's decisions alone (pure), then its database side with real concurrent reservations.
import t from 'tap';
import { applyAnswer, decide, effectiveReserve, rateHeaders, release, reserve, rollover, type BudgetState } from '../../src/api/budget.ts';
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
  t.same(decide(state({ remaining: 5 }), 4, 0, 30, false, now), { ok: true });
  const d = decide(state({ remaining: 5 }), 5, 0, 30, false, now);
  t.equal(d.ok, false);
  if (!d.ok) t.equal(d.reason, 'spent');
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
  t.same(next, { limit: 300, remaining: 299, resetAt: s.resetAt + 300_000, resetKnown: true });
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

t.test('database: concurrent reservations never exceed the window, leases free nothing without answers', async (t) => {
  const { db } = await testDatabase(t, { poolSize: 12 });
  const [c] = await db.insertInto('connections').values({ name: 'b', base_url: 'http://x', auth_kind: 'token' }).returning('id').execute();
  const id = c!.id;
  await db.insertInto('api_budgets').values({ connection_id: id, request_limit: 10, remaining: 10 }).execute();
  const cfg = { reserve: 3, leaseMs: 60_000 };
  const results = await Promise.all(Array.from({ length: 25 }, (_, i) => reserve(db, id, 0, `w${i}`, cfg)));
  const granted = results.filter((r) => r.ok);
  t.equal(granted.length, 10, 'exactly the window');
  const row = await db.selectFrom('api_budgets').selectAll().where('connection_id', '=', id).executeTakeFirstOrThrow();
  t.equal(row.in_flight, 10);
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
  const [c] = await db.insertInto('connections').values({ name: 'p', base_url: 'http://x', auth_kind: 'token' }).returning('id').execute();
  const id = c!.id;
  await db
    .insertInto('api_budgets')
    .values({ connection_id: id, request_limit: 10, remaining: 0, reset_at: new Date(Date.now() + 60_000), reset_known: true })
    .execute();
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
