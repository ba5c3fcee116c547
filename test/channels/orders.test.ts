// Orders back to the channel (src/channels/order-events.ts, dispatch.ts, orders.ts), against the sandbox: an order
// the channel imported is packed and shipped in two parts with tracking and a line returned at the service; the
// drains read what changed and the channel's endpoint (every POST verified with the `standardwebhooks` package)
// hears imported, packed, shipped, packed, shipped, returned, each once and in that order, even though it was down
// for a while and every read was replayed. A void no webhook announces is read back by the order watch; a cancel
// asked twice voids once.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { channelDeliveryHandler } from '../../src/channels/dispatch.ts';
import { setDestination } from '../../src/channels/destinations.ts';
import { orderEventsFeed } from '../../src/channels/order-feed.ts';
import { cancelChannelOrder, channelOrderView } from '../../src/channels/orders.ts';
import { announceChanges } from '../../src/channels/dispatch.ts';
import { dueEvents, notBefore } from '../../src/channels/order-events.ts';
import { CHANNEL_ORDER } from '../../src/catalog/index.ts';
import { markPending } from '../../src/db/pending.ts';
import { addChannel } from '../../src/channels/channels.ts';
import { rulesFrom } from '../../src/stock/rules.ts';
import { drainPending } from '../../src/sync/drain.ts';
import { handleMaintenance } from '../../src/sync/maintenance.ts';
import { workQueues } from '../../src/worker/handlers.ts';
import { until } from '../support/processes.ts';
import { listenLocal } from '../support/http.ts';
import { merchantApi } from '../support/sandbox.ts';
import type { Teardown } from '../support/teardown.ts';
import { harness, orderInput, plainVariants } from '../push/harness.ts';

interface Told {
  webhookId: string;
  type: string;
  key: string;
  channel_order_id: string;
  at: string;
  data: any;
}

/** The channel's endpoint: verifies each POST; answers 503 while `down`. */
async function endpoint(t: Teardown, secret: string) {
  const state = { down: false, told: [] as Told[], ids: [] as string[], refused: 0, bad: [] as string[] };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      if (state.down) {
        state.refused++;
        res.statusCode = 503;
        return res.end();
      }
      try {
        const payload = new Webhook(secret).verify(body, req.headers as Record<string, string>) as any;
        const id = String(req.headers['webhook-id']);
        // A receiver deduplicates by webhook-id: a retry of a range it took is not taken twice.
        if (payload.type === 'channel.orders.changed' && !state.ids.includes(id)) {
          state.ids.push(id);
          for (const e of payload.data.events)
            state.told.push({
              webhookId: id,
              type: e.type,
              key: `${e.type}:${e.data?.fulfillment_id ?? e.data?.return_id ?? ''}`,
              channel_order_id: e.channel_order_id,
              at: e.at,
              data: e.data,
            });
        }
        res.end('ok');
      } catch (err) {
        state.bad.push((err as Error).message);
        res.statusCode = 400;
        res.end();
      }
    });
  });
  return { state, url: await listenLocal(t, server) };
}

async function world(t: Teardown) {
  const h = await harness(t, { config: { SERVICE_CLOCK_MARGIN_SECONDS: 0 } });
  const db = h.tdb.db;
  const connectionId = Number(h.connection.id);
  const { channel } = await addChannel(db, connectionId, { name: 'webshop' });
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const ep = await endpoint(t, secret);
  await setDestination(db, h.rt.clients.key(h.config), Number(channel.id), { url: ep.url, secret, kinds: 'orders' }, ['127.0.0.1']);
  h.runtime.onStop.push(await workQueues(h.rt, [channelDeliveryHandler], { pollingIntervalSeconds: 0.5 }));
  const client = await h.rt.sync.drainClient(connectionId);
  /** What the drains do with deliveries about these records: read them, write the mirror, wake the sender. */
  const drain = async (marks: { resource: string; id: number }[]) => {
    await markPending(
      db,
      marks.map((m) => ({ connectionId, resource: m.resource, id: m.id, reason: `${m.resource}.create` })),
    );
    for (const resource of [...new Set(marks.map((m) => m.resource))]) {
      const out = await drainPending({ db, log: h.rt.log, client, rules: rulesFrom(h.config), clockMarginMs: 0 }, resource);
      await announceChanges(
        h.rt,
        out.orderEvents.map((id) => ({ channel_id: id })),
      );
    }
  };
  /** The drains of these resources, reading whatever is due (marked by an earlier read's follow-ups). */
  const drainDue = async (resources: string[]) => {
    for (const resource of resources) {
      const out = await drainPending({ db, log: h.rt.log, client, rules: rulesFrom(h.config), clockMarginMs: 0 }, resource);
      await announceChanges(
        h.rt,
        out.orderEvents.map((id) => ({ channel_id: id })),
      );
    }
  };
  const variants = plainVariants(await h.snapshot('variants'));
  const companies = await h.snapshot('companies');
  const [company] = companies.filter((c: any) => c.status !== 'archived');
  return { h, db, connectionId, channel, ep, drain, drainDue, variants, company, api: merchantApi(h.sb) };
}

