// Channels and holds against a real database: three channels, three quantities; a hold lowers them all in one
// transaction; its end (committed, cancelled, expired) never counts a unit twice or not at all.
import t from 'tap';
import { sql } from 'kysely';
import { addConnection, testDatabase } from '../support/db.ts';
import { catalog } from '../../src/catalog/index.ts';
import { upsertRecords } from '../../src/db/mirror.ts';
import { listHolds } from '../../src/db/holds.ts';
import { addChannel, changeChannel, findChannel, setOverride } from '../../src/channels/channels.ts';
import { cancelHold, createHold, expireHolds, recordHoldOrder } from '../../src/channels/holds.ts';
import { applyRulesIfChanged, settleHolds } from '../../src/stock/recompute.ts';
import { mirror, quantities, settings, variant } from './harness.ts';
import type { Db } from '../../src/db/index.ts';

/** The feed's changes after `id`, with the last_change_id of the quantity each changed. */
async function feedAfter(db: Db, id: number) {
  return (
    await sql<{ id: number; at: string; cause: string; last_change_id: number | null }>`
    SELECT c.id::int AS id, c.at::text AS at, c.cause, q.last_change_id::int AS last_change_id FROM channel_quantity_changes c
    JOIN channel_quantities q ON q.channel_id = c.channel_id AND q.variant_id = c.variant_id WHERE c.id > ${id} ORDER BY c.id`.execute(db)
  ).rows;
}

/** A connection with variant 1 (10 at location 1, 5 at location 2) and three channels that see it differently. */
async function shop(db: Db) {
  const c = await addConnection(db);
  await mirror(db, c.id, [variant(1, { 1: ['10'], 2: ['5'] }), variant(2, { 1: ['4'] })]);
  await addChannel(db, c.id, { name: 'marketplace', locations: [1], buffer_units: '2' });
  await addChannel(db, c.id, { name: 'wholesale', buffer_units: '1', buffer_percent: '10' });
  return c;
}

t.test('three channels with their own locations, buffers and an override show three quantities', async (t) => {
  const { db } = await testDatabase(t);
  const c = await shop(db);
  t.same(await quantities(db, c.id, 1), { default: '15', marketplace: '8', wholesale: '13' }, '15; 10 less 2; 15 less 10% (1.5: 2)');
  const { changes } = await setOverride(db, await findChannel(db, 'wholesale'), 'SKU-1', { mode: 'fixed', quantity: '4' });
  t.same(
    changes.map((x) => [x.channel, x.variant_id, x.before_quantity, x.quantity, x.cause]),
    [['wholesale', 1, '13', '4', 'rules']],
  );
  t.same(await quantities(db, c.id, 1), { default: '15', marketplace: '8', wholesale: '4' });
  await setOverride(db, await findChannel(db, 'marketplace'), 'SKU-1', { mode: 'exclude' });
  const listed = await db
    .selectFrom('channel_quantities')
    .select(['channel_id', 'listed'])
    .where('variant_id', '=', 1)
    .orderBy('channel_id')
    .execute();
  t.same(
    listed.map((r) => r.listed),
    [true, false, true],
    'marketplace does not list it',
  );
  // A stock move reaches every channel in the one mirror write.
  const moved = await mirror(db, c.id, [variant(1, { 1: ['20'], 2: ['5'] })], { kind: 'delivery' });
  t.same(moved.map((x) => [x.channel, x.quantity]).sort(), [['default', '25']], 'the override and the exclusion hold still');
});

t.test('a change of rules recomputes the channel and is applied once', async (t) => {
  const { db } = await testDatabase(t);
  const c = await shop(db);
  const market = await findChannel(db, 'marketplace');
  const done = await changeChannel(db, market, { locations: null, buffer_units: '0.5' });
  t.equal(done.recomputed.changes, 2);
  t.same(await quantities(db, c.id, 1), { default: '15', marketplace: '14.5', wholesale: '13' });
  t.equal(await applyRulesIfChanged(db, settings, c.id), 0, 'the default channel, made by the first mirror write, recorded as applied');
  t.equal(await applyRulesIfChanged(db, settings, c.id), null, 'every channel follows its rules: nothing to do');
  await db.updateTable('channels').set({ applied_rules: null }).where('name', '=', 'wholesale').execute();
  t.equal(await applyRulesIfChanged(db, settings, c.id), 0, 'a recomputation cut short is finished (and changes nothing here)');
});

