// Orders back to the channel, end to end with real processes: a receiver and a worker as their own processes,
// deliveries from the sandbox through the proxy. An order the channel imported is packed and shipped in two parts
// with tracking numbers at the service and one line is returned; meanwhile the worker is killed with SIGKILL, the
// channel's endpoint is down (its destination failing, then paused by an operator and resumed) and every stored
// delivery is replayed. The endpoint (each POST verified with the `standardwebhooks` package) hears imported,
// packed, shipped, packed, shipped, returned, each once and in that order. An order voided at the service (no
// webhook says so) reaches the channel as voided through the stock event its released stock makes, and its hold
// ends.
import { merchantApi } from '../support/sandbox.ts';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { setDestination } from '../../src/channels/destinations.ts';
import { replayDelivery } from '../../src/receiver/replay.ts';
import { pauseDestination, resumeDestination } from '../../src/db/channel-destinations.ts';
import { enqueueOperation } from '../../src/push/enqueue.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { createQueues } from '../../src/queue/queues.ts';
import { addChannel } from '../../src/channels/channels.ts';
import { ClientState } from '../../src/api/client-state.ts';
import { listenLocal } from '../support/http.ts';
import { channelEndpoint } from '../support/channel-endpoint.ts';
import { captureLogger } from '../support/log.ts';
import { startWorld, until } from './harness.ts';

