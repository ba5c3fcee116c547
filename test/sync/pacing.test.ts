// The drain's coalescing window: the budget left until the reset, shared by the resources waiting, stock first.
import t from 'tap';
import { sql } from 'kysely';
import { drainWindow, heldForStock, Pacing } from '../../src/sync/pacing.ts';
import { testDatabase } from '../support/db.ts';

const DOCS = ['order', 'fulfillment_return', 'purchase_order'];

t.test('windows: short while the budget is plentiful, widening as it runs out, stock reads last', async (t) => {
  const state = (remaining: number, toReset: number | null, active: string[]) => ({ limit: 300, remaining, toReset, active });
  t.equal(drainWindow(state(300, null, []), 'variant'), 1, 'no budget window known yet: read at once');
  t.equal(drainWindow(state(0, -5, []), 'order'), 1, 'the reset has passed: a fresh window, read at once');
  t.equal(drainWindow(state(300, 300, ['variant']), 'variant'), 2, 'alone, 0.8 a second to use: every 1.25 s, the 2 s step');
  // 240 of 300 s usable: stock gets four fifths of 0.8/s, three documents (2 each) the rest.
  t.equal(drainWindow(state(300, 300, ['variant', ...DOCS]), 'variant'), 2, 'stock: 1.6 s');
  t.equal(drainWindow(state(300, 300, ['variant', ...DOCS]), 'order'), 20, 'a document: 18.75 s, the 20 s step');
  t.equal(
    drainWindow(state(300, 300, ['variant', ...DOCS, 'company']), 'company'),
    90,
    'reference data waits longest: 81 s, the 90 s step',
  );
  const many = [
    'variant',
    'order',
    'fulfillment',
    'fulfillment_return',
    'purchase_order',
    'procurement',
    'stock_adjustment',
    'stock_transfer',
    'invoice',
    'company',
    'address',
    'contact',
  ];
  t.equal(drainWindow(state(300, 300, many), 'variant'), 2, 'stock keeps its part however many other kinds wait');
  t.equal(drainWindow(state(300, 30, ['variant', ...DOCS]), 'order'), 2, 'plenty left for the time to the reset: short windows for all');
  t.equal(drainWindow(state(100, 250, ['variant', ...DOCS]), 'variant'), 4, '100 left for 250 s: stock every 3.9 s');
  t.equal(drainWindow(state(100, 250, ['variant', ...DOCS]), 'order'), 60, '... and a document every 47 s');
  t.equal(drainWindow(state(0, 200, ['variant']), 'variant'), 120, 'spent: the longest window, the reads wait for the reset anyway');
  t.equal(drainWindow(state(0, 4.5, ['variant']), 'variant'), 5, 'but never much longer than the time to the reset');
  t.equal(drainWindow(state(300, 300, ['composition', 'variant']), 'composition'), 13, "a bundle's makeup is stock too, read more rarely");
  t.equal(drainWindow(state(300, 300, ['composition', 'variant', ...DOCS]), 'variant'), 2, 'and it leaves the variants their pace');
  const costly = { ...state(300, 300, ['variant', ...DOCS]), costs: { order: 2, variant: 0.1 } };
  t.equal(drainWindow(costly, 'order'), 45, 'a document whose reads cost two requests (its lines) waits twice as long: 37.5 s');
  t.equal(drainWindow(costly, 'variant'), 2, 'a drain that cleared its rows without a read counts as one read');
});

t.test('the state comes from the shared budget and the resources this process asked drains for lately', async (t) => {
  const { db } = await testDatabase(t);
  const { id } = await db
    .insertInto('connections')
    .values({ name: 'paced', base_url: 'http://127.0.0.1:1', auth_kind: 'token' })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db.insertInto('api_budgets').values({ connection_id: id }).execute();
  await sql`UPDATE api_budgets SET remaining = 100, reset_known = true, reset_at = now() + interval '250 seconds' WHERE connection_id = ${id}`.execute(
    db,
  );
  const pacing = new Pacing(db);
  for (const resource of ['variant', ...DOCS]) pacing.noteActive(id, resource);
  pacing.noteActive(id, 'company', Date.now() - 60_000); // drained a minute ago: still sharing
  pacing.noteActive(id, 'address', Date.now() - 6 * 60_000); // six minutes ago: no longer
  const state = await pacing.state(id);
  t.equal(state.remaining, 100);
  t.ok(state.toReset! > 240 && state.toReset! <= 250, `${state.toReset} s to the reset`);
  t.same(
    [...state.active].sort(),
    ['company', 'fulfillment_return', 'order', 'purchase_order', 'variant'],
    'asked for or read in the last five minutes',
  );
  t.equal(await pacing.windowSeconds(id, 'variant'), 4);
  t.equal(await pacing.windowSeconds(id, 'company'), 120, 'reference data: 203 s wanted, the longest window');
  pacing.noteCost(id, 'order', 3);
  pacing.noteCost(id, 'order', 1);
  pacing.noteCost(id, 'fulfillment', 2);
  const { costs } = await pacing.state(id);
  t.equal(costs?.order?.toFixed(2), '2.40', 'what a read costs, as a moving average');
  t.equal(costs?.fulfillment, 2);
});

t.test('the last BUDGET_RESERVE requests of a window are kept for stock reads: other drains wait for the reset', async (t) => {
  const state = (limit: number, remaining: number, toReset: number | null) => ({ limit, remaining, toReset, active: [] });
  t.notOk(heldForStock(state(300, 31, 100), 'order', 30), 'more than the reserve left: a document reads');
  t.ok(heldForStock(state(300, 30, 100), 'order', 30), 'down to the reserve: a document waits');
  t.ok(heldForStock(state(300, 5, 100), 'company', 30), 'so does reference data');
  t.notOk(heldForStock(state(300, 5, 100), 'variant', 30), 'a variant reads');
  t.notOk(heldForStock(state(300, 5, 100), 'composition', 30), "and a bundle's makeup");
  t.notOk(heldForStock(state(300, 5, null), 'order', 30), 'no reset known: nothing to wait for');
  t.notOk(heldForStock(state(300, 0, -1), 'order', 30), 'the reset has passed: a fresh window');
  t.notOk(heldForStock(state(40, 21, 100), 'order', 30), 'a small limit: at most half of it is kept (20 of 40)');
});