t.test('imported, packed and shipped in two parts with tracking, a line returned: each event once, in order', async (t) => {
  const w = await world(t);
  const [a, b] = w.variants;
  const op = await w.h.run(
    'import-order',
    orderInput(w.company.id, 'webshop', 'W-1', [
      { sku: a.sku, quantity: '2' },
      { sku: b.sku, quantity: '1' },
    ]),
  );
  t.equal(op.state, 'confirmed', op.reason ?? '');
  const orderId = (op.result as any).order_id as number;
  const order = (await w.h.snapshot('orders')).find((o: any) => o.id === orderId);
  const [lineA, lineB] = order.order_line_item_ids as number[];
  await w.drain([{ resource: 'order', id: orderId }]);

  // The endpoint is down while the warehouse packs and ships in two parts.
  w.ep.state.down = true;
  const f1 = (
    await w.api('POST', '/fulfillments', {
      fulfillment: { order_id: orderId, fulfillment_line_items: [{ order_line_item_id: lineA, quantity: '2' }] },
    })
  ).fulfillment;
  await w.drain([{ resource: 'fulfillment', id: f1.id }]);
  await w.api('PUT', `/fulfillments/${f1.id}`, {
    fulfillment: { status: 'fulfilled', tracking_company: 'DHL', tracking_number: 'T-111', tracking_url: 'https://track.example/T-111' },
  });
  const f2 = (
    await w.api('POST', '/fulfillments', {
      fulfillment: { order_id: orderId, fulfillment_line_items: [{ order_line_item_id: lineB, quantity: '1' }] },
    })
  ).fulfillment;
  await w.drain([
    { resource: 'fulfillment', id: f1.id },
    { resource: 'fulfillment', id: f2.id },
  ]);
  await w.api('PUT', `/fulfillments/${f2.id}`, { fulfillment: { status: 'fulfilled', tracking_company: 'UPS', tracking_number: 'T-222' } });
  await w.drain([{ resource: 'fulfillment', id: f2.id }]);
  await until('the sender tried the endpoint while down', () => w.ep.state.refused > 0);
  w.ep.state.down = false;
  // The sender waits out its backoff; resuming asks at once, losing nothing.
  await sql`UPDATE channel_destinations SET next_attempt_at = NULL`.execute(w.db);
  await announceChanges(w.h.rt, [{ channel_id: Number(w.channel.id) }]);

  const ret = (
    await w.api('POST', '/fulfillment_returns', {
      fulfillment_return: { order_id: orderId, fulfillment_return_line_items: [{ order_line_item_id: lineB, quantity: '1' }] },
    })
  ).fulfillment_return;
  await w.drain([{ resource: 'fulfillment_return', id: ret.id }]);
  // Every read replayed: nothing is told twice.
  await w.drain([
    { resource: 'order', id: orderId },
    { resource: 'fulfillment', id: f1.id },
    { resource: 'fulfillment', id: f2.id },
    { resource: 'fulfillment_return', id: ret.id },
  ]);
  await until('the return reached the channel', () => w.ep.state.told.some((e) => e.type === 'order.returned'), 30_000);
  t.same(w.ep.state.bad, [], 'every POST verified');
  const told = w.ep.state.told.filter((e) => e.channel_order_id === 'W-1');
  t.same(
    told.map((e) => e.type),
    ['order.imported', 'order.packed', 'order.shipped', 'order.packed', 'order.shipped', 'order.returned'],
    'in the order they happened, each once',
  );
  const shipped = told.filter((e) => e.type === 'order.shipped').map((e) => [e.data.tracking_company, e.data.tracking_number]);
  t.same(shipped, [
    ['DHL', 'T-111'],
    ['UPS', 'T-222'],
  ]);
  t.same(told.find((e) => e.type === 'order.returned')!.data.lines, [{ sku: b.sku, quantity: '1' }]);

  // The pull feed carries the same events; the order view says each was sent.
  const page = await orderEventsFeed(w.db, { channelId: Number(w.channel.id), since: 0, limit: 100 });
  t.notOk('expired' in page);
  if (!('expired' in page))
    t.same(
      page.events.map((e) => e.type),
      told.map((e) => e.type),
    );
  const orderView = () =>
    channelOrderView(w.db, { connectionId: w.connectionId, channelId: Number(w.channel.id), channel: 'webshop', channelOrderId: 'W-1' });
  // The endpoint has the return before the sender has recorded its answer: wait for that record.
  await until('the destination acknowledged every event', async () => (await orderView())?.events.every((e) => e.sent) ?? false, 30_000);
  t.equal((await orderView())?.fulfillments.length, 2);

  // Tracking changed on a shipped fulfilment later (no webhook): the order watch reads it back.
  await w.api('PUT', `/fulfillments/${f1.id}`, { fulfillment: { tracking_number: 'T-111B' } });
  await sql`UPDATE channel_orders SET watch_at = now() - interval '1 second'`.execute(w.db);
  await handleMaintenance(w.h.rt, 'order-watch');
  await w.drain([]);
  for (const resource of ['channel_order', 'fulfillment', 'fulfillment_return']) {
    const out = await drainPending(
      { db: w.db, log: w.h.rt.log, client: await w.h.rt.sync.drainClient(w.connectionId), rules: rulesFrom(w.h.config), clockMarginMs: 0 },
      resource,
    );
    await announceChanges(
      w.h.rt,
      out.orderEvents.map((id) => ({ channel_id: id })),
    );
  }
  await until('the new tracking reached the channel', () => w.ep.state.told.some((e) => e.type === 'order.tracking_updated'), 30_000);
  t.equal(w.ep.state.told.find((e) => e.type === 'order.tracking_updated')!.data.tracking_number, 'T-111B');
});

