// Reads that land out of order. A sweep reads a page, then waits for budget before it writes it; a drain may read
// the same variant after a newer stock move and write it meanwhile. Where updated_at does not tell the two reads
// apart (stock need not move it, and the documented service stamps whole seconds), the sweep's page must not undo
// the drain's write: it leaves the variant to a drain, which reads it again. A product's quantity (its variants'
// stock) moves without its updated_at too; products keep each read's time, and the later read wins either way.
import t from 'tap';
import { sql } from 'kysely';
import { addConnection, testDatabase } from '../support/db.ts';
import { memoryReader } from './harness.ts';
import { captureLogger } from '../support/log.ts';
import { markPending } from '../../src/db/pending.ts';
import { drainPending } from '../../src/sync/drain.ts';
import { sweep } from '../../src/sync/sweep.ts';
import { rulesFrom } from '../../src/stock/rules.ts';
import type { Db } from '../../src/db/index.ts';
import type { Teardown } from '../support/teardown.ts';

const UPDATED_AT = '2026-01-01T12:00:00Z';
const variant = (onHand: string) => ({
  id: 1,
  sku: 'S1',
  status: 'active',
  updated_at: UPDATED_AT,
  manage_stock: true,
  locations: [{ location_id: 1, stock_on_hand: onHand, committed: '0' }],
});

async function onHand(db: Db): Promise<{ mirror: string; channel: string }> {
  const r = await sql<{ mirror: string; channel: string }>`SELECT s.on_hand::text AS mirror, q.quantity::text AS channel
    FROM stock_levels s JOIN channel_quantities q USING (connection_id, variant_id) WHERE s.variant_id = 1`.execute(db);
  return r.rows[0]!;
}

/**
 * A service of `records` listed at `path`, a sweep and drains over it: `race.meanwhile` runs between a list call's
 * read of its page and its answer (the sweep then writes that page).
 */
async function raceWorld(
  t: Teardown,
  records: any[],
  path: string,
  resource: string,
  clock: number | (() => number | { asOf: number; readBy: number }) = Date.parse('2026-01-01T12:00:30Z'),
) {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  const race = { meanwhile: async () => {} };
  const reader = memoryReader(records, [], clock, async (p) => {
    if (p !== path) return [];
    const page = structuredClone(records);
    await race.meanwhile();
    return page;
  });
  reader.connection.id = c.id;
  const log = captureLogger().log;
  const rules = rulesFrom({ CHANNEL_LOCATIONS: '', CHANNEL_SAFETY_BUFFER: '0' });
  // The resources with a read queued (a pending row): what a sweep left to a drain.
  const drains = async () => (await db.selectFrom('pending_fetches').select('resource').distinct().execute()).map((r) => r.resource);
  const deps = {
    db,
    log,
    client: reader,
    rules,
    overlapSeconds: 0,
    clockMarginMs: 0,
  };
  const drain = () => drainPending({ db, log, client: reader, rules, clockMarginMs: 0 }, resource);
  return { db, c, race, deps, drains, drain, reader };
}

t.test('a sweep page read before a drain wrote a newer read of the same updated_at leaves the variant to a drain', async (t) => {
  const service = [variant('5')];
  const { db, c, race, deps, drains, drain } = await raceWorld(t, service, '/variants', 'variant');

  t.equal((await sweep(deps, { full: false, wait: true })).initial, true, 'the first sweep loads the mirror');
  t.same(await onHand(db), { mirror: '5', channel: '5' });

  // The sweep reads 4 on hand; before it writes, the stock moves to 3 (same updated_at) and a drain reads and writes that.
  service[0] = variant('4');
  race.meanwhile = async () => {
    service[0] = variant('3');
    await markPending(db, [{ connectionId: c.id, resource: 'variant', id: 1, reason: 'variant.stock_level_update' }]);
    t.equal((await drain()).applied, 1, 'the drain writes the newer read');
  };
  const raced = await sweep(deps, { full: false, wait: true });
  race.meanwhile = async () => {};
  t.same(await onHand(db), { mirror: '3', channel: '3' }, "the sweep's older page does not replace the drain's newer read");
  t.equal(raced.resources.variant!.queued, 1, 'the sweep leaves the variant to a drain');
  t.equal(raced.resources.variant!.applied, 0);
  t.same(await drains(), ['variant'], 'and asks for one');
  const queued = await db.selectFrom('pending_fetches').select(['id', 'reason']).execute();
  t.same(
    queued.map((r) => [Number(r.id), r.reason]),
    [[1, 'sweep: changed at the same updated_at']],
  );
  t.equal((await drain()).read, 1, 'the drain reads it again');
  t.same(await onHand(db), { mirror: '3', channel: '3' });

  // A stock-only change nothing announced (the delivery was lost): the sweep finds it, counts it as drift, and the
  // drain it asks for writes it.
  service[0] = variant('2');
  const found = await sweep(deps, { full: false, wait: true });
  t.equal(found.drift, 1, 'a change at the same updated_at that no delivery explains is drift');
  t.same(await onHand(db), { mirror: '3', channel: '3' }, 'not written by the sweep');
  await drain();
  t.same(await onHand(db), { mirror: '2', channel: '2' }, 'written by the drain');
  t.equal((await db.selectFrom('pending_fetches').select('id').execute()).length, 0);

  // Unchanged: nothing is queued; a newer updated_at is written by the sweep itself.
  const still = await sweep(deps, { full: false, wait: true });
  t.same([still.drift, still.resources.variant!.queued], [0, 0]);
  service[0] = { ...variant('7'), updated_at: '2026-01-01T12:00:05Z' };
  const newer = await sweep(deps, { full: true, wait: true });
  t.same([newer.resources.variant!.applied, newer.resources.variant!.queued], [1, 0]);
  t.same(await onHand(db), { mirror: '7', channel: '7' });
});

