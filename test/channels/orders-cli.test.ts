// commerce-sync channels orders show|cancel: a channel order's timeline (imported, packed, shipped with its tracking,
// each with the POST that told the channel), --json as the API answers it, a cancel refused once shipped (exit 1),
// a void asked twice queued once, a hold cancelled, exit 1 for an order the channel does not have and 2 for bad
// input. The mirror is written directly and the events recorded as a drain records them (recordOrderEvents).
import t from 'tap';
import { sql } from 'kysely';
import { recordOrderEvents } from '../../src/channels/order-events.ts';
import { recordPost, saveDestination } from '../../src/db/channel-destinations.ts';
import type { Db } from '../../src/db/index.ts';
import { addChannel } from '../../src/channels/channels.ts';
import { addConnection, testDatabase } from '../support/db.ts';
import { channelsCommand, mirror, variant } from './harness.ts';

const cli = channelsCommand;

/** An order imported from a channel as the mirror has it, its fulfilments with their lines; its events recorded. */
async function channelOrder(
  db: Db,
  connectionId: number,
  o: {
    id: number;
    channel: string;
    channelOrderId: string;
    status: string;
    fulfillments?: { id: number; status: string; sku: string; quantity: string; tracking?: [string, string, string] }[];
  },
): Promise<number[]> {
  const at = new Date('2026-11-26T10:00:00Z');
  await db
    .insertInto('orders')
    .values({
      connection_id: connectionId,
      id: o.id,
      order_number: `SO-${o.id}`,
      status: o.status,
      created_at: at,
      updated_at: at,
      raw: JSON.stringify({ id: o.id, status: o.status, payment_status: 'unpaid', invoice_status: 'uninvoiced' }),
      company_id: null,
      contact_id: null,
      stock_location_id: 1,
      currency_iso: 'SGD',
      issued_at: '2026-11-26',
      total: '10',
    })
    .execute();
  for (const f of o.fulfillments ?? []) {
    const shippedAt = new Date(at.getTime() + 60_000 * f.id);
    await db
      .insertInto('fulfillments')
      .values({
        connection_id: connectionId,
        id: f.id,
        order_id: o.id,
        status: f.status,
        created_at: shippedAt,
        updated_at: shippedAt,
        packed_at: shippedAt,
        stock_location_id: 1,
        tracking_company: f.tracking?.[0] ?? null,
        tracking_number: f.tracking?.[1] ?? null,
        tracking_url: f.tracking?.[2] ?? null,
        raw: JSON.stringify({ id: f.id, shipped_at: f.status === 'fulfilled' ? shippedAt.toISOString() : null }),
      })
      .execute();
    await db
      .insertInto('fulfillment_line_items')
      .values({
        connection_id: connectionId,
        id: f.id * 10,
        fulfillment_id: f.id,
        order_line_item_id: null,
        variant_id: null,
        variant_sku: f.sku,
        quantity: f.quantity,
        created_at: shippedAt,
        updated_at: shippedAt,
        raw: '{}',
      })
      .execute();
  }
  await db
    .insertInto('channel_orders')
    .values({ connection_id: connectionId, channel: o.channel, channel_order_id: o.channelOrderId, order_id: o.id })
    .execute();
  return (await db.transaction().execute((tx) => recordOrderEvents(tx, connectionId, [o.id]))).channels;
}