t.test('a void no webhook announces reaches the channel; a cancel asked twice voids once', async (t) => {
  const w = await world(t);
  const [a] = w.variants;
  const first = await w.h.run('import-order', orderInput(w.company.id, 'webshop', 'W-2', [{ sku: a.sku, quantity: '1' }]));
  const orderId = (first.result as any).order_id as number;
  await w.drain([{ resource: 'order', id: orderId }]);
  await w.api('POST', `/orders/${orderId}/actions/void`);
  await sql`UPDATE channel_orders SET watch_at = now() - interval '1 second'`.execute(w.db);
  await handleMaintenance(w.h.rt, 'order-watch');
  const out = await drainPending(
    { db: w.db, log: w.h.rt.log, client: await w.h.rt.sync.drainClient(w.connectionId), rules: rulesFrom(w.h.config), clockMarginMs: 0 },
    'channel_order',
  );
  await announceChanges(
    w.h.rt,
    out.orderEvents.map((id) => ({ channel_id: id })),
  );
  await until(
    'the void reached the channel',
    () => w.ep.state.told.some((e) => e.type === 'order.voided' && e.channel_order_id === 'W-2'),
    30_000,
  );
  const hold = await w.db.selectFrom('channel_holds').selectAll().where('channel_order_id', '=', 'W-2').executeTakeFirst();
  t.ok(hold?.ended_at, 'its hold ended');

  const second = await w.h.run('import-order', orderInput(w.company.id, 'webshop', 'W-3', [{ sku: a.sku, quantity: '1' }]));
  t.equal(second.state, 'confirmed');
  const ref = { connectionId: w.connectionId, channelId: Number(w.channel.id), channel: 'webshop', channelOrderId: 'W-3' };
  const [x, y] = await Promise.all([cancelChannelOrder(w.db, w.h.boss, ref), cancelChannelOrder(w.db, w.h.boss, ref)]);
  t.ok(x?.kind === 'void' && y?.kind === 'void');
  if (x?.kind === 'void' && y?.kind === 'void') {
    t.equal(x.operation.id, y.operation.id, 'one void operation');
    t.same([x.created, y.created].sort(), [false, true]);
    t.equal((await w.h.settle(x.operation.id)).state, 'confirmed');
  }
  const voids = await w.db.selectFrom('push_operations').select('id').where('kind', '=', 'void').execute();
  t.equal(voids.length, 1);
});

