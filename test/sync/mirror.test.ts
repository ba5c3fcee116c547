import t from 'tap';
import { sql } from 'kysely';
import { addConnection, testDatabase } from '../support/db.ts';
import { fixture } from './harness.ts';
import { markGone, replaceCompositions, upsertChildren, upsertOther, upsertRecords } from '../../src/db/mirror.ts';
import { resources, orderLineItems } from '../../src/sync/resources.ts';

t.test('recorded variants go in whole: stock rows, null committed, "-0.0", composite null', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  const variants = fixture('variants');
  const r = await upsertRecords(db, resources.variant!, c.id, variants);
  t.equal(r.applied.length, variants.length);
  t.equal(r.inserted.length, variants.length);
  const rows = await db.selectFrom('variants').selectAll().where('connection_id', '=', c.id).execute();
  t.equal(rows.length, variants.length);
  for (const v of variants) {
    const row = rows.find((x) => x.id === v.id)!;
    t.same(row.raw, v, `raw of ${v.id} kept exactly`);
  }
  const v982891 = rows.find((x) => x.id === 982891)!;
  t.equal(v982891.composite, false, 'composite: null reads as false');
  const stock = await sql<{ variant_id: number; location_id: number; on_hand: string; committed: string; incoming: string }>`
    SELECT variant_id, location_id, on_hand::text, committed::text, incoming::text FROM stock_levels WHERE connection_id = ${c.id}`.execute(
    db,
  );
  const expected = variants.reduce((n, v) => n + (v.locations?.length ?? 0), 0);
  t.equal(stock.rows.length, expected, 'one stock row per variant location');
  const s = (v: number, l: number) => stock.rows.find((x) => x.variant_id === v && x.location_id === l)!;
  t.equal(s(38, 2).committed, '0', 'committed: null is 0');
  t.equal(s(720709, 159).on_hand, '-10', 'negative stock kept');
  t.equal(s(457, 2).incoming, '0');
  t.equal(s(457, 2).on_hand, '111');
});

t.test('monotonic and idempotent', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  const [v] = fixture('variants');
  const newer = {
    ...v,
    updated_at: '2016-01-01T00:00:00.000Z',
    name: 'newer',
    locations: [{ location_id: 2, stock_on_hand: '5', committed: '1' }],
  };
  t.same((await upsertRecords(db, resources.variant!, c.id, [newer])).applied, [v.id]);
  t.same((await upsertRecords(db, resources.variant!, c.id, [newer])).applied, [], 'the same record again writes nothing');
  t.same((await upsertRecords(db, resources.variant!, c.id, [v])).applied, [], 'an older record never replaces a newer one');
  const row = await db.selectFrom('variants').select(['name']).where('id', '=', v.id).executeTakeFirstOrThrow();
  t.equal(row.name, 'newer');
  const sl = await db.selectFrom('stock_levels').select(['on_hand']).where('variant_id', '=', v.id).execute();
  t.same(
    sl.map((r) => r.on_hand),
    ['5'],
  );
  // Same updated_at with different content (e.g. archived without a new timestamp) is taken.
  t.same((await upsertRecords(db, resources.variant!, c.id, [{ ...newer, status: 'archived' }])).applied, [v.id]);
  // The same id twice in one batch (a page shift) keeps the newest.
  const twice = await upsertRecords(db, resources.variant!, c.id, [
    { ...newer, updated_at: '2017-01-01T00:00:00Z', name: 'b' },
    { ...newer, updated_at: '2016-06-01T00:00:00Z', name: 'a' },
  ]);
  t.same(twice.applied, [v.id]);
  t.equal((await db.selectFrom('variants').select(['name']).where('id', '=', v.id).executeTakeFirstOrThrow()).name, 'b');
  t.same(await markGone(db, resources.variant!, c.id, [v.id, 12345]), [v.id]);
  t.same(await markGone(db, resources.variant!, c.id, [v.id]), [], 'gone twice changes nothing');
});

