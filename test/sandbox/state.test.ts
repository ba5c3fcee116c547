// A sandbox's account kept in a file (packages/sandbox/src/state.ts): started again, it is the same account (its
// creation time, records, stock, subscriptions, idempotency keys) and goes on with new ids; started from a state
// written while it ran (a kill), ids jump ahead so none it gave before the kill is given again.
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sandbox } from './harness.ts';

const dir = await mkdtemp(join(tmpdir(), 'cs-sandbox-state-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

const placeOrders = async (c: Awaited<ReturnType<typeof sandbox>>, n: number) => {
  const done = await c.admin('POST', 'activity', { operations: n, kinds: ['place_order'] });
  return (done.body.performed as { id: number }[]).map((p) => p.id);
};

t.test('a sandbox started again resumes the account of its state file', async (t) => {
  const stateFile = join(dir, 'clean.json');
  const first = await sandbox(t, { stateFile });
  const account = (await first.get('/accounts/current')).body.account;
  const ids = await placeOrders(first, 5);
  const webhook = await first.call('POST', '/webhooks', { webhook: { address: 'https://example.com/hook', event: 'order.create' } });
  t.equal(webhook.status, 201);
  const key = { 'Idempotency-Key': 'count-1' };
  const variant = (await first.get('/variants?limit=1')).body.variants[0];
  const adjust = {
    stock_adjustment: {
      stock_location_id: 1,
      reason: 'shrinkage',
      stock_adjustment_line_items: [{ variant_id: variant.id, quantity: '-1' }],
    },
  };
  const made = await first.call('POST', '/stock_adjustments', adjust, key);
  t.equal(made.status, 201, 'a stock adjustment made with an idempotency key');
  const before = (await first.get(`/variants/${variant.id}`)).body.variant.stock_levels;
  await first.sb.close();

  const again = await sandbox(t, { stateFile, seed: 99, variants: 3 });
  t.same((await again.get('/accounts/current')).body.account, account, 'the same account, however seeded');
  t.same((await again.get(`/variants/${variant.id}`)).body.variant.stock_levels, before, 'its stock as it was');
  for (const id of ids) t.equal((await again.get(`/orders/${id}`)).status, 200, `order ${id} is there`);
  t.same(
    (await again.get('/webhooks')).body.webhooks.map((w: any) => w.address),
    ['https://example.com/hook'],
    'its subscriptions too',
  );
  const replay = await again.call('POST', '/stock_adjustments', adjust, key);
  t.same(replay.body, made.body, 'an idempotency key answers as before');
  const [next] = await placeOrders(again, 1);
  t.equal(next, Math.max(...ids) + 1, 'a new order takes the next id');
});

t.test('a state written while running (a kill) gives no id twice', async (t) => {
  const stateFile = join(dir, 'killed.json');
  const running = await sandbox(t, { stateFile });
  // The state as it was written at start: the orders placed after it are not in it, as after a kill.
  await copyFile(stateFile, join(dir, 'at-kill.json'));
  const given = await placeOrders(running, 20);
  await running.sb.close();
  const resumed = await sandbox(t, { stateFile: join(dir, 'at-kill.json') });
  const [next] = await placeOrders(resumed, 1);
  t.ok(next! > Math.max(...given), `the next order id ${next} is past every id given before the kill (${Math.max(...given)})`);
});
