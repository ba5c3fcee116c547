// Channel quantities from the mirror: causes, the feed route, and `commerce-sync stock`.
import t from 'tap';
import { addConnection, testDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { runNode } from '../support/processes.ts';
import { createApp, listen } from '../../src/server.ts';
import type { Runtime } from '../../src/runtime.ts';
import { upsertRecords, replaceCompositions } from '../../src/db/mirror.ts';
import { resources } from '../../src/sync/resources.ts';
import { applyRulesIfChanged, recomputeChannel } from '../../src/stock/recompute.ts';
import { rulesFrom } from '../../src/stock/rules.ts';
import { updateChannelRules } from '../../src/db/channels.ts';
import { changeChannel, findChannel } from '../../src/channels/channels.ts';
import { mountRoutes } from '../../src/channels/routes.ts';
import type { Db } from '../../src/db/index.ts';

const variant = (id: number, onHand: string, extra: object = {}) => ({
  id,
  sku: `SKU-${id}`,
  status: 'active',
  updated_at: new Date(Date.UTC(2026, 0, 1, 0, 0, Number(onHand.replace(/\D/g, '').slice(0, 2) || 0))).toISOString(),
  composite: false,
  manage_stock: true,
  keep_selling: false,
  max_online: null,
  locations: [
    { location_id: 1, stock_on_hand: onHand, committed: '1', incoming: null },
    { location_id: 2, stock_on_hand: '2', committed: null },
  ],
  ...extra,
});

async function seed(db: Db, connectionId: number) {
  const rules = rulesFrom({ CHANNEL_LOCATIONS: '', CHANNEL_SAFETY_BUFFER: '0' });
  const write = async (records: any[], cause: 'delivery' | 'sweep') => {
    const r = await upsertRecords(db, resources.variant!, connectionId, records);
    return recomputeChannel(db, rules, connectionId, r.applied, {
      kind: cause,
      jobId: 'job-1',
      deliveries: cause === 'delivery' ? [{ rowId: 1, deliveryId: 'dlv-1' }] : [],
    });
  };
  return { rules, write };
}

t.test('changes carry their cause; the feed pages by cursor; the route validates', async (t) => {
  const { db, pool } = await testDatabase(t);
  const c = await addConnection(db);
  const { write } = await seed(db, c.id);
  const first = await write([variant(1, '10'), variant(2, '5', { manage_stock: false }), variant(3, '0', { keep_selling: true })], 'sweep');
  t.same(
    first.map((x) => [x.variant_id, x.quantity, x.tracked, x.backorderable]),
    [
      [1, '11', true, false],
      [2, null, false, false],
      [3, '1', true, true],
    ],
  );
  const second = await write([variant(1, '20')], 'delivery');
  t.same(
    second.map((x) => [x.variant_id, x.before_quantity, x.quantity, x.cause, x.delivery_id]),
    [[1, '11', '21', 'delivery', 'dlv-1']],
  );
  t.same(await write([variant(1, '20')], 'delivery'), [], 'the same record again: no change');

  const { app, router } = createApp(pool, captureLogger().log);
  mountRoutes({ database: { db } } as unknown as Runtime, router);
  const server = await listen(app, 0, '127.0.0.1');
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${server.port}/api/channel-stock`;
  const page1: any = await (await fetch(`${base}?since=0&limit=2`)).json();
  t.equal(page1.changes.length, 2);
  t.equal(page1.has_more, true);
  const page2: any = await (await fetch(`${base}?since=${page1.next}&limit=2`)).json();
  t.same(
    page2.changes.map((x: any) => [x.variant_id, x.quantity, x.before_quantity, x.cause, x.connection]),
    [
      [3, '1', null, 'sweep', 'shop'],
      [1, '21', '11', 'delivery', 'shop'],
    ],
  );
  t.equal(page2.has_more, false);
  const page3 = await (await fetch(`${base}?since=${page2.next}`)).json();
  t.same(page3, { changes: [], next: page2.next, has_more: false }, 'nothing new: the same cursor back');
  t.equal((await fetch(`${base}?since=abc`)).status, 400);
  t.equal(((await fetch(`${base}?since=0&connection=other`).then((r) => r.json())) as any).changes.length, 0);
});

t.test('bundles recompute when a component changes; a change of rules applies', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  const { write } = await seed(db, c.id);
  await write([variant(1, '10'), variant(2, '4'), variant(9, '0', { composite: true })], 'sweep');
  await replaceCompositions(
    db,
    c.id,
    [9],
    [
      { bundle_id: 9, component_id: 1, quantity: '2' },
      { bundle_id: 9, component_id: 2, quantity: '1.5' },
    ],
  );
  const rules = rulesFrom({ CHANNEL_LOCATIONS: '', CHANNEL_SAFETY_BUFFER: '0' });
  const made = await recomputeChannel(db, rules, c.id, [9], { kind: 'fetch' });
  // component 1: 11 available / 2 = 5; component 2: 5 / 1.5 = 3 -> 3
  t.same(
    made.map((x) => [x.variant_id, x.quantity]),
    [[9, '3']],
  );
  const after = await write([variant(2, '40')], 'delivery');
  t.same(
    after.map((x) => [x.variant_id, x.quantity]).sort(),
    [
      [2, '41'],
      [9, '5'],
    ],
    'a component change moves the bundle too',
  );
  const { recomputed } = await changeChannel(db, await findChannel(db, 'default'), { locations: [2], buffer_units: '1' });
  t.ok(recomputed.changes > 0);
  const q = await db.selectFrom('channel_quantities').select(['variant_id', 'quantity']).orderBy('variant_id').execute();
  t.same(
    q,
    [
      { variant_id: 1, quantity: '1' },
      { variant_id: 2, quantity: '1' },
      { variant_id: 9, quantity: '0' },
    ],
    "the default channel's rules changed: only location 2 counts, less a buffer of 1",
  );
});

t.test('commerce-sync stock --json prints stock per location and the channel quantity as decimal strings', async (t) => {
  const { db, url } = await testDatabase(t);
  const c = await addConnection(db);
  const { write } = await seed(db, c.id);
  await write([variant(1, '-0.0'), variant(2, '3.25', { manage_stock: false })], 'sweep');
  const run = async (args: string[]) => {
    const p = await runNode(['src/cli.ts', 'stock', ...args], { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'silent' });
    return { code: p.code ?? 1, out: p.out || p.err };
  };
  const json = await run(['--json', '--connection', 'shop']);
  t.equal(json.code, 0, json.out.slice(0, 500));
  t.match(JSON.parse(json.out), [
    {
      variant_id: 1,
      sku: 'SKU-1',
      status: 'active',
      channel_quantity: '1',
      locations: [
        { location_id: 1, on_hand: '0', committed: '1', incoming: '0', available: '-1' },
        { location_id: 2, on_hand: '2', committed: '0', incoming: '0', available: '2' },
      ],
    },
    {
      variant_id: 2,
      sku: 'SKU-2',
      channel_quantity: null,
      locations: [{ location_id: 1, on_hand: '3.25', available: '2.25' }, { location_id: 2 }],
    },
  ]);
  const one = await run(['--sku', 'SKU-2']);
  t.match(one.out, /SKU-2.*untracked/);
  t.equal((await run(['--sku', 'NOPE'])).code, 1, 'an unknown SKU exits 1');
});

t.test("the settings make a connection's default channel; changed rules are applied once to every stored quantity", async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  const { write } = await seed(db, c.id);
  await write([variant(1, '10'), variant(2, '4')], 'sweep');
  const settings = { CHANNEL_LOCATIONS: '', CHANNEL_SAFETY_BUFFER: '0' };
  t.equal(await applyRulesIfChanged(db, settings, c.id), 0, 'first time: recorded, nothing to change');
  t.equal(await applyRulesIfChanged(db, settings, c.id), null, 'same rules: nothing done');
  t.equal(
    await applyRulesIfChanged(db, { ...settings, CHANNEL_SAFETY_BUFFER: '2.0' }, c.id),
    null,
    'the settings made the channel; its rules are its own since',
  );
  // A change of rules whose recomputation did not run (a crash between the two): the worker applies it.
  const ch = await findChannel(db, 'default');
  await updateChannelRules(db, Number(ch.id), { ...ch, buffer_units: '2.0' });
  t.equal(await applyRulesIfChanged(db, settings, c.id), 2, 'a new buffer changes both');
  t.equal(await applyRulesIfChanged(db, settings, c.id), null);
  await updateChannelRules(db, Number(ch.id), { ...ch, buffer_units: '2' });
  t.equal(await applyRulesIfChanged(db, settings, c.id), null, '2.0 and 2 are the same rule');
  await updateChannelRules(db, Number(ch.id), { ...ch, location_ids: [1], buffer_units: '2' });
  t.equal(await applyRulesIfChanged(db, settings, c.id), 2);
  const q = await db
    .selectFrom('channel_quantity_changes')
    .select(['variant_id', 'quantity', 'cause'])
    .where('cause', '=', 'rules')
    .orderBy('id')
    .execute();
  t.same(q, [
    { variant_id: 1, quantity: '9', cause: 'rules' },
    { variant_id: 2, quantity: '3', cause: 'rules' },
    { variant_id: 1, quantity: '7', cause: 'rules' },
    { variant_id: 2, quantity: '1', cause: 'rules' },
  ]);
});
