// The sync loop against both behaviours of the service (the spec's and the documented one, real-service-notes):
// order lines read without list sideloads, committed stock following merchant orders, the documented events read
// for what they move, disabled products kept, and the request cost of a burst.
import t from 'tap';
import { Decimal } from 'decimal.js';
import { sql } from 'kysely';
import { catalog, eventsIn, readsFor, SUBSCRIBED_EVENTS } from '../../src/catalog/index.ts';
import { normaliseEvent } from '../../src/receiver/events.ts';
import { readLines } from '../../src/api/live.ts';
import { PROFILES } from '../support/sandbox.ts';
import { startLoop, type Loop } from './harness.ts';

t.test('every subscribed event is handled by the receiver and read by the worker', async (t) => {
  for (const e of SUBSCRIBED_EVENTS) {
    const n = normaliseEvent(e.replace(/^([a-z_]+)\./, (_m, r: string) => `${catalog[r]!.key}.`));
    t.equal(n.handled, true, `${e} delivered as ${catalog[n.resource!]!.key}.${n.action} is handled`);
    t.ok(readsFor(n.resource!, n.action).includes('record'), `${e}: the worker reads the record`);
  }
  t.ok(eventsIn('spec').length === 8, 'the spec lists eight events');
  for (const e of [
    'order.fulfilled',
    'fulfillment.fulfilled',
    'fulfillment_return.received',
    'purchase_order.received',
    'procurement.create',
    'stock_adjustment.create',
    'stock_transfer.create',
    'order.finalized',
  ]) {
    t.ok(SUBSCRIBED_EVENTS.includes(e), `subscribed to ${e}`);
  }
  t.same(readsFor('order', 'fulfilled'), ['record', 'lines', 'variants'], 'order.fulfilled -> the order, its lines, their variants');
  t.ok(readsFor('stock_adjustment', 'create').includes('variants'), 'stock_adjustment.create -> the variants it moves');
  t.ok(readsFor('procurement', 'create').includes('purchase_order'), 'procurement.create -> its purchase order (and so its variants)');
});

async function firstSweep(loop: Loop): Promise<void> {
  await loop.until(
    'the first full sweep',
    async () => !!(await loop.tdb.db.selectFrom('sync_log').select('id').where('action', '=', 'sweep.initial').executeTakeFirst()),
    60_000,
  );
}

/** Mirror committed stock per variant and location differs from the sandbox's: the differences. */
async function committedDiff(loop: Loop): Promise<string[]> {
  const variants = (await loop.admin('GET', 'snapshot?resource=variants')).variants as any[];
  const rows = await sql<{ variant_id: number; location_id: number; committed: string }>`SELECT variant_id, location_id, committed::text
    FROM stock_levels WHERE connection_id = ${loop.connection.id}`.execute(loop.tdb.db);
  const mirror = new Map(rows.rows.map((r) => [`${r.variant_id}@${r.location_id}`, new Decimal(r.committed)]));
  const out: string[] = [];
  for (const v of variants) {
    for (const l of v.locations ?? []) {
      const want = new Decimal(l.committed ?? 0);
      const got = mirror.get(`${v.id}@${l.location_id}`) ?? new Decimal(0);
      if (!got.eq(want)) out.push(`${v.sku}@${l.location_id}: mirror ${got} sandbox ${want}`);
    }
  }
  return out;
}

async function orderLinesDiff(loop: Loop): Promise<{ missing: number; orders: number; lines: number }> {
  const orders = (await loop.admin('GET', 'snapshot?resource=orders')).orders as any[];
  const lines = (await loop.admin('GET', 'snapshot?resource=order_line_items')).order_line_items as any[];
  const mirrored = await sql<{
    id: number;
    order_id: number;
  }>`SELECT id, order_id FROM order_line_items WHERE connection_id = ${loop.connection.id}`.execute(loop.tdb.db);
  const have = new Set(mirrored.rows.map((r) => `${r.id}/${r.order_id}`));
  const live = new Set(orders.filter((o) => o.status !== 'archived').map((o) => Number(o.id)));
  const wanted = lines.filter((l) => live.has(Number(l.order_id)));
  return { missing: wanted.filter((l) => !have.has(`${l.id}/${l.order_id}`)).length, orders: live.size, lines: wanted.length };
}

const gets = (stats: any) =>
  Object.fromEntries(Object.entries(stats.requests.by_route as Record<string, number>).filter(([k]) => k.startsWith('GET ')));

