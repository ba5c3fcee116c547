// The console's orders: the list in an order a reader can follow (newest first, the page and its API alike), an
// order's history showing the read its delivery queued, and the service's days shown as days.
import t from 'tap';
import { sql } from 'kysely';
import { logSync } from '../../src/db/synclog.ts';
import { markPending } from '../../src/db/pending.ts';
import { rulesFrom } from '../../src/stock/rules.ts';
import { drainPending } from '../../src/sync/drain.ts';
import { orderRecord } from '../../src/console/orders.ts';
import { recordHistory } from '../../src/console/synclog.ts';
import { describe } from '../../src/console/pages/history.ts';
import { orderPage } from '../../src/console/pages/orders.ts';
import type { Db } from '../../src/db/index.ts';
import { harness } from '../push/harness.ts';
import { addConnection, consoleServer } from './harness.ts';

const HOUR = 3600_000;

async function addOrder(db: Db, connectionId: number, o: { id: number; createdAt: Date; updatedAt: Date; raw?: object }): Promise<void> {
  await db
    .insertInto('orders')
    .values({
      connection_id: connectionId,
      id: o.id,
      order_number: `SO-${o.id}`,
      status: 'active',
      created_at: o.createdAt,
      updated_at: o.updatedAt,
      raw: JSON.stringify({ id: o.id, status: 'active', ...o.raw }),
      company_id: null,
      contact_id: null,
      stock_location_id: 1,
      currency_iso: 'SGD',
      issued_at: '2026-11-21',
      total: '10',
    })
    .execute();
}

t.test('the orders list is newest first by when the service made each order, the page as its API', async (t) => {
  const { base, db } = await consoleServer(t, { demo: true });
  const shop = await addConnection(db, 'shop');
  const now = Date.now();
  const at = (hoursAgo: number) => new Date(now - hoursAgo * HOUR);
  // Made 3 hours ago but changed just now; imported through a channel just now; two made at the same moment.
  await addOrder(db, shop, { id: 10, createdAt: at(3), updatedAt: at(0) });
  await addOrder(db, shop, { id: 11, createdAt: at(1), updatedAt: at(1) });
  await addOrder(db, shop, { id: 12, createdAt: at(2), updatedAt: at(2) });
  await addOrder(db, shop, { id: 13, createdAt: at(0.5), updatedAt: at(0.5) });
  await addOrder(db, shop, { id: 14, createdAt: at(0.5), updatedAt: at(0.5) });
  await db
    .insertInto('channel_orders')
    .values({ connection_id: shop, channel: 'webshop', channel_order_id: 'W-12', order_id: 12 })
    .execute();
  const newestFirst = [14, 13, 11, 12, 10];

  const api = (await (await fetch(`${base}/api/orders?connection=shop`)).json()) as { orders: { id: number; createdAt: string }[] };
  t.same(
    api.orders.map((o) => o.id),
    newestFirst,
    'by creation, newest first; ties by id; neither a change nor an import moves an order',
  );
  t.equal(api.orders[0]!.createdAt, at(0.5).toISOString(), 'the API gives the time it orders by');
  const page = await (await fetch(`${base}/orders?connection=shop`)).text();
  t.same(
    [...page.matchAll(/<tr data-id="(\d+)">/g)].map((m) => Number(m[1])),
    newestFirst,
    'the page lists them in the same order',
  );
  t.match(page, /<th scope="col">Created \(UTC\)<\/th>/, 'and shows the time it orders by');
  // Paging keeps each order on one page.
  const second = (await (await fetch(`${base}/api/orders?connection=shop&limit=2&page=2`)).json()) as { orders: { id: number }[] };
  t.same(
    second.orders.map((o) => o.id),
    [11, 12],
  );
});