t.test('with no webhook at all, the watch carries the road: packed, shipped with tracking, invoiced, returned, received', async (t) => {
  const w = await world(t);
  const [a] = w.variants;
  const op = await w.h.run('import-order', orderInput(w.company.id, 'webshop', 'W-9', [{ sku: a.sku, quantity: '2' }]));
  t.equal(op.state, 'confirmed', op.reason ?? '');
  const orderId = (op.result as any).order_id as number;
  const [line] = (await w.h.snapshot('orders')).find((o: any) => o.id === orderId).order_line_item_ids as number[];
  const pending = async () =>
    (await sql<{ resource: string }>`SELECT resource FROM pending_fetches WHERE connection_id = ${w.connectionId}`.execute(w.db)).rows
      .length;
  t.equal(await pending(), 0, 'the import reads nothing back at once: its watch will');

  // No delivery reaches us about anything that follows; only the order's watch (each minute while unshipped,
  // made due here rather than waited for) and the reads of what it finds.
  const watch = async () => {
    await sql`UPDATE channel_orders SET watch_at = now() - interval '1 second' WHERE watch_at IS NOT NULL`.execute(w.db);
    await handleMaintenance(w.h.rt, 'order-watch');
    // The order first: what it names and the mirror lacks is then due too.
    await w.drainDue([CHANNEL_ORDER, 'fulfillment', 'fulfillment_return']);
  };
  await watch();
  t.ok(
    (await w.db.selectFrom('orders').select('id').where('id', '=', orderId).executeTakeFirst()) !== undefined,
    'the first watch mirrors the order',
  );

  // Packed, then shipped with tracking, invoiced, one unit returned.
  const f = (
    await w.api('POST', '/fulfillments', {
      fulfillment: { order_id: orderId, fulfillment_line_items: [{ order_line_item_id: line, quantity: '2' }] },
    })
  ).fulfillment;
  await watch();
  await w.api('PUT', `/fulfillments/${f.id}`, { fulfillment: { status: 'fulfilled', tracking_company: 'DHL', tracking_number: 'T-900' } });
  await w.api('POST', `/orders/${orderId}/actions/invoice`, {});
  const ret = (
    await w.api('POST', '/fulfillment_returns', {
      fulfillment_return: { order_id: orderId, fulfillment_return_line_items: [{ order_line_item_id: line, quantity: '1' }] },
    })
  ).fulfillment_return;
  await watch();
  await until('the shipment, the invoice and the return reached the channel', () =>
    ['order.packed', 'order.shipped', 'order.invoiced', 'order.returned'].every((type) =>
      w.ep.state.told.some((e) => e.channel_order_id === 'W-9' && e.type === type),
    ),
  );
  const shipped = w.ep.state.told.find((e) => e.channel_order_id === 'W-9' && e.type === 'order.shipped')!;
  t.match(shipped.data, { tracking_company: 'DHL', tracking_number: 'T-900' }, 'with its tracking');

  // The goods come back later: no webhook says so either; the watch's read of the open return tells the channel.
  await w.api('PUT', `/fulfillment_returns/${ret.id}`, { fulfillment_return: { status: 'received' } });
  await watch();
  await until('the return received reached the channel', () =>
    w.ep.state.told.some((e) => e.channel_order_id === 'W-9' && e.type === 'order.return_received'),
  );
  const told = w.ep.state.told.filter((e) => e.channel_order_id === 'W-9');
  t.same(
    told.map((e) => e.type),
    ['order.imported', 'order.packed', 'order.shipped', 'order.invoiced', 'order.returned', 'order.return_received'],
    'each once, in order',
  );
  t.match(told.at(-1)!.data, { return_id: ret.id, lines: [{ sku: a.sku, quantity: '1' }] }, 'with its lines');
  const times = told.map((e) => Date.parse(e.at));
  t.same(
    times,
    [...times].sort((x, y) => x - y),
    'at never goes back within the order',
  );
  const deliveries = await w.db.selectFrom('webhook_deliveries').select('id').execute();
  t.equal(deliveries.length, 0, 'and not one delivery was received');
});