for (const profile of PROFILES) {
  t.test(`${profile}: merchant orders reach the mirror with their lines, committed stock equal, at a coalesced cost`, async (t) => {
    const loop = await startLoop(t, { profile, firstSweep: true, sandbox: { variants: 30 } });
    await firstSweep(loop);
    const before = gets(await loop.admin('GET', 'stats'));
    const N = 40;
    await loop.admin('POST', 'activity', { operations: N, kinds: ['place_order'] });
    await loop.admin('POST', 'deliveries/flush');
    await loop.until(
      'every order line mirrored and committed stock equal to the sandbox',
      async () => (await orderLinesDiff(loop)).missing === 0 && (await committedDiff(loop)).length === 0,
      60_000,
    );
    const after = gets(await loop.admin('GET', 'stats'));
    const spent = Object.fromEntries(
      Object.entries(after)
        .map(([k, v]) => [k, v - (before[k] ?? 0)])
        .filter(([, v]) => (v as number) > 0),
    );
    const total = Object.values(spent).reduce((n: number, v) => n + (v as number), 0);
    const { lines } = await orderLinesDiff(loop);
    t.comment(`${profile}: ${N} new orders (${lines} lines in all) read with ${total} GET requests: ${JSON.stringify(spent)}`);
    t.same(await committedDiff(loop), [], 'committed stock per variant and location equals the sandbox');
    // One read per order would be 40; coalesced, a burst costs a few reads per drain whatever its size.
    t.ok(total <= 12, `${total} GET requests for ${N} orders`);
    t.equal(loop.logs.text().match(/unhandled/g)?.length ?? 0, 0);
  });

  t.test(`${profile}: deliveries of stock adjustments and transfers read the variants they move`, async (t) => {
    const loop = await startLoop(t, { profile, firstSweep: true, sandbox: { variants: 12 } });
    await firstSweep(loop);
    const variants = ((await loop.admin('GET', 'snapshot?resource=variants')).variants as any[]).filter(
      (v) => v.sku && !v.composite && v.manage_stock !== false && v.status !== 'archived' && v.locations?.length,
    );
    const [a, b] = variants;
    const from = Number(a.locations[0].location_id);
    const locations = ((await loop.admin('GET', 'snapshot?resource=locations')).locations as any[]).map((l) => Number(l.id));
    const to = locations.find((l) => l !== from)!;
    // The service's own deliveries are lost: only ours, of the documented events, can tell the worker.
    await loop.admin('POST', 'faults', { deliveries: { drop: 1 } });
    const adj = await loop.client.createStockAdjustment({
      stock_location_id: from,
      reason: 'damaged',
      stock_adjustment_line_items: [{ variant_id: Number(a.id), quantity: '-1' }],
    });
    const transfer = (
      await loop.client.request('POST', '/stock_transfers', {
        body: {
          stock_transfer: {
            source_location_id: from,
            destination_location_id: to,
            stock_transfer_line_items: [{ variant_id: Number(b.id), quantity: '1' }],
          },
        },
      })
    ).body.stock_transfer;
    await loop.admin('POST', 'deliveries/flush');
    await loop.admin('POST', 'faults', {});
    const stale = await loop.variantDiff();
    t.ok(stale.wrong.includes(Number(a.id)), 'the mirror does not know of the adjustment yet');

    for (const [event, id] of [
      ['stock_adjustments.create', adj.id],
      ['stock_transfers.create', transfer.id],
    ] as const) {
      t.equal((await loop.deliver(event, Number(id))).status, 200, `${event} acknowledged`);
    }
    // The documents' own drains and their variants' drains are separate jobs: wait for both.
    const keptRecords = () =>
      sql<{ resource: string }>`SELECT resource FROM other_records WHERE connection_id = ${loop.connection.id}
        AND resource IN ('stock_adjustment', 'stock_transfer') ORDER BY resource`.execute(loop.tdb.db);
    await loop.until('the moved variants mirrored', async () => {
      const d = await loop.variantDiff();
      return !d.wrong.includes(Number(a.id)) && !d.wrong.includes(Number(b.id)) && (await keptRecords()).rows.length === 2;
    });
    const states = await sql<{ event: string; state: string }>`SELECT event, state FROM webhook_deliveries
      WHERE connection_id = ${loop.connection.id} AND delivery_id LIKE 'test-%'`.execute(loop.tdb.db);
    t.same(
      states.rows.map((r) => r.state),
      ['processed', 'processed'],
      'both handled, none unhandled',
    );
    const kept = await keptRecords();
    t.same(
      kept.rows.map((r) => r.resource),
      ['stock_adjustment', 'stock_transfer'],
      'the records themselves are kept whole',
    );
  });

  t.test(`${profile}: order lines come from their own collection when a list carries no sideload`, async (t) => {
    const loop = await startLoop(t, { profile, sandbox: { variants: 10 } });
    await loop.admin('POST', 'activity', { operations: 6, kinds: ['place_order'] });
    const orders = (await loop.admin('GET', 'snapshot?resource=orders')).orders as any[];
    const sideloads: Record<string, any[]> = {};
    const requests = await readLines(loop.client, catalog.order!, orders, sideloads, { priority: 'webhook' });
    t.equal(requests, 1, 'one request for the lines of every order');
    const want = orders
      .flatMap((o) => o.order_line_item_ids ?? [])
      .map(Number)
      .sort((x, y) => x - y);
    t.same(
      sideloads.order_line_items!.map((l) => Number(l.id)).sort((x, y) => x - y),
      want,
      'every line of every order',
    );
    t.equal(
      await readLines(loop.client, catalog.order!, orders, sideloads, { priority: 'webhook' }),
      0,
      'a sideload present is used as it is',
    );
  });

  t.test(`${profile}: a disabled product stays in the mirror through a full sweep`, async (t) => {
    const loop = await startLoop(t, { profile, sandbox: { variants: 6 } });
    const products = (await loop.admin('GET', 'snapshot?resource=products')).products as any[];
    const p = products.find((x) => x.status === 'active')!;
    await loop.client.request('PUT', `/products/${p.id}`, { body: { product: { status: 'disabled' } } });
    t.equal(
      ((await loop.admin('GET', 'snapshot?resource=products')).products as any[]).find((x) => x.id === p.id)?.status,
      'disabled',
      'the service has the product disabled',
    );
    const { requestSweep } = await import('../../src/queue/contracts.ts');
    await requestSweep(loop.bosses[0]!, loop.connection.id, true);
    await loop.until(
      'the sweep',
      async () => !!(await loop.tdb.db.selectFrom('sync_log').select('id').where('action', 'like', 'sweep.%').executeTakeFirst()),
      60_000,
    );
    const row = await loop.tdb.db
      .selectFrom('products')
      .select(['status'])
      .where('connection_id', '=', loop.connection.id)
      .where('id', '=', Number(p.id))
      .executeTakeFirst();
    t.equal(row?.status, 'disabled', 'mirrored as disabled, not marked gone');
  });
}