t.test("a variant's stock rows follow its locations: changed in place, added, and a location gone deleted", async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  const [v] = fixture('variants');
  const levels = async () =>
    (
      await sql<{ location_id: string; on_hand: string; committed: string }>`SELECT location_id::text, on_hand::text, committed::text
        FROM stock_levels WHERE connection_id = ${c.id} AND variant_id = ${v.id} ORDER BY location_id`.execute(db)
    ).rows.map((r) => [r.location_id, r.on_hand, r.committed]);
  const at = (updated: string, locations: unknown[]) => ({ ...v, updated_at: updated, locations });
  await upsertRecords(db, resources.variant!, c.id, [
    at('2016-01-01T00:00:00Z', [
      { location_id: 1, stock_on_hand: '3', committed: '0' },
      { location_id: 2, stock_on_hand: '5', committed: '1' },
    ]),
  ]);
  t.same(await levels(), [
    ['1', '3', '0'],
    ['2', '5', '1'],
  ]);
  await upsertRecords(db, resources.variant!, c.id, [
    at('2016-01-02T00:00:00Z', [
      { location_id: 2, stock_on_hand: '4', committed: null },
      { location_id: 3, stock_on_hand: '7' },
    ]),
  ]);
  t.same(
    await levels(),
    [
      ['2', '4', '0'],
      ['3', '7', '0'],
    ],
    'location 1 gone, 2 changed, 3 added',
  );
  // The older revision's maps instead of `locations`.
  const { locations: _, ...bare } = v;
  await upsertRecords(db, resources.variant!, c.id, [
    { ...bare, updated_at: '2016-01-03T00:00:00Z', stock_levels: { '3': '6.5' }, committed_stock_levels: { '3': '2' } },
  ]);
  t.same(await levels(), [['3', '6.5', '2']], 'from the maps: location 2 gone, 3 changed');
  await upsertRecords(db, resources.variant!, c.id, [at('2016-01-04T00:00:00Z', [])]);
  t.same(await levels(), [], 'no location left: no row');
});

t.test('every recorded record of a mirrored resource lands in its table with raw intact', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  for (const spec of Object.values(resources)) {
    let records: any[];
    try {
      records = fixture(spec.key);
    } catch {
      continue;
    }
    await upsertRecords(db, spec, c.id, records);
    const rows = await sql<{ id: number; raw: unknown }>`SELECT id, raw FROM ${sql.raw(spec.table)} WHERE connection_id = ${c.id}`.execute(
      db,
    );
    t.equal(rows.rows.length, records.length, `${spec.key}: all ${records.length}`);
    t.same(
      rows.rows.map((r) => r.raw).sort((a: any, b: any) => a.id - b.id),
      [...records].sort((a, b) => a.id - b.id),
      `${spec.key}: raw intact`,
    );
  }
  const orders = fixture('orders');
  await upsertChildren(db, orderLineItems, c.id, fixture('order_line_items'), orders);
  t.equal((await db.selectFrom('order_line_items').select('id').execute()).length, fixture('order_line_items').length);
  const currency = await db.selectFrom('currencies').select(['rate']).where('id', '=', 1909).executeTakeFirstOrThrow();
  t.equal(currency.rate, '2.54317');
  const loc = await db.selectFrom('locations').select(['name', 'holds_stock']).where('id', '=', 18).executeTakeFirstOrThrow();
  t.same(loc, { name: 'Primary Location', holds_stock: true });
  const f = await db.selectFrom('fulfillments').select(['packed_at']).where('id', '=', 99232).executeTakeFirstOrThrow();
  t.ok(f.packed_at instanceof Date, 'a date-only packed_at parses');
  await upsertOther(db, 'invoice', c.id, fixture('invoices'));
  t.equal((await db.selectFrom('other_records').select('id').execute()).length, fixture('invoices').length);
});

t.test('line items: parent from the item or from the parent ids, replaced when the parent changes', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  const order = { id: 7, updated_at: '2020-01-01T00:00:00Z', order_line_item_ids: [70, 71] };
  await upsertRecords(db, resources.order!, c.id, [order]);
  await upsertChildren(
    db,
    orderLineItems,
    c.id,
    [
      { id: 70, variant_id: 1, quantity: '2.0' },
      { id: 71, variant_id: 2, quantity: '1' },
    ],
    [order],
    [7],
  );
  t.same(await db.selectFrom('order_line_items').select(['id', 'order_id', 'quantity']).orderBy('id').execute(), [
    { id: 70, order_id: 7, quantity: '2.0' },
    { id: 71, order_id: 7, quantity: '1' },
  ]);
  await upsertChildren(
    db,
    orderLineItems,
    c.id,
    [{ id: 70, order_id: 7, variant_id: 1, quantity: '3' }],
    [{ ...order, order_line_item_ids: [70] }],
    [7],
  );
  t.same(await db.selectFrom('order_line_items').select(['id', 'quantity']).execute(), [{ id: 70, quantity: '3' }]);
  await upsertChildren(db, orderLineItems, c.id, [{ id: 99, variant_id: 1, quantity: '3' }], []);
  t.equal((await db.selectFrom('order_line_items').select('id').execute()).length, 1, 'an item with no known parent is not written');
});

t.test('compositions replaced per bundle; report which bundles changed', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  const rows = [
    { bundle_id: 1, component_id: 2, quantity: '2.0' },
    { bundle_id: 1, component_id: 3, quantity: '1' },
  ];
  t.same(await replaceCompositions(db, c.id, [1, 5], rows), [1]);
  t.same(await replaceCompositions(db, c.id, [1, 5], rows), [], 'same makeup: no change');
  t.same(await replaceCompositions(db, c.id, [1], [rows[0]]), [1]);
  t.same(await replaceCompositions(db, c.id, [1], []), [1], 'a bundle the answer leaves out has none');
  t.equal((await db.selectFrom('compositions').select('bundle_id').execute()).length, 0);
});
