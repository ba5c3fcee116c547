// A channel order in the console, in Chromium, against the sandbox, the push worker and the channel
// sender: an order the channel imported is packed and shipped in two parts with tracking, paid, and a line
// returned; its page shows the timeline from hold to import, each shipment with its tracking (linked) and the POST
// that told the channel; it is reached from a search by channel order id, from the service order's page and from
// the Channels page. A voided order's page offers no ship action, and Cancel on a channel order voids it at the
// service. Each page is checked with axe-core and screenshotted (SCREENSHOTS=dir, else test-artifacts/console).
import { merchantApi } from '../support/sandbox.ts';
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'kysely';
import t from 'tap';
import { setDestination } from '../../src/channels/destinations.ts';
import { announceChanges, channelDeliveryHandler } from '../../src/channels/dispatch.ts';
import { markPending } from '../../src/db/pending.ts';
import { addChannel } from '../../src/channels/channels.ts';
import { rulesFrom } from '../../src/stock/rules.ts';
import { drainPending } from '../../src/sync/drain.ts';
import { handleMaintenance } from '../../src/sync/maintenance.ts';
import { workQueues } from '../../src/worker/handlers.ts';
import { harness, orderInput, plainVariants } from '../push/harness.ts';
import { axe, chromiumMissing, openBrowser } from '../support/browser.ts';
import { testConfig } from '../support/config.ts';
import { listenLocal } from '../support/http.ts';
import { channelEndpoint } from '../support/channel-endpoint.ts';
import { captureLogger } from '../support/log.ts';
import { until } from '../support/processes.ts';
import { testConsole } from '../support/runtime.ts';

const TOKEN = 'channel-orders-browser-operator-token';
const SHOTS = process.env.SCREENSHOTS || join(process.cwd(), 'test-artifacts', 'console');

