// The channels JSON API: channels and overrides, holds (made, answered again, refused, cancelled), each
// variant's quantity per channel with why, the per-channel feed, and names several connections share.
import t from 'tap';
import { addConnection, testDatabase } from '../support/db.ts';
import { testConfig } from '../support/config.ts';
import { captureLogger } from '../support/log.ts';
import { mountRoutes } from '../../src/channels/routes.ts';
import { mountRoutes as mountStockRoutes } from '../../src/stock/variant-routes.ts';
import { testRuntime } from '../support/runtime.ts';
import { mirror, variant } from './harness.ts';
import type { Teardown } from '../support/teardown.ts';

async function api(t: Teardown) {
  const tdb = await testDatabase(t);
  const { db } = tdb;
  const rt = await testRuntime(t, tdb, testConfig({ SERVICE_CLOCK_MARGIN_SECONDS: 2 }), captureLogger('silent').log);
  mountRoutes(rt, rt.router);
  mountStockRoutes(rt, rt.router);
  await rt.listen(0);
  const base = rt.publicUrl;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  return { db, call };
}

t.test('three channels, three quantities, each explained; a hold lowers all three at once', async (t) => {
  const { db, call } = await api(t);
  const c = await addConnection(db);
  await mirror(db, c.id, [variant(1, { 1: ['10'], 2: ['5'] })]);

  t.match(await call('GET', '/api/channels'), {
    status: 200,
    body: { channels: [{ connection: 'shop', name: 'default', locations: null, applied: false }] },
  });
  const made = await call('POST', '/api/channels', { name: 'marketplace', locations: [1], buffer_units: '2' });
  t.equal(made.status, 201);
  t.match(made.body, {
    channel: { name: 'marketplace', connection: 'shop', locations: [1], buffer_units: '2', applied: true },
    recomputed: { changes: 1 },
  });
  t.equal(
    (await call('POST', '/api/channels', { name: 'wholesale', buffer_units: 1, buffer_percent: '10', cap_max_online: false })).status,
    201,
  );
  t.equal((await call('POST', '/api/channels', { name: 'marketplace' })).status, 409, 'a name once per connection');
  const bad = await call('POST', '/api/channels', { name: 'x y', locations: [], buffer_percent: '120' });
  t.equal(bad.status, 400);
  t.match(bad.body.problems.join('\n'), /name: .*\(got "x y"\)/);
  t.match(bad.body.problems.join('\n'), /locations: .*\(got \[\]\)/);
  t.match(bad.body.problems.join('\n'), /buffer_percent: a percentage from 0 to 100 \(got "120"\)/);

  const put = await call('PUT', '/api/channels/wholesale/overrides/SKU-1', { mode: 'buffer', buffer_units: '4' });
  t.match(put, { status: 200, body: { override: { sku: 'SKU-1', mode: 'buffer', buffer_units: '4' }, changes: 1 } });
  t.match(await call('PUT', '/api/channels/wholesale/overrides/SKU-1', { mode: 'fixed' }), {
    status: 400,
    body: { problems: [/quantity/] },
  });

  const view = async () => (await call('GET', '/api/variants/shop/1/channels')).body.channels;
  t.match(await view(), [
    { channel: 'default', quantity: '15', why: { counted: '15', held: '0', buffer: '0' } },
    { channel: 'marketplace', quantity: '8', why: { counted: '10', held: '0', buffer: '2' } },
    { channel: 'wholesale', quantity: '11', why: { counted: '15', buffer: '4', override: 'buffer' } },
  ]);

  const hold = await call('POST', '/api/channels/marketplace/holds', { channel_order_id: 'M-1', lines: [{ sku: 'SKU-1', quantity: '2' }] });
  t.equal(hold.status, 201);
  t.match(hold.body, {
    created: true,
    changes: 3,
    hold: { channel: 'marketplace', channel_order_id: 'M-1', state: 'active', held: [{ sku: 'SKU-1', quantity: '2' }] },
  });
  const after = await view();
  t.same(
    after.map((q: any) => q.quantity),
    ['13', '6', '9'],
    'all three lowered by the one call',
  );
  t.match(after[1].why.holds, [{ channel: 'marketplace', channel_order_id: 'M-1', quantity: '2', variant_id: 1 }]);
  const again = await call('POST', '/api/channels/marketplace/holds', {
    channel_order_id: 'M-1',
    lines: [{ sku: 'SKU-1', quantity: '2' }],
  });
  t.match(again, { status: 200, body: { created: false, changes: 0, hold: { id: hold.body.hold.id } } }, 'idempotent per channel order');
  t.equal(
    (await call('POST', '/api/channels/marketplace/holds', { channel_order_id: 'M-1', lines: [{ sku: 'SKU-1', quantity: '5' }] })).status,
    409,
  );
  t.match(await call('POST', '/api/channels/marketplace/holds', { channel_order_id: 'M-2', lines: [{ sku: 'NOPE', quantity: '1' }] }), {
    status: 400,
    body: { error: /unknown SKU NOPE/ },
  });
  t.match(await call('POST', '/api/channels/marketplace/holds', { channel_order_id: 'M-2', lines: [{ sku: 'SKU-1', quantity: '-1' }] }), {
    status: 400,
    body: { problems: [/lines.0.quantity: .*\(got "-1"\)/] },
  });
  t.match(await call('GET', '/api/channels/marketplace/holds'), { status: 200, body: { holds: [{ channel_order_id: 'M-1' }] } });
  t.match(await call('DELETE', '/api/channels/marketplace/holds/M-1'), {
    status: 200,
    body: { ended: true, hold: { state: 'ended', end_cause: 'cancelled' } },
  });
  t.same(
    (await view()).map((q: any) => q.quantity),
    ['15', '8', '11'],
  );
  t.equal((await call('DELETE', '/api/channels/marketplace/holds/M-9')).status, 404);

  // The per-channel feed: only that channel's changes, by cursor.
  const feed = await call('GET', '/api/channels/marketplace/stock?since=0&limit=2');
  t.match(feed.body, {
    has_more: true,
    changes: [
      { channel: 'marketplace', quantity: '8', cause: 'rules' },
      { quantity: '6', cause: 'hold' },
    ],
  });
  const rest = await call('GET', `/api/channels/marketplace/stock?since=${feed.body.next}`);
  t.match(rest.body, { has_more: false, changes: [{ channel: 'marketplace', before_quantity: '6', quantity: '8', cause: 'hold' }] });
  t.equal((await call('GET', '/api/channels/marketplace/stock?since=x')).status, 400);
  await db.insertInto('channel_changes_pruned').values({ through_id: 2 }).execute();
  t.match(await call('GET', '/api/channels/marketplace/stock?since=1'), { status: 410, body: { kept_after: 2 } });

  t.match(await call('PATCH', '/api/channels/marketplace', { buffer_units: '0' }), {
    status: 200,
    body: { channel: { buffer_units: '0' }, recomputed: { changes: 1 } },
  });
  t.equal((await call('PATCH', '/api/channels/marketplace', { name: 'other' })).status, 400, 'a name is not changed');
  t.match(await call('DELETE', '/api/channels/wholesale/overrides/SKU-1'), { status: 200, body: { changes: 1 } });
  t.equal((await call('DELETE', '/api/channels/wholesale/overrides/SKU-1')).status, 404);
  t.equal((await call('DELETE', '/api/channels/wholesale')).status, 200);
  t.equal((await call('DELETE', '/api/channels/marketplace')).status, 200);
  t.match(await call('DELETE', '/api/channels/default'), { status: 409, body: { error: /only channel/ } });
});