t.test('a hold lowers every channel in its transaction, once per channel order', async (t) => {
  const { db } = await testDatabase(t);
  const c = await shop(db);
  const input = { channel_order_id: 'W-1', lines: [{ sku: 'SKU-1', quantity: '3' }] };
  const start = Math.max(0, ...(await feedAfter(db, 0)).map((x) => x.id));
  const made = await createHold(db, settings, { connectionId: c.id, channel: 'default', source: 'api', input });
  t.ok(made.created);
  t.same(await quantities(db, c.id, 1), { default: '12', marketplace: '5', wholesale: '10' }, '15-3; 10-3-2; 12 less 10% (1.2: 2)');
  t.equal(made.changes.length, 3, 'a change in each channel');
  t.match(made.changes[0], { cause: 'hold' });
  const fed = await feedAfter(db, start);
  t.same(
    fed.map((x) => x.cause),
    ['hold', 'hold', 'hold'],
    'in the feed once the transaction committed',
  );
  t.equal(new Set(fed.map((x) => x.at)).size, 1, 'all recorded by the one transaction');
  t.same(
    fed.map((x) => x.last_change_id),
    fed.map((x) => x.id),
    "each quantity's last_change_id names its change",
  );
  const again = await createHold(db, settings, { connectionId: c.id, channel: 'default', source: 'api', input });
  t.notOk(again.created, 'the same channel order again: the same hold');
  t.equal(again.hold.id, made.hold.id);
  t.same(await quantities(db, c.id, 1), { default: '12', marketplace: '5', wholesale: '10' }, 'not held twice');
  await t.rejects(
    createHold(db, settings, {
      connectionId: c.id,
      channel: 'default',
      source: 'api',
      input: { ...input, lines: [{ sku: 'SKU-1', quantity: '4' }] },
    }),
    /held already with other lines/,
  );
  await t.rejects(
    createHold(db, settings, {
      connectionId: c.id,
      channel: 'default',
      source: 'api',
      input: { channel_order_id: 'W-2', lines: [{ sku: 'NOPE', quantity: '1' }] },
    }),
    /unknown SKU NOPE/,
  );
  const [stored] = await db.selectFrom('channel_quantities').select('stock').where('variant_id', '=', 1).execute();
  t.match(
    (stored!.stock as any).why,
    { held: '3', holds: [{ hold_id: Number(made.hold.id), channel: 'default', channel_order_id: 'W-1', quantity: '3' }] },
    'the quantity says which hold lowers it',
  );
  const log = await db.selectFrom('sync_log').select(['action', 'detail']).where('resource', '=', 'hold').execute();
  t.same(
    log.map((l) => l.action),
    ['hold.created'],
  );
});

t.test('a bundle line holds its components', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  await mirror(db, c.id, [variant(1, { 1: ['10'] }), variant(2, { 1: ['9'] }), variant(9, {}, { composite: true })]);
  await db.transaction().execute(async (tx) => {
    const { replaceCompositions } = await import('../../src/db/mirror.ts');
    await replaceCompositions(
      tx,
      c.id,
      [9],
      [
        { bundle_id: 9, component_id: 1, quantity: '2' },
        { bundle_id: 9, component_id: 2, quantity: '1' },
      ],
    );
  });
  await mirror(db, c.id, [variant(9, {}, { composite: true })]);
  t.same(await quantities(db, c.id, 9), { default: '5' });
  await createHold(db, settings, {
    connectionId: c.id,
    channel: 'web',
    source: 'api',
    input: { channel_order_id: 'B-1', lines: [{ sku: 'SKU-9', quantity: '2' }] },
  });
  const [hold] = await listHolds(db, { state: 'all' });
  t.same(
    hold!.held.map((l) => [l.variant_id, l.ordered_sku, l.quantity]),
    [
      [1, 'SKU-9', '4'],
      [2, 'SKU-9', '2'],
    ],
  );
  t.same(await quantities(db, c.id, 1), { default: '6' });
  t.same(await quantities(db, c.id, 2), { default: '7' });
  t.same(await quantities(db, c.id, 9), { default: '3' }, '(10-4)/2 = 3, (9-2)/1 = 7');
});