/** A product whose quantity (the sum of its variants' stock) moved without moving its updated_at. */
const product = (quantity: string) => ({ id: 1, name: 'P', status: 'active', updated_at: UPDATED_AT, quantity, variant_ids: [] });

async function productQuantity(db: Db): Promise<string> {
  const r = await sql<{ quantity: string }>`SELECT raw->>'quantity' AS quantity FROM products WHERE id = 1`.execute(db);
  return r.rows[0]!.quantity;
}

t.test("a product's quantity: a read provably earlier than the row's is never written, drain or sweep", async (t) => {
  const service = [product('5')];
  let now = Date.parse('2026-01-01T12:00:30Z');
  const tick = () => (now += 2000);
  // A read's interval as the service's Date header gives it (whole seconds): set, it is every read's.
  let bounds: { asOf: number; readBy: number } | null = null;
  const { db, c, race, deps, drains, drain, reader } = await raceWorld(t, service, '/products', 'product', () => bounds ?? now);
  const pend = () => markPending(db, [{ connectionId: c.id, resource: 'product', id: 1, reason: 'product.update' }]);

  await sweep(deps, { full: false, wait: true });
  t.equal(await productQuantity(db), '5', 'the first sweep loads the mirror');

  // A sweep reads 4; before it writes its page, the quantity moves to 3 and a drain reads (later) and writes that.
  service[0] = product('4');
  tick();
  race.meanwhile = async () => {
    service[0] = product('3');
    tick();
    await pend();
    t.equal((await drain()).applied, 1, 'the drain writes the later read');
  };
  const raced = await sweep(deps, { full: false, wait: true });
  race.meanwhile = async () => {};
  t.equal(await productQuantity(db), '3', "the sweep's earlier page does not replace the drain's later read");
  t.equal(raced.resources.product!.applied, 0);
  t.same(await drains(), [], 'and no drain is needed to repair it');

  // The other way round: a drain reads 2, and before it writes, a sweep reads (later) 1 and writes it.
  const byIds = reader.getByIds.bind(reader);
  reader.getByIds = async (path, ids, opts) => {
    const answer = structuredClone(await byIds(path, ids, opts));
    service[0] = product('1');
    tick();
    t.equal((await sweep(deps, { full: false, wait: true })).resources.product!.applied, 1, 'the later sweep writes');
    return answer;
  };
  service[0] = product('2');
  tick();
  await pend();
  t.equal((await drain()).applied, 0, "the drain's earlier read is not written");
  t.equal(await productQuantity(db), '1', "the sweep's later page stays");

  // A later read at the same updated_at is written by either.
  reader.getByIds = byIds;
  service[0] = product('6');
  tick();
  await pend();
  t.equal((await drain()).applied, 1);
  service[0] = product('7');
  tick();
  t.equal((await sweep(deps, { full: false, wait: true })).resources.product!.applied, 1);
  t.equal(await productQuantity(db), '7');

  // Reads within the same second of the Date header cannot be ordered by it: the drain's read is written, and a
  // sweep's page that may be older is left to a drain, which reads it again.
  const second = now + 10_000;
  bounds = { asOf: second - 5, readBy: second + 1000 };
  service[0] = product('8');
  race.meanwhile = async () => {
    service[0] = product('9');
    bounds = { asOf: second - 300, readBy: second + 1000 };
    await pend();
    t.equal((await drain()).applied, 1, 'the drain writes its read');
  };
  const unclear = await sweep(deps, { full: false, wait: true });
  race.meanwhile = async () => {};
  t.same([unclear.resources.product!.applied, unclear.resources.product!.queued], [0, 1], 'the sweep leaves the product to a drain');
  t.same(await drains(), ['product'], 'and asks for one');
  await drain();
  t.equal(await productQuantity(db), '9');

  // A drain's read that changed nothing still dates the row: a sweep page read before it, with a value the stock had
  // for a moment, is not written over it.
  bounds = null;
  now = second + 10_000;
  service[0] = product('4');
  race.meanwhile = async () => {
    service[0] = product('9');
    tick();
    await pend();
    t.equal((await drain()).applied, 0, 'the drain reads 9 again: nothing to write');
  };
  await sweep(deps, { full: false, wait: true });
  race.meanwhile = async () => {};
  t.equal(await productQuantity(db), '9', "the sweep's earlier page (4) is not written");
});
