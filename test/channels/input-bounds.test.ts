// What the review found answering 500 or doing expensive work for a cheap request: oversized or malformed input
// (huge decimals, control characters, a 500 KB channel order id, 20,000 hold lines, ids beyond 2^63) gets a 400
// naming the field; a PATCH that changes nothing writes nothing and recomputes nothing; PATCHes at once make one
// recomputation; overrides come in pages; a pause's reason has a cap; an override's SKU has a cap and is one the
// mirror has.
import { sql } from 'kysely';
import t from 'tap';
import { setDestination } from '../../src/channels/destinations.ts';
import { addChannel } from '../../src/channels/channels.ts';
import { mountRoutes } from '../../src/channels/routes.ts';
import { mountRoutes as mountStockRoutes } from '../../src/stock/variant-routes.ts';
import { testConfig } from '../support/config.ts';
import { addConnection, testDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { testRuntime } from '../support/runtime.ts';
import type { Teardown } from '../support/teardown.ts';
import { mirror, variant } from './harness.ts';

async function api(t: Teardown) {
  const tdb = await testDatabase(t);
  const { db } = tdb;
  const rt = await testRuntime(t, tdb, testConfig(), captureLogger('silent').log);
  mountRoutes(rt, rt.router);
  mountStockRoutes(rt, rt.router);
  await rt.listen(0);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${rt.publicUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const c = await addConnection(db);
  await mirror(db, c.id, [variant(1, { 1: ['10'] }), variant(2, { 1: ['4'] })]);
  return { db, rt, call, c };
}

const problems = (r: { body: any }) => JSON.stringify(r.body);

t.test('oversized and malformed input: 400 naming the field, nothing stored', async (t) => {
  const { db, call } = await api(t);
  const huge = '9'.repeat(200_000);
  const digits = '9'.repeat(1000);
  for (const buffer of [huge, digits]) {
    const r = await call('PATCH', '/api/channels/default', { buffer_units: buffer });
    t.equal(r.status, 400, `a buffer of ${buffer.length} digits`);
    t.match(problems(r), /buffer_units/);
  }
  t.equal((await call('PATCH', '/api/channels/default', { buffer_units: '12345678901234.5' })).status, 200, '15 digits are fine');
  t.match(
    await call('PUT', '/api/channels/default/overrides/SKU-1', { mode: 'fixed', quantity: digits }),
    { status: 400, body: { problems: [/quantity/] } },
    'a fixed quantity of 1,000 digits is not published to channels',
  );
  const hold = (body: unknown) => call('POST', '/api/channels/default/holds', body);
  // A NUL byte is refused before any route (test/console/input-boundary.test.ts); other control characters here.
  t.match(await hold({ channel_order_id: 'A\u0000B', lines: [{ sku: 'SKU-1', quantity: '1' }] }), {
    status: 400,
    body: { error: /channel_order_id.*NUL/ },
  });
  t.match(await hold({ channel_order_id: 'A\u0001B', lines: [{ sku: 'SKU-1', quantity: '1' }] }), {
    status: 400,
    body: { problems: [/channel_order_id.*control/] },
  });
  t.match(await hold({ channel_order_id: 'A-1', lines: [{ sku: 'SKU\u00011', quantity: '1' }] }), {
    status: 400,
    body: { problems: [/sku.*control/] },
  });
  t.match(await hold({ channel_order_id: 'x'.repeat(500_000), lines: [{ sku: 'SKU-1', quantity: '1' }] }), {
    status: 400,
    body: { problems: [/channel_order_id.*at most 255/] },
  });
  const many = Array.from({ length: 20_000 }, () => ({ sku: 'SKU-1', quantity: '1' }));
  t.match(await hold({ channel_order_id: 'A-2', lines: many }), { status: 400, body: { problems: [/lines.*at most 1000/] } });
  t.match(await hold({ channel_order_id: 'A-3', lines: [{ sku: 'SKU-1', quantity: huge }] }), {
    status: 400,
    body: { problems: [/quantity/] },
  });
  t.equal((await db.selectFrom('channel_holds').select('id').execute()).length, 0, 'no hold was made');
  for (const path of [
    '/api/channels/default/stock?since=18446744073709551616',
    '/api/channel-stock?since=9223372036854775808',
    '/api/channels/default/order-events?since=99999999999999999999',
  ]) {
    const r = await call('GET', path);
    t.equal(r.status, 400, `${path}: 400`);
    t.match(problems(r), /since/);
  }
  t.equal((await call('GET', '/api/variants/shop/18446744073709551616/channels')).status, 404, 'a variant id beyond any id: not found');
});

t.test('a PATCH that changes nothing recomputes nothing; PATCHes at once make one recomputation', async (t) => {
  const { db, call } = await api(t);
  t.equal((await call('PATCH', '/api/channels/default', { buffer_units: '1' })).status, 200);
  const changes = async () =>
    Number((await sql<{ n: number }>`SELECT count(*)::int AS n FROM channel_quantity_changes`.execute(db)).rows[0]!.n);
  const before = await changes();
  const again = await call('PATCH', '/api/channels/default', { buffer_units: '1.0' });
  t.match(again, { status: 200, body: { recomputed: { changes: 0 } } }, '1.0 is the same rule as 1');
  t.equal(await changes(), before, 'no change written');
  const logged = await db.selectFrom('sync_log').select('id').where('action', '=', 'channel.changed').execute();
  t.equal(logged.length, 1, 'and nothing logged as changed');
  // Five PATCHes to the same rules at once: the recomputations wait for each other and then find them applied.
  const all = await Promise.all(Array.from({ length: 5 }, () => call('PATCH', '/api/channels/default', { buffer_units: '2' })));
  t.ok(all.every((r) => r.status === 200));
  t.equal(
    all.reduce((n, r) => n + r.body.recomputed.changes, 0),
    2,
    'the two variants changed once, not five times',
  );
});

t.test('overrides come in pages; a pause reason has a cap', async (t) => {
  const { db, rt, call, c } = await api(t);
  const { channel } = await addChannel(db, c.id, { name: 'webshop' });
  await sql`INSERT INTO channel_overrides (channel_id, sku, mode)
    SELECT ${Number(channel.id)}, 'SKU-' || lpad(g::text, 5, '0'), 'exclude' FROM generate_series(1, 1200) g`.execute(db);
  const first = await call('GET', '/api/channels/webshop/overrides');
  t.equal(first.body.overrides.length, 500, 'a page of 500');
  t.equal(first.body.next, 'SKU-00500');
  const second = await call('GET', `/api/channels/webshop/overrides?after=${first.body.next}&limit=500`);
  t.equal(second.body.overrides[0].sku, 'SKU-00501');
  const last = await call('GET', '/api/channels/webshop/overrides?after=SKU-01000');
  t.equal(last.body.overrides.length, 200);
  t.equal(last.body.next, null, 'the last page says so');
  t.equal((await call('GET', '/api/channels/webshop')).body.overrides.length, 500, 'the channel shows the first page');
  t.equal((await call('GET', '/api/channels/webshop/overrides?limit=100000')).status, 400);

  await setDestination(db, rt.clients.key(rt.config), Number(channel.id), { url: 'http://127.0.0.1:9/hook' }, ['127.0.0.1']);
  const long = await call('POST', '/api/channels/webshop/destination/pause', { reason: 'r'.repeat(201) });
  t.match(long, { status: 400, body: { problems: [/reason.*200/] } });
  t.match(await call('POST', '/api/channels/webshop/destination/pause', { reason: 'maintenance' }), {
    status: 200,
    body: { destination: { paused_reason: 'maintenance' } },
  });
});

t.test("an override's SKU: at most 255 characters, and one the mirror has", async (t) => {
  const { db, call } = await api(t);
  const put = (sku: string) => call('PUT', `/api/channels/default/overrides/${encodeURIComponent(sku)}`, { mode: 'exclude' });
  t.match(await put('S'.repeat(8000)), { status: 400, body: { problems: [/sku: at most 255 characters/] } }, 'an 8,000-character SKU');
  t.match(
    await put('SKU-404'),
    { status: 400, body: { problems: [/sku: .*no variant with SKU "SKU-404"/] } },
    'a SKU the mirror does not have',
  );
  t.match(await put(' SKU-1 '), { status: 200, body: { override: { sku: 'SKU-1', mode: 'exclude' } } }, 'a mirrored SKU, trimmed');
  t.same(
    (await db.selectFrom('channel_overrides').select('sku').execute()).map((o) => o.sku),
    ['SKU-1'],
    'only that one is stored',
  );
});