t.test('channels orders show|cancel: the timeline with each POST, --json, refusals and exit codes', async (t) => {
  const { db, url } = await testDatabase(t);
  const c = await addConnection(db);
  await mirror(db, c.id, [variant(1, { 1: ['10'] }), variant(2, { 1: ['5'] })]);
  const { channel } = await addChannel(db, c.id, { name: 'webshop' });
  const channelId = Number(channel.id);
  await saveDestination(db, channelId, { url: 'http://127.0.0.1:9/orders', secrets: 'x', startAfter: 0, kinds: ['orders'] });
  const run = cli(url);

  // W-1: imported, then packed in two parts, the first shipped with tracking.
  t.same(
    await channelOrder(db, c.id, {
      id: 501,
      channel: 'webshop',
      channelOrderId: 'W-1',
      status: 'active',
      fulfillments: [
        { id: 7, status: 'fulfilled', sku: 'SKU-1', quantity: '2.0', tracking: ['DHL', 'T-111', 'https://track.example/T-111'] },
        { id: 8, status: 'packed', sku: 'SKU-2', quantity: '1' },
      ],
    }),
    [channelId],
  );
  const events = await db.selectFrom('channel_order_events').select(['id', 'type']).orderBy('id').execute();
  t.same(
    events.map((e) => e.type),
    ['order.imported', 'order.packed', 'order.shipped', 'order.packed'],
  );
  // The destination took the first three in one POST; the last waits.
  await recordPost(db, {
    channel_id: channelId,
    kind: 'orders',
    webhook_id: 'msg_orders_1_3',
    first_change: Number(events[0]!.id),
    last_change: Number(events[2]!.id),
    changes: 3,
    ok: true,
    status: 200,
    error: null,
    attempts: 1,
    ms: 12,
  });
  await sql`UPDATE channel_destinations SET order_cursor = ${Number(events[2]!.id)}`.execute(db);

  const shown = await run('orders', 'show', 'webshop', 'W-1');
  t.equal(shown.code, 0, shown.err);
  t.match(shown.out, /webshop W-1: order SO-501 \(id 501\), active, invoice uninvoiced, payment unpaid/);
  t.match(shown.out, /hold: none/);
  t.match(shown.out, /Imported as order SO-501\s+status active\s+POST msg_orders_1_3 at \S+ \S+ UTC, HTTP 200/);
  t.match(shown.out, /Shipped \(fulfilment 7\)\s+SKU-1 × 2; DHL T-111 https:\/\/track\.example\/T-111\s+POST msg_orders_1_3/);
  t.match(shown.out, /Packed \(fulfilment 8\)\s+SKU-2 × 1\s+not sent yet/);
  t.match(shown.out, /FULFILMENT\s+STATUS[\s\S]*7\s+fulfilled[\s\S]*DHL T-111/);

  const json = JSON.parse((await run('orders', 'show', 'webshop', 'W-1', '--json')).out);
  t.match(json, {
    order: {
      channel: 'webshop',
      channel_order_id: 'W-1',
      order_id: 501,
      order: { order_number: 'SO-501', status: 'active' },
      fulfillments: [{ id: 7, tracking_number: 'T-111', lines: [{ sku: 'SKU-1', quantity: '2' }] }, { id: 8 }],
      events: [
        { type: 'order.imported', sent: true, post: { webhook_id: 'msg_orders_1_3', status: 200 } },
        { type: 'order.packed', sent: true },
        { type: 'order.shipped', sent: true, data: { tracking_number: 'T-111' } },
        { type: 'order.packed', sent: false, post: null },
      ],
    },
  });

  t.match(await run('orders', 'cancel', 'webshop', 'W-1'), { code: 1, err: /has shipped; it can no longer be voided/ });

  // W-2: imported, nothing shipped: a void queued once, however often asked.
  await channelOrder(db, c.id, { id: 502, channel: 'webshop', channelOrderId: 'W-2', status: 'active' });
  const first = await run('orders', 'cancel', 'webshop', 'W-2');
  t.equal(first.code, 0, first.err);
  const id = /operation (\d+) \(queued\)/.exec(first.out)?.[1];
  t.ok(id, first.out);
  t.match(first.out, /void of webshop order W-2 queued/);
  t.match(await run('orders', 'cancel', 'webshop', 'W-2', '--json'), { code: 0, out: /"created": false/ });
  t.match(await run('orders', 'cancel', 'webshop', 'W-2'), { code: 0, out: new RegExp(`a void was asked already: operation ${id} `) });
  t.equal((await db.selectFrom('push_operations').select('id').where('kind', '=', 'void').execute()).length, 1, 'one void');
  t.match((await run('orders', 'show', 'webshop', 'W-2')).out, new RegExp(`OPERATION\\s+KIND\\s+STATE[\\s\\S]*${id}\\s+void\\s+queued`));

  // W-3: held, never imported: cancelling ends the hold, once.
  t.equal((await run('holds', 'add', 'webshop', 'W-3', '--line', 'SKU-1=1')).code, 0);
  const held = await run('orders', 'show', 'webshop', 'W-3');
  t.match(held.out, /webshop W-3: not imported/);
  t.match(held.out, /Held \(cli\)\s+SKU-1 × 1; until \S+ \S+ UTC\s+the channel's own/);
  t.match(await run('orders', 'cancel', 'webshop', 'W-3'), { code: 0, out: /its hold is cancelled; 2 quantities changed/ });
  t.match(await run('orders', 'cancel', 'webshop', 'W-3'), { code: 0, out: /its hold ended already \(cancelled\)/ });
  t.match((await run('orders', 'show', 'webshop', 'W-3')).out, /Hold cancelled/);

  t.match(await run('orders', 'show', 'webshop', 'W-9'), { code: 1, err: /channel shop\/webshop has no order W-9/ });
  t.match(await run('orders', 'cancel', 'webshop', 'W-9'), { code: 1, err: /has no order W-9/ });
  t.match(await run('orders', 'show', 'webshop'), { code: 2, err: /channels orders takes show NAME CHANNEL_ORDER_ID/ });
  t.match(await run('orders', 'refund', 'webshop', 'W-1'), { code: 2, err: /channels orders takes/ });
  t.match(await run('orders', 'show', 'nope', 'W-1'), { code: 2, err: /no channel "nope"/ });
});