t.test('events of one order: a return received follows its return; at never goes back across writes', async (t) => {
  const at = (s: string) => new Date(s);
  const facts = {
    order_id: 1,
    order_number: 'SO1',
    status: 'fulfilled',
    created_at: '2026-11-27T10:00:00Z',
    updated_at: '2026-11-27T10:00:00Z',
    invoice_status: null,
    invoice_numbers: {},
    payment_status: null,
    fulfillments: [],
    returns: [
      {
        id: 7,
        status: 'received',
        credit_note_number: null,
        location_id: 3,
        created_at: '2026-11-27T11:00:00Z',
        received_at: '2026-11-27T11:00:00Z',
        lines: [{ sku: 'A', quantity: '1' }],
      },
    ],
  } as unknown as Parameters<typeof dueEvents>[0];
  const due = dueEvents(facts, ['imported']);
  t.same(
    due.events.map((e) => e.type),
    ['order.returned', 'order.return_received'],
    'received in the same second as its return: told after it',
  );
  t.same(due.keys, ['returned:7', 'return_received:7']);
  t.same(dueEvents(facts, ['imported', 'returned:7', 'return_received:7']).events, [], 'nothing twice');

  // The channel was told something at 12:00 already: what a later write learns, stamped 11:00, is told at 12:00.
  const later = notBefore(due.events, at('2026-11-27T12:00:00Z'));
  t.same(
    later.map((e) => e.at.toISOString()),
    ['2026-11-27T12:00:00.000Z', '2026-11-27T12:00:00.000Z'],
  );
  t.same(
    notBefore(due.events, null).map((e) => e.at.toISOString()),
    ['2026-11-27T11:00:00.000Z', '2026-11-27T11:00:00.000Z'],
    'nothing told before: the service time stands',
  );
});

t.test('a return waits for the shipment of its goods: never told before it, across writes', async (t) => {
  const line = (id: number, quantity: string) => ({ sku: `SKU-${id}`, quantity, order_line_item_id: id });
  type Fulfilment = Parameters<typeof dueEvents>[0]['fulfillments'][number];
  const packed: Fulfilment = {
    id: 11,
    status: 'packed',
    packed_at: '2026-11-27T10:01:00Z',
    shipped_at: null,
    created_at: '2026-11-27T10:01:00Z',
    updated_at: '2026-11-27T10:01:00Z',
    stock_location_id: 1,
    tracking_company: null,
    tracking_number: null,
    tracking_url: null,
    lines: [line(5, '2')],
  };
  const ret = {
    id: 7,
    status: 'returning',
    credit_note_number: null,
    location_id: 1,
    // The service's clocks differ: the return is stamped before the shipment it returns goods of.
    created_at: '2026-11-27T10:04:00Z',
    received_at: null,
    lines: [line(5, '1')],
  };
  const facts = (fulfillment: Fulfilment) =>
    ({
      order_id: 1,
      order_number: 'SO1',
      status: 'active',
      created_at: '2026-11-27T10:00:00Z',
      updated_at: '2026-11-27T10:00:00Z',
      invoice_status: null,
      invoice_numbers: {},
      payment_status: null,
      fulfillments: [fulfillment],
      returns: [ret],
    }) as unknown as Parameters<typeof dueEvents>[0];
  const told = ['imported', 'packed:11'];

  // The return is mirrored while its fulfilment is still packed in the mirror (its shipment not read yet).
  const early = dueEvents(facts(packed), told, new Date('2026-11-27T10:05:00Z'));
  t.same(early.events, [], 'the return is not told before its shipment');
  t.same(early.waiting, { fulfillments: [11], until: new Date('2026-11-27T10:14:00Z') }, 'its fulfilment is read again, by then');

  // The fulfilment's read shows it shipped: the shipment, then the return, stamped no earlier than the shipment.
  const shipped: Fulfilment = { ...packed, status: 'fulfilled', shipped_at: '2026-11-27T10:04:30Z', tracking_number: 'T-1' };
  const later = dueEvents(facts(shipped), told, new Date('2026-11-27T10:06:00Z'));
  t.same(
    later.events.map((e) => [e.type, e.at.toISOString()]),
    [
      ['order.shipped', '2026-11-27T10:04:30.000Z'],
      ['order.returned', '2026-11-27T10:04:30.000Z'],
    ],
  );
  t.equal(later.waiting, null);

  // A shipment never learnt (goods shipped before the import, say): the return is told once its wait is over.
  const overdue = dueEvents(facts(packed), told, new Date('2026-11-27T10:14:01Z'));
  t.same(
    overdue.events.map((e) => e.type),
    ['order.returned'],
  );
});
