// The console's orders: the list in an order a reader can follow (newest first, the page and its API alike).
import t from 'tap';
import type { Db } from '../../src/db/index.ts';
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