t.test('committed: the line ends in the mirror write whose read shows the order, so no moment counts it twice or not at all', async (t) => {
  const { db } = await testDatabase(t);
  const c = await shop(db);
  const input = {
    channel_order_id: 'W-7',
    lines: [
      { sku: 'SKU-1', quantity: '3' },
      { sku: 'SKU-2', quantity: '1' },
    ],
  };
  await createHold(db, settings, { connectionId: c.id, channel: 'default', source: 'import', input });
  t.same(await quantities(db, c.id, 1), { default: '12', marketplace: '5', wholesale: '10' });
  // The import created order 500, active, at 10:00:00 on the service's clock.
  const created = '2026-03-01T10:00:00Z';
  t.same(
    await recordHoldOrder(db, {
      connectionId: c.id,
      channel: 'default',
      channelOrderId: 'W-7',
      orderId: 500,
      order: { status: 'active', updated_at: created },
    }),
    [],
  );
  const read = (s: number) => Date.parse(created) + s * 1000;
  // A read too soon (within a second and the 2 s margin) may or may not include the commit: the hold stays.
  await mirror(db, c.id, [variant(1, { 1: ['10', '3'], 2: ['5'] })], { kind: 'delivery', readAsOf: read(2) });
  t.same(await quantities(db, c.id, 1), { default: '9', marketplace: '2', wholesale: '8' }, 'too soon to tell: held (never shown more)');
  const due = await expireHolds(db);
  t.same([...due.toRead], [[c.id, [1, 2]]], 'the housekeeping asks for a read of what an order the service has still holds');
  // The read after it: the commitment is in the stock, the line ends in the same write.
  const before = Math.max(0, ...(await feedAfter(db, 0)).map((x) => x.id));
  const changes = await mirror(db, c.id, [variant(1, { 1: ['10', '3'], 2: ['5'] })], { kind: 'delivery', readAsOf: read(4) });
  t.same(await quantities(db, c.id, 1), { default: '12', marketplace: '5', wholesale: '10' }, 'committed 3, hold ended: counted once');
  t.ok(changes.length, 'changes made');
  t.same(new Set((await feedAfter(db, before)).map((x) => x.at)).size, 1, 'in one transaction');
  let [hold] = await listHolds(db, { state: 'all' });
  t.same(
    hold!.held.map((l) => [l.variant_id, l.end_cause]),
    [
      [1, 'committed'],
      [2, null],
    ],
    'per line: SKU-2 has not been read since',
  );
  t.equal(hold!.ended_at, null);
  // A read of SKU-2 that changed nothing, noted by the drain: settled all the same.
  await db
    .updateTable('variants')
    .set({ read_as_of: new Date(read(5)) })
    .where('id', '=', 2)
    .execute();
  const settled = await db.transaction().execute((tx) => settleHolds(tx, c.id, { variantIds: [2] }, { kind: 'fetch' }));
  t.same(
    settled.map((x) => [x.channel, x.variant_id, x.quantity]),
    [
      ['default', 2, '4'],
      ['marketplace', 2, '2'],
      ['wholesale', 2, '3'],
    ],
    'its hold ends in every channel (the mirror shows no commitment of it here: the test only noted the read)',
  );
  [hold] = await listHolds(db, { state: 'all' });
  t.equal(hold!.end_cause, 'committed', 'every line ended: the hold too');
  const log = await db.selectFrom('sync_log').select(['action', 'detail']).where('resource', '=', 'hold').orderBy('id').execute();
  t.same(
    log.map((l) => [l.action, (l.detail as any).hold_ended ?? null]),
    [
      ['hold.created', null],
      ['hold.committed', false],
      ['hold.committed', true],
    ],
  );
});

