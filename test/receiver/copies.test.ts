// A service that sends a delivery twice at once (real-service-notes: at-least-once), many of them: copies of the
// same deliveries land in two commits, in opposite orders, and two inserts of the same keys in opposite orders
// deadlock in PostgreSQL. The commit PostgreSQL ends runs again: every copy is answered 200, every delivery stored once.
// The same event resent under a new delivery id is a copy too while the first still waits; once that one is handled,
// the same body may be a second change in the same second, and is stored and read again.
import t from 'tap';
import { replayDelivery } from '../../src/receiver/replay.ts';
import { startLoop } from '../sync/harness.ts';
import { deliver, payload, startReceiver } from './harness.ts';

t.test('copies of the same deliveries in opposite orders, at once: all answered 200, each stored once', async (t) => {
  const h = await startReceiver(t);
  const statuses: number[] = [];
  for (let round = 0; round < 15; round++) {
    // A copy is the same delivery: the same id and the same body (the service's retries resend both).
    const deliveries = Array.from({ length: 30 }, (_, i) => ({ id: `r${round}-d${i}`, body: payload(round * 100 + i + 1) }));
    const send = (list: typeof deliveries) =>
      Promise.all(list.map((d) => deliver(h.url(), d.body, { 'x-service-delivery': d.id }).then((r) => r.status)));
    statuses.push(...(await Promise.all([send(deliveries), send([...deliveries].reverse())])).flat());
  }
  t.same(
    statuses.filter((s) => s !== 200),
    [],
    `${statuses.length} POSTs, every one answered 200`,
  );
  const rows = await h.rows();
  t.equal(rows.length, 15 * 30, 'each delivery stored once');
  t.same(await h.jobbed(), await h.queued(), 'each in exactly one job');
});

t.test('the same body under a new delivery id is a copy while the first waits, and stored again once that one is handled', async (t) => {
  const h = await startReceiver(t);
  const body = payload(7);
  const first = await deliver(h.url(), body, { 'x-service-delivery': 'first-id' });
  t.equal(first.status, 200);
  const again = await deliver(h.url(), body, { 'x-service-delivery': 'resent-under-a-new-id' });
  t.equal(again.status, 200, 'acknowledged: the service must not retry it');
  t.match(await again.json(), { duplicate: true });
  t.equal((await h.rows()).length, 1, 'stored once');
  t.same(await h.jobbed(), await h.queued(), 'in one job');
  const other = await deliver(h.url(), payload(8), { 'x-service-delivery': 'another-event' });
  t.equal(other.status, 200);
  t.equal((await h.rows()).length, 2, 'another event is stored');

  // Once the first is handled, the same body is stored again: it may be a second change in the same second.
  await h.tdb.pool.query(`UPDATE webhook_deliveries SET state = 'processed' WHERE delivery_id = 'first-id'`);
  const later = await deliver(h.url(), body, { 'x-service-delivery': 'same-body-later' });
  t.same(await later.json(), { ok: true }, 'stored, not a duplicate');
  const rows = await h.rows();
  t.same(
    rows.map((r) => [r.delivery_id, r.state]),
    [
      ['first-id', 'processed'],
      ['another-event', 'queued'],
      ['same-body-later', 'queued'],
    ],
  );
  // A replay of the handled one while its body waits again leaves it as it is: the waiting one is read later.
  const [handled] = (await h.tdb.pool.query(`SELECT id FROM webhook_deliveries WHERE delivery_id = 'first-id'`)).rows;
  t.ok(await replayDelivery(h.tdb.db, h.boss, Number(handled.id)), 'the replay is answered');
  t.equal((await h.rows())[0].state, 'processed', 'the replayed row stays handled: its twin waits');
});

t.test('a second change of a record in the same second, after the first was read, reaches the mirror', async (t) => {
  // The sandbox's clock stands still: both changes are stamped the same second, so their deliveries, under two
  // delivery ids, have byte-identical bodies.
  const loop = await startLoop(t, { sandbox: { variants: 5, manualClock: true } });
  const variant = ((await loop.admin('GET', 'snapshot?resource=variants')).variants as any[]).find(
    (v) => v.sku && !v.composite && v.manage_stock !== false && v.status !== 'archived' && v.locations?.length,
  );
  const id = Number(variant.id);
  // Only the variant's own event tells the worker: the adjustment's event (which reads the variants it moves) is
  // unsubscribed.
  for (const w of await loop.client.listWebhooks()) if (!w.event.endsWith('.stock_level_update')) await loop.client.deleteWebhook(w.id);
  const adjust = (quantity: string) =>
    loop.client.createStockAdjustment({
      stock_location_id: Number(variant.locations[0].location_id),
      reason: 'damaged',
      stock_adjustment_line_items: [{ variant_id: id, quantity }],
    });
  const mirrored = async () => {
    const d = await loop.variantDiff();
    return !d.missing.includes(id) && !d.wrong.includes(id);
  };
  const deliveries = () => loop.tdb.db.selectFrom('webhook_deliveries').select(['body', 'state']).where('object_id', '=', id).execute();

  await adjust('-1');
  await loop.until(
    'the first change read into the mirror',
    async () => (await mirrored()) && (await deliveries()).every((d) => d.state === 'processed'),
  );
  await adjust('-2');
  await loop.admin('POST', 'deliveries/flush');
  const acked = ((await loop.admin('GET', 'deliveries?limit=50')) as any[]).filter((d) => d.object_id === id && d.status === 200);
  t.equal(new Set(acked.map((d) => d.id)).size, 2, 'the service sent two deliveries, under two ids, both acknowledged');
  await loop.until('the second change in the mirror too', mirrored, 20_000);
  const rows = await deliveries();
  t.equal(rows.length, 2, 'the second delivery, the same body as the first, has a row of its own');
  t.equal(rows[0]!.body, rows[1]!.body, 'byte for byte');
});