t.test("a day the service gives alone (packed_at) is shown as that day, whatever the database's time zone", async (t) => {
  const { base, db } = await consoleServer(t, { demo: true });
  const shop = await addConnection(db, 'shop');
  await addOrder(db, shop, { id: 20, createdAt: new Date(), updatedAt: new Date() });
  // The service's packed_at "2026-11-21" as a database in Auckland keeps it: its midnight there, 11:00 UTC the day before.
  await db
    .insertInto('fulfillments')
    .values({
      connection_id: shop,
      id: 201,
      order_id: 20,
      status: 'packed',
      created_at: new Date(),
      updated_at: new Date(),
      packed_at: new Date('2026-11-20T11:00:00Z'),
      stock_location_id: 1,
      raw: JSON.stringify({ id: 201, packed_at: '2026-11-21', shipped_at: null }),
    })
    .execute();
  const channel = (
    await sql<{ id: number }>`INSERT INTO channels (connection_id, name) VALUES (${shop}, 'webshop') RETURNING id`.execute(db)
  ).rows[0]!.id;
  await db
    .insertInto('channel_orders')
    .values({ connection_id: shop, channel: 'webshop', channel_order_id: 'W-20', order_id: 20 })
    .execute();

  const record = (await (await fetch(`${base}/api/orders/shop/20`)).json()) as { fulfillments: { packedAt: string }[] };
  t.equal(record.fulfillments[0]!.packedAt, '2026-11-21', 'the API gives the day');
  const cells = (html: string, table: string) =>
    [...(new RegExp(`<table id="${table}">[\\s\\S]*?</table>`).exec(html)?.[0] ?? '').matchAll(/<td class="mono at">([^<]*)<\/td>/g)].map(
      (m) => m[1],
    );
  const orderHtml = await (await fetch(`${base}/orders/shop/20`)).text();
  t.same(cells(orderHtml, 'fulfillments'), ['2026-11-21'], "the order's page shows the day");
  t.match(orderHtml, /<dt>Issued<\/dt><dd>2026-11-21<\/dd>/);
  const channelHtml = await (await fetch(`${base}/channels/${channel}/orders/W-20`)).text();
  t.equal(cells(channelHtml, 'shipments')[0], '2026-11-21', "the channel order's page too");
});

t.test("an order's history shows the read its delivery queued, once the drain has read it", async (t) => {
  const h = await harness(t);
  const db = h.tdb.db;
  const connectionId = Number(h.connection.id);
  const [first, second] = (await h.snapshot('orders')).map((o) => Number(o.id));
  const drain = async () =>
    drainPending(
      { db, log: h.rt.log, client: await h.rt.sync.drainClient(connectionId), rules: rulesFrom(h.config), clockMarginMs: 0 },
      'order',
    );
  // As the receiver does for a delivery: its entry, and the record marked to read.
  const delivered = async (id: number) => {
    await logSync(db, { connectionId, resource: 'order', recordId: id, action: 'delivery.received', detail: { event: 'orders.update' } });
    await markPending(db, [{ connectionId, resource: 'order', id, reason: 'order.update' }]);
  };
  await delivered(first!);
  const history = (id: number) => recordHistory(db, { connectionId, resource: 'order', recordId: id, limit: 100 });
  t.same(
    (await history(first!)).map((e) => e.action),
    ['delivery.received'],
    'queued, not read yet',
  );
  await drain();
  await delivered(second!);
  await drain(); // another read, of another order: not in the first one's history

  const record = (await orderRecord(db, connectionId, first!))!;
  t.same(
    record.log.map((e) => e.action),
    ['fetch', 'delivery.received'],
    'the read, after the delivery that queued it',
  );
  t.match(describe(record.log[0]!), /^Read back from the service: 1 order in \d+ requests?, 1 changed in the mirror\.$/);
  t.match(orderPage({ access: 'open-demo' }, record).value, /Read back from the service: 1 order/);
  t.same(
    (await history(second!)).map((e) => e.action),
    ['fetch', 'delivery.received'],
  );
});