if (chromiumMissing) {
  t.test('a channel order in the console, in chromium', { skip: chromiumMissing }, async () => {});
} else {
  t.test('a channel order in the console, in chromium', async (t) => {
    const h = await harness(t, { config: { SERVICE_CLOCK_MARGIN_SECONDS: 0 } });
    const db = h.tdb.db;
    const connectionId = Number(h.connection.id);
    const { channel } = await addChannel(db, connectionId, { name: 'webshop' });
    const channelId = Number(channel.id);

    // The channel's endpoint: every POST verified, the events it heard kept.
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const heard: { type: string; channel_order_id: string; webhookId: string }[] = [];
    const { server: endpoint, refused: bad } = channelEndpoint(secret, ({ payload, headers }) => {
      for (const e of payload.data.events ?? [])
        heard.push({ type: e.type, channel_order_id: e.channel_order_id, webhookId: String(headers['webhook-id']) });
    });
    const url = await listenLocal(t, endpoint);
    await setDestination(db, h.rt.clients.key(h.config), channelId, { url, secret, kinds: 'orders' }, ['127.0.0.1']);
    h.runtime.onStop.push(await workQueues(h.rt, [channelDeliveryHandler], { pollingIntervalSeconds: 0.5 }));

    // The console on the same database (its Cancel queues a void the harness's push worker sends).
    const { rt: consoleRt } = await testConsole(t, h.tdb, testConfig({ OPERATOR_TOKEN: TOKEN }), captureLogger('warn').log);
    const base = consoleRt.publicUrl;

    const service = merchantApi(h.sb);
    /** What the drains do with deliveries about these records: read them, write the mirror, wake the sender. */
    const drain = async (marks: { resource: string; id: number }[]) => {
      await markPending(
        db,
        marks.map((m) => ({ connectionId, resource: m.resource, id: m.id, reason: `${m.resource}.create` })),
      );
      const client = await h.rt.sync.drainClient(connectionId);
      for (const resource of [...new Set(marks.map((m) => m.resource))]) {
        const out = await drainPending({ db, log: h.rt.log, client, rules: rulesFrom(h.config), clockMarginMs: 0 }, resource);
        await announceChanges(
          h.rt,
          out.orderEvents.map((id) => ({ channel_id: id })),
        );
      }
    };
    const told = (order: string, type: string) => () => heard.some((e) => e.channel_order_id === order && e.type === type);

    const [a, b] = plainVariants(await h.snapshot('variants'));
    const [company] = (await h.snapshot('companies')).filter((c: any) => c.status !== 'archived');
    const imported = async (channelOrderId: string, lines: { sku: string; quantity: string }[]) => {
      const op = await h.run('import-order', orderInput(company.id, 'webshop', channelOrderId, lines));
      t.equal(op.state, 'confirmed', op.reason ?? '');
      const orderId = (op.result as any).order_id as number;
      await drain([{ resource: 'order', id: orderId }]);
      return orderId;
    };

    // W-1: imported, packed and shipped in two parts with tracking, paid, one line returned.
    const w1 = await imported('W-1', [
      { sku: a.sku, quantity: '2' },
      { sku: b.sku, quantity: '1' },
    ]);
    const order = (await h.snapshot('orders')).find((o: any) => o.id === w1);
    const [lineA, lineB] = order.order_line_item_ids as number[];
    const shipPart = async (line: number, quantity: string, tracking: Record<string, string>) => {
      const f = (
        await service('POST', '/fulfillments', {
          fulfillment: { order_id: w1, fulfillment_line_items: [{ order_line_item_id: line, quantity }] },
        })
      ).fulfillment;
      await drain([{ resource: 'fulfillment', id: f.id }]);
      await service('PUT', `/fulfillments/${f.id}`, { fulfillment: { status: 'fulfilled', ...tracking } });
      await drain([{ resource: 'fulfillment', id: f.id }]);
      return f.id as number;
    };
    const f1 = await shipPart(lineA!, '2', {
      tracking_company: 'DHL',
      tracking_number: 'T-111',
      tracking_url: 'https://track.example/T-111',
    });
    const f2 = await shipPart(lineB!, '1', { tracking_company: 'UPS', tracking_number: 'T-222' });
    await service('POST', `/orders/${w1}/actions/pay`);
    await drain([{ resource: 'order', id: w1 }]);
    const ret = (
      await service('POST', '/fulfillment_returns', {
        fulfillment_return: { order_id: w1, fulfillment_return_line_items: [{ order_line_item_id: lineB, quantity: '1' }] },
      })
    ).fulfillment_return;
    await drain([{ resource: 'fulfillment_return', id: ret.id }]);
    await until('the return reached the channel', told('W-1', 'order.returned'), 30_000);

    // W-2: imported, then voided at the service (no webhook tells of it: the order watch reads it back).
    const w2 = await imported('W-2', [{ sku: a.sku, quantity: '1' }]);
    await service('POST', `/orders/${w2}/actions/void`);
    await sql`UPDATE channel_orders SET watch_at = now() - interval '1 second'`.execute(db);
    await handleMaintenance(h.rt, 'order-watch');
    await drain([]);
    const out = await drainPending(
      { db, log: h.rt.log, client: await h.rt.sync.drainClient(connectionId), rules: rulesFrom(h.config), clockMarginMs: 0 },
      'channel_order',
    );
    await announceChanges(
      h.rt,
      out.orderEvents.map((id) => ({ channel_id: id })),
    );
    await until('the void reached the channel', told('W-2', 'order.voided'), 30_000);

    // W-3: imported, nothing shipped yet: the operator cancels it from the console.
    const w3 = await imported('W-3', [{ sku: b.sku, quantity: '1' }]);
    t.same(bad, [], 'every POST verified');

    await mkdir(SHOTS, { recursive: true });
    const { page, dialogs } = await openBrowser(t);
    await page.setViewportSize({ width: 1400, height: 1000 });
    const look = async (t: { same(found: unknown, wanted: unknown, message: string): unknown }, name: string) => {
      t.same(await axe(page), [], `${name}: no serious or critical accessibility violation`);
      await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
    };
    await page.goto(`${base}/orders?connection=shop`);
    await page.getByLabel('Token').fill(TOKEN);
    await page.getByLabel('Token').press('Enter');
    await page.getByRole('heading', { name: 'Orders', level: 1 }).waitFor();

    await t.test('a search by channel order id finds it; its page shows the timeline', async (t) => {
      await page.getByLabel('Order number or channel order id').fill('W-1');
      await page.getByRole('button', { name: 'Show' }).click();
      await page.waitForURL(/q=W-1/);
      const found = page.locator('#channel-orders tbody tr');
      t.equal(await found.count(), 1, 'one channel order W-1');
      t.match(await found.textContent(), /webshop\s*W-1/);
      await look(t, 'orders-search');
      await found.getByRole('link', { name: 'W-1' }).click();
      await page.getByRole('heading', { name: 'Channel order webshop W-1' }).waitFor();
      t.equal(new URL(page.url()).pathname, `/channels/${channelId}/orders/W-1`);
      t.match(await page.locator('#service-order').textContent(), /order SO\d+: status fulfilled, invoice invoiced, payment paid/);

      const kinds = await page.locator('#timeline li').evaluateAll((els) => els.map((e) => e.getAttribute('data-kind')));
      t.same(
        kinds.filter((k) => k?.startsWith('order.')),
        [
          'order.imported',
          'order.packed',
          'order.shipped',
          'order.packed',
          'order.shipped',
          'order.invoiced',
          'order.paid',
          'order.returned',
        ],
        'the events in the order they happened',
      );
      t.same(
        kinds.filter((k) => k?.startsWith('hold.')),
        ['hold.created', 'hold.ended'],
        'the hold the import made, and its end',
      );
      t.ok(kinds.indexOf('hold.created') < kinds.indexOf('order.imported'), 'held before the import');
      // Each shipment with its tracking; a tracking URL is a link.
      const shipped = page.locator('#timeline li[data-kind="order.shipped"]');
      t.match(await shipped.nth(0).textContent(), new RegExp(`Shipped \\(fulfilment ${f1}\\)[\\s\\S]*${a.sku} × 2[\\s\\S]*DHL\\s*T-111`));
      t.equal(await shipped.nth(0).getByRole('link', { name: 'T-111' }).getAttribute('href'), 'https://track.example/T-111');
      t.match(await shipped.nth(1).textContent(), new RegExp(`Shipped \\(fulfilment ${f2}\\)[\\s\\S]*UPS\\s*T-222`));
      t.equal(await shipped.nth(1).getByRole('link').count(), 0, 'no URL, no link');
      t.match(await page.locator('#timeline li[data-kind="order.returned"]').textContent(), new RegExp(`${b.sku} × 1`));
      // Each event names the POST that told the channel: its webhook-id, time and answer.
      const webhookIds = new Set(heard.filter((e) => e.channel_order_id === 'W-1').map((e) => e.webhookId));
      for (const li of await page.locator('#timeline li[data-kind^="order."]').all()) {
        const cell = (await li.locator('.told-cell').textContent()) ?? '';
        const m = /POST (\S+)\s*(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC · HTTP 200/.exec(cell);
        t.ok(m && webhookIds.has(m[1]!), `${await li.getAttribute('data-kind')}: told by a POST the endpoint took (${cell.trim()})`);
      }
      t.match(await page.locator('#timeline li[data-kind="hold.created"] .told-cell').textContent(), /the channel's own/);
      t.equal(await page.locator('#shipments tbody tr').count(), 2);
      t.match(await page.locator('#shipments').textContent(), /DHL\s*T-111[\s\S]*UPS\s*T-222/);
      t.match(await page.locator('#channel-order-returns tbody tr').textContent(), new RegExp(`${b.sku} × 1`));
      t.match(await page.locator('#cancel-state').textContent(), /has shipped: it can no longer be voided/);
      t.equal(await page.getByRole('button', { name: 'Cancel order' }).count(), 0, 'no Cancel once shipped');
      t.match(
        await page.locator('#channel-order-operations tbody').textContent(),
        /import-order\s*confirmed/,
        'the operations that touched it',
      );
      await look(t, 'channel-order');
    });

    await t.test('the service order links to it, shows whole quantities and offers nothing to ship', async (t) => {
      await page.goto(`${base}/orders/shop/${w1}`);
      await page.getByRole('heading', { name: /^Order / }).waitFor();
      t.same(await page.locator('#order-lines tbody td:nth-child(3)').allTextContents(), ['2', '1'], 'quantities as 2 and 1, not 2.0');
      t.match(await page.locator('#fulfillments').textContent(), new RegExp(`${a.sku} × 2`));
      t.notMatch(await page.locator('#fulfillments').textContent(), /\d\.0\b/);
      t.equal(await page.locator('#ship-form').count(), 0);
      t.match(await page.locator('#ship-state').textContent(), /Everything on this order is shipped/);
      await page.locator('#channel-order-link').click();
      await page.getByRole('heading', { name: 'Channel order webshop W-1' }).waitFor();
    });

    await t.test('the Channels page lists the recent channel orders', async (t) => {
      await page.goto(`${base}/channels?connection=shop`);
      const rows = page.locator(`#channel-orders-${connectionId} tbody tr`);
      t.same((await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-order')))).sort(), ['W-1', 'W-2', 'W-3']);
      t.match(await rows.filter({ hasText: 'W-2' }).textContent(), /voided/);
      await look(t, 'channels-orders');
      await rows.filter({ hasText: 'W-1' }).getByRole('link', { name: 'W-1' }).click();
      await page.getByRole('heading', { name: 'Channel order webshop W-1' }).waitFor();
    });

    await t.test('a voided order offers no ship action; its channel order shows the void', async (t) => {
      await page.goto(`${base}/orders/shop/${w2}`);
      await page.getByRole('heading', { name: /^Order / }).waitFor();
      t.match(await page.locator('#order-facts').textContent(), /void/);
      t.equal(await page.locator('#ship-form').count(), 0, 'no ship form');
      t.equal(await page.getByRole('button', { name: /Ship/ }).count(), 0, 'no ship button');
      t.match(await page.locator('#ship-state').textContent(), /This order is void: nothing on it can be shipped/);
      await look(t, 'order-void');
      // Asked anyway (a stale page): refused.
      const res = await page.request.post(`${base}/orders/shop/${w2}/ship`, { form: { tracking_number: 'X' } });
      t.equal(res.status(), 409);
      t.match(await res.text(), /Not shipped: This order is void/);
      await page.locator('#channel-order-link').click();
      await page.getByRole('heading', { name: 'Channel order webshop W-2' }).waitFor();
      t.match(await page.locator('#timeline li[data-kind="order.voided"]').textContent(), /Voided[\s\S]*POST \S+/);
      t.match(await page.locator('#cancel-state').textContent(), /The order is void at the service/);
    });

    await t.test('Cancel order voids an order not shipped, once', async (t) => {
      await page.goto(`${base}/channels/${channelId}/orders/W-3`);
      await page.getByRole('heading', { name: 'Channel order webshop W-3' }).waitFor();
      t.match(await page.locator('#cancel-form + p').textContent(), /Voids order \S+ at the service/);
      await page.getByRole('button', { name: 'Cancel order' }).click();
      await page.waitForURL(/voiding=\d+/);
      const id = Number(new URL(page.url()).searchParams.get('voiding'));
      t.match(await page.getByRole('status').first().textContent(), new RegExp(`Operation ${id} voids the order at the service`));
      t.equal((await h.settle(id)).state, 'confirmed');
      await drain([{ resource: 'order', id: w3 }]);
      await until('the void reached the channel', told('W-3', 'order.voided'), 30_000);
      await page.reload();
      t.match(await page.locator('#timeline li[data-kind="order.voided"]').textContent(), /Voided[\s\S]*POST \S+/);
      t.match(await page.locator('#cancel-state').textContent(), /The order is void at the service/);
      t.match(await page.locator('#channel-order-operations').textContent(), new RegExp(`${id}[\\s\\S]*void\\s*confirmed`));
      const voids = await db.selectFrom('push_operations').select('id').where('kind', '=', 'void').execute();
      t.same(
        voids.map((v) => v.id),
        [id],
        'one void operation',
      );
      await look(t, 'channel-order-cancelled');
    });

    t.same(dialogs, [], 'no markup from data ran as script');
  });
}
