// A connection's first sweep loads the mirror: what it writes is not drift. One that fails part-way leaves the
// cursors of the resources it finished; its retry loads the rest and is still the first sweep (`sweep.initial`,
// no drift), which is what an operator (and the benchmarks' start) waits for. A collection the service does not
// offer is no load.
import t from 'tap';
import { addConnection, testDatabase } from '../support/db.ts';
import { memoryReader } from './harness.ts';
import { captureLogger } from '../support/log.ts';
import { sweep } from '../../src/sync/sweep.ts';
import { rulesFrom } from '../../src/stock/rules.ts';

const UPDATED_AT = '2026-01-01T12:00:00Z';
const listings: Record<string, any[]> = {
  '/variants': [
    { id: 1, sku: 'S1', status: 'active', updated_at: UPDATED_AT, manage_stock: true, locations: [{ location_id: 1, stock_on_hand: '5' }] },
  ],
  '/products': [{ id: 1, name: 'P1', status: 'active', updated_at: UPDATED_AT, variant_ids: [1] }],
};

t.test('a first sweep that failed part-way is retried as the first sweep: its loads are not drift', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  let down = true;
  const listed: string[] = [];
  const reader = memoryReader(listings['/variants']!, [], Date.parse('2026-01-01T12:00:30Z'), async (path) => {
    listed.push(path);
    if (path === '/products' && down) throw Object.assign(new Error('GET /products: 500'), { status: 500 });
    // A collection this service does not offer: it never gets a cursor, and is never a first load.
    if (path === '/purchase_orders') throw Object.assign(new Error('GET /purchase_orders: 404'), { status: 404 });
    return structuredClone(listings[path] ?? []);
  });
  reader.connection.id = c.id;
  const deps = {
    db,
    log: captureLogger().log,
    client: reader,
    rules: rulesFrom({ CHANNEL_LOCATIONS: '', CHANNEL_SAFETY_BUFFER: '0' }),
    overlapSeconds: 0,
    clockMarginMs: 0,
  };

  await t.rejects(sweep(deps, { full: true, wait: true }), /500/, 'the first sweep fails at the products');
  t.same(listed, ['/variants', '/products'], 'after it had loaded the variants');
  const cursors = await db.selectFrom('sync_cursors').select('resource').where('connection_id', '=', c.id).execute();
  t.same(
    cursors.map((r) => r.resource),
    ['variant'],
    'which keep their cursor',
  );

  down = false;
  const retry = await sweep(deps, { full: true, wait: true });
  t.equal(retry.initial, true, 'the retry is the first sweep still');
  t.equal(retry.drift, 0, 'what it loads is not drift');
  t.equal(retry.resources.product?.applied, 1, 'it loaded the product');
  const logged = await db
    .selectFrom('sync_log')
    .select(['action', 'outcome'])
    .where('connection_id', '=', c.id)
    .where('action', 'like', 'sweep%')
    .execute();
  t.same(logged, [{ action: 'sweep.initial', outcome: 'ok' }], 'logged as the first sweep, without a warning');

  const next = await sweep(deps, { full: true, wait: true });
  t.equal(next.initial, false, 'the sweep after it is not, though one collection never has a cursor');
  t.same(next.unavailable, ['purchase_order']);
});