const { log } = captureLogger('warn');
const ALLOW = { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' };

t.test(
  'shipped twice and returned through a worker kill, an endpoint down and every delivery replayed: each event once, in order',
  async (t) => {
    const world = await startWorld(t);
    const { db } = world;
    const [shop] = world.shops;
    const receiver = await world.spawn('receiver', ALLOW);
    world.setReceivers([receiver]);
    let worker = await world.spawn('worker', ALLOW);
    await world.reconcile(ALLOW);

    // The channel and its endpoint.
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const ep = {
      down: false,
      refused: 0,
      told: [] as { id: string; type: string; order: string; data: any }[],
      ids: new Set<string>(),
    };
    const { server, refused } = channelEndpoint(secret, ({ payload, headers }) => {
      if (ep.down) {
        ep.refused++;
        return 503;
      }
      const id = String(headers['webhook-id']);
      // The receiver's side of the contract: a webhook-id it took is not taken twice.
      if (payload.type === 'channel.orders.changed' && !ep.ids.has(id)) {
        ep.ids.add(id);
        for (const e of payload.data.events) ep.told.push({ id: String(e.id), type: e.type, order: e.channel_order_id, data: e.data });
      }
    });
    const url = await listenLocal(t, server);
    const connectionId = Number(shop!.connection.id);
    const { channel } = await addChannel(db, connectionId, { name: 'webshop' });
    const channelId = Number(channel.id);
    await setDestination(db, new ClientState().key(world.config), channelId, { url: `${url}/orders`, secret, kinds: 'orders' }, [
      '127.0.0.1',
    ]);

    const boss = await startBoss(world.databaseUrl, log, { supervise: false, schedule: false, max: 2 });
    t.teardown(() => stopBoss(boss, false));
    await createQueues(boss);
    const variants = (await shop!.snapshot('variants')).filter(
      (v) => v.sku && v.status === 'active' && !v.composite && v.manage_stock !== false,
    );
    const company = (await shop!.snapshot('companies')).find((c) => c.status === 'active')!;
    const currency = (await shop!.snapshot('currencies'))[0]!.iso;
    const service = merchantApi(shop!.sandbox);
    const importOrder = async (channelOrderId: string, lines: { sku: string; quantity: string }[]) => {
      const op = await enqueueOperation({ db, boss }, 'import-order', {
        channel: 'webshop',
        channel_order_id: channelOrderId,
        customer: { company_id: company.id },
        currency,
        issued_at: '2026-11-21',
        lines,
      });
      let orderId = 0;
      await until(
        `import of ${channelOrderId}`,
        async () => {
          const row = await db
            .selectFrom('push_operations')
            .select(['state', 'result', 'reason'])
            .where('id', '=', op.id)
            .executeTakeFirst();
          if (row?.state === 'failed') throw new Error(`import failed: ${row.reason}`);
          orderId = Number((row?.result as { order_id?: number } | null)?.order_id ?? 0);
          return row?.state === 'confirmed' ? true : `${row?.state}`;
        },
        60_000,
      );
      return orderId;
    };
    const told = (order: string) => ep.told.filter((e) => e.order === order).map((e) => e.type);

    const [a, b] = variants;
    const orderId = await importOrder('W-1', [
      { sku: a.sku, quantity: '2' },
      { sku: b.sku, quantity: '1' },
    ]);
    const order = await service('GET', `/orders/${orderId}`);
    const [lineA, lineB] = order.order.order_line_item_ids as number[];
    await until('order.imported at the channel', () => told('W-1').includes('order.imported') || told('W-1').join(), 60_000);

    // The first part ships; the worker is killed as the deliveries come in, and a new one takes over.
    const f1 = (
      await service('POST', '/fulfillments', {
        fulfillment: { order_id: orderId, fulfillment_line_items: [{ order_line_item_id: lineA, quantity: '2' }] },
      })
    ).fulfillment;
    await service('PUT', `/fulfillments/${f1.id}`, {
      fulfillment: { status: 'fulfilled', tracking_company: 'DHL', tracking_number: 'T-111' },
    });
    worker.kill('SIGKILL');
    await worker.exited;
    worker = await world.spawn('worker', ALLOW);
    // The killed worker may have held the drains (taken over within 30 s) and the channel's lease (60 s).
    await until('the first shipment at the channel', () => told('W-1').includes('order.shipped') || told('W-1').join(), 120_000);

    // The endpoint goes down: the destination fails, an operator pauses it; the rest of the order happens meanwhile.
    ep.down = true;
    const f2 = (
      await service('POST', '/fulfillments', {
        fulfillment: { order_id: orderId, fulfillment_line_items: [{ order_line_item_id: lineB, quantity: '1' }] },
      })
    ).fulfillment;
    await service('PUT', `/fulfillments/${f2.id}`, {
      fulfillment: { status: 'fulfilled', tracking_company: 'UPS', tracking_number: 'T-222' },
    });
    await until('the destination failing', () => ep.refused > 0 || 'no POST refused yet', 90_000);
    await pauseDestination(db, channelId, 'endpoint down for maintenance');
    await service('POST', '/fulfillment_returns', {
      fulfillment_return: { order_id: orderId, fulfillment_return_line_items: [{ order_line_item_id: lineB, quantity: '1' }] },
    });
    // Every delivery stored so far is replayed, as an operator might after an incident.
    await until(
      'the return is mirrored',
      async () => {
        const rows = await db.selectFrom('fulfillment_returns').select('id').where('order_id', '=', orderId).execute();
        return rows.length > 0 || 'not yet';
      },
      90_000,
    );
    const stored = await db.selectFrom('webhook_deliveries').select('id').where('connection_id', '=', connectionId).execute();
    for (const d of stored) await replayDelivery(db, boss, Number(d.id));
    await new Promise((r) => setTimeout(r, 3000));
    ep.down = false;
    await resumeDestination(db, channelId);
    await boss.send('channel-delivery', { channelId });

    await until('the return at the channel', () => told('W-1').includes('order.returned') || told('W-1').join(), 90_000);
    t.same(refused, [], 'every POST verified');
    t.same(
      told('W-1'),
      ['order.imported', 'order.packed', 'order.shipped', 'order.packed', 'order.shipped', 'order.returned'],
      'each once, in the order they happened',
    );
    t.same(
      ep.told.filter((e) => e.type === 'order.shipped').map((e) => [e.data.tracking_company, e.data.tracking_number]),
      [
        ['DHL', 'T-111'],
        ['UPS', 'T-222'],
      ],
      'each shipment with its tracking number',
    );
    t.equal(new Set(ep.told.map((e) => e.id)).size, ep.told.length, 'no event id twice');
    t.ok(stored.length > 5, `${stored.length} deliveries replayed`);

    // A void no webhook announces: its released stock does (variant.stock_level_update), and that reads the order.
    const voidedId = await importOrder('W-2', [{ sku: variants[2]!.sku, quantity: '1' }]);
    await until('W-2 imported at the channel', () => told('W-2').includes('order.imported') || told('W-2').join(), 60_000);
    await service('POST', `/orders/${voidedId}/actions/void`);
    await until('the void at the channel', () => told('W-2').includes('order.voided') || told('W-2').join(), 90_000);
    const hold = await db
      .selectFrom('channel_holds')
      .select(['ended_at', 'end_cause'])
      .where('channel_order_id', '=', 'W-2')
      .executeTakeFirst();
    t.ok(hold?.ended_at, `its hold ended (${hold?.end_cause})`);
    t.equal(worker.child.exitCode, null, 'the worker runs on');
  },
);