t.test('a channel name on several connections needs ?connection=NAME', async (t) => {
  const { db, call } = await api(t);
  const a = await addConnection(db, 'shop-a');
  const b = await addConnection(db, 'shop-b');
  await mirror(db, a.id, [variant(1, { 1: ['3'] })]);
  await mirror(db, b.id, [variant(1, { 1: ['4'] })]);
  t.match(await call('POST', '/api/channels', { name: 'web' }), {
    status: 400,
    body: { error: /several connections exist \(shop-a, shop-b\)/ },
  });
  t.equal((await call('POST', '/api/channels', { name: 'web', connection: 'shop-a' })).status, 201);
  t.equal((await call('POST', '/api/channels?connection=shop-b', { name: 'web' })).status, 201);
  t.match(await call('GET', '/api/channels/web'), {
    status: 400,
    body: { error: /channel "web" exists on several connections \(shop-a, shop-b\): say which with connection=NAME/ },
  });
  t.match(await call('GET', '/api/channels/web?connection=shop-b'), { status: 200, body: { channel: { connection: 'shop-b' } } });
  t.equal((await call('GET', '/api/channels/nope')).status, 404);
  t.match(await call('GET', '/api/channels?connection=shop-a'), { body: { channels: [{ name: 'default' }, { name: 'web' }] } });
  const held = await call('POST', '/api/channels/web/holds?connection=shop-a', {
    channel_order_id: 1,
    lines: [{ sku: 'SKU-1', quantity: 1 }],
  });
  t.match(held, { status: 201, body: { hold: { connection: 'shop-a', channel_order_id: '1' } } });
  t.match((await call('GET', '/api/variants/shop-a/1/channels')).body.channels, [{ quantity: '2' }, { quantity: '2' }]);
  t.match(
    (await call('GET', '/api/variants/shop-b/1/channels')).body.channels,
    [{ quantity: '4' }, { quantity: '4' }],
    'the other account is not held',
  );
});