t.test('a hold learns its order from the mirror and ends when the mirror shows it voided', async (t) => {
  const { db } = await testDatabase(t);
  const c = await shop(db);
  await createHold(db, settings, {
    connectionId: c.id,
    channel: 'web',
    source: 'api',
    input: { channel_order_id: 'V-1', lines: [{ sku: 'SKU-1', quantity: '1' }] },
  });
  // Imported through another path: the channel order's mapping names order 77.
  await db
    .insertInto('channel_orders')
    .values({ connection_id: c.id, channel: 'web', channel_order_id: 'V-1', order_id: 77, operation_id: null })
    .execute();
  await upsertRecords(db, catalog.order!, c.id, [{ id: 77, status: 'void', updated_at: '2026-03-01T11:00:00Z', order_line_item_ids: [] }]);
  const r = await expireHolds(db);
  t.equal(r.expired, 0);
  t.same(r.changes.map((x) => x.quantity).sort(), ['15', '8', '13'].sort(), 'the voided order frees the units');
  const [hold] = await listHolds(db, { state: 'all' });
  t.equal(hold!.end_cause, 'cancelled');
});

t.test('cancel and expire end a hold and give the units back', async (t) => {
  const { db } = await testDatabase(t);
  const c = await shop(db);
  const hold = (id: string) =>
    createHold(db, settings, {
      connectionId: c.id,
      channel: 'default',
      source: 'api',
      input: { channel_order_id: id, lines: [{ sku: 'SKU-1', quantity: '2' }] },
    });
  await hold('C-1');
  await hold('E-1');
  t.same(await quantities(db, c.id, 1), { default: '11', marketplace: '4', wholesale: '9' });
  const cancelled = await cancelHold(db, { connectionId: c.id, channel: 'default', channelOrderId: 'C-1' });
  t.ok(cancelled?.ended);
  t.same(await quantities(db, c.id, 1), { default: '13', marketplace: '6', wholesale: '11' });
  t.notOk((await cancelHold(db, { connectionId: c.id, channel: 'default', channelOrderId: 'C-1' }))?.ended, 'cancelled once');
  t.equal(await cancelHold(db, { connectionId: c.id, channel: 'default', channelOrderId: 'nope' }), undefined);
  t.equal((await expireHolds(db)).expired, 0, 'nothing due yet');
  await sql`UPDATE channel_holds SET expires_at = now() - interval '1 second' WHERE channel_order_id = 'E-1'`.execute(db);
  const r = await expireHolds(db);
  t.equal(r.expired, 1);
  t.same(await quantities(db, c.id, 1), { default: '15', marketplace: '8', wholesale: '13' });
  const ended = await listHolds(db, { state: 'ended' });
  t.same(ended.map((h) => [h.channel_order_id, h.end_cause]).sort(), [
    ['C-1', 'cancelled'],
    ['E-1', 'expired'],
  ]);
  const log = await db.selectFrom('sync_log').select('action').where('resource', '=', 'hold').orderBy('id').execute();
  t.same(
    log.map((l) => l.action),
    ['hold.created', 'hold.created', 'hold.cancelled', 'hold.expired'],
  );
});

t.test('a mirror write and a new hold of the same variant at once: the later waits, neither loses the other', async (t) => {
  const { db } = await testDatabase(t, { poolSize: 4 });
  const c = await shop(db);
  const hold = createHold(db, settings, {
    connectionId: c.id,
    channel: 'default',
    source: 'api',
    input: { channel_order_id: 'R-1', lines: [{ sku: 'SKU-1', quantity: '3' }] },
  });
  const write = mirror(db, c.id, [variant(1, { 1: ['20'], 2: ['5'] })], { kind: 'delivery' });
  await Promise.all([hold, write]);
  t.same(await quantities(db, c.id, 1), { default: '22', marketplace: '15', wholesale: '19' }, '25 less 3 held, whichever committed first');
});
