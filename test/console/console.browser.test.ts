// The console in a real browser (Debian's chromium through playwright-core): it loads behind the login
// form, the live tail shows new entries as they are written, a filter narrows it, a replay works, the record
// page shows a variant's history, markup in data stays text, and nothing a page asks for (its icon) is missing.
import t from 'tap';
import { sql } from 'kysely';
import { logSync } from '../../src/db/synclog.ts';
import { chromiumMissing, openBrowser } from '../support/browser.ts';
import { addBudget, addConnection, addDelivery, addVariant, consoleServer, sendDelivery } from './harness.ts';
import { reconcileQueue } from '../../src/queue/contracts.ts';
import { consumeDeliveries } from '../../src/sync/intake.ts';
import { deliveriesQueue, type DeliveriesData } from '../../src/queue/contracts.ts';

const TOKEN = 'browser-test-operator-token';

if (chromiumMissing) {
  t.test('the console in chromium', { skip: chromiumMissing }, async () => {});
} else {
  t.test('the console in chromium', async (t) => {
    const { base, db, boss } = await consoleServer(t, { token: TOKEN, receiver: true });
    const shop = await addConnection(db, 'shop', { accountName: 'Shop & Co <b>' });
    await addVariant(db, shop, {
      id: 42,
      sku: 'TEE-42',
      name: 'Tee <script>alert("x")</script>',
      stock: [
        { location: 1, onHand: '7', committed: '2' },
        { location: 2, onHand: '3.5' },
      ],
    });
    await addBudget(db, shop, { remaining: 211, resetAt: new Date(Date.now() + 120_000) });
    const { page, dialogs } = await openBrowser(t);
    // Whatever a page asks for is there (its icon among them); only the address made up below is not.
    const missing: string[] = [];
    page.on('response', (r) => {
      if (r.status() === 404 && !r.url().endsWith('/no-such-page')) missing.push(r.url());
    });

    await t.test('loads behind the login form', async (t) => {
      const res = await page.goto(`${base}/`);
      t.equal(res?.status(), 401);
      await page.getByLabel('Token').fill('wrong');
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByText('That is not the operator token.').waitFor();
      await page.getByLabel('Token').fill(TOKEN);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      const card = page.locator('section.connection[data-connection="shop"]');
      t.match(await card.locator('.budget').textContent(), /211 of 300 left/);
      t.match(await card.textContent(), /Shop & Co <b>/, 'account name shown as text');
      t.equal(await card.locator('svg').count(), 6, 'deliveries, lag, budget, queues, drift and log charts');
      t.ok(await page.locator('#queues').isVisible());
    });

    await t.test('live tail shows new entries as they happen; a filter narrows it', async (t) => {
      await page.goto(`${base}/logs`);
      await page.getByText('live: following new entries').waitFor();
      // A real delivery through the receiver: stored and enqueued; logged when the deliveries handler takes it, and on
      // the page a moment later.
      const ack = await sendDelivery(base, 'shop', { event: 'variants.stock_level_update', object_id: 42 }, 'dlv-browser-1');
      t.equal(ack.status, 200);
      const jobs = await boss.findJobs<DeliveriesData>(deliveriesQueue.name, { data: { connectionId: shop } });
      await consumeDeliveries(
        db,
        jobs.map((j) => j.data),
      );
      const received = page.locator('#log-rows tr', { hasText: 'delivery.received' });
      await received.waitFor();
      t.match(await received.textContent(), /shop\s*variant\s*42/);
      await logSync(db, {
        connectionId: shop,
        resource: 'variant',
        recordId: 42,
        sku: 'TEE-42',
        action: 'mirror.update',
        deliveryId: 'dlv-browser-1',
      });
      await page.locator('#log-rows tr', { hasText: 'mirror.update' }).waitFor();
      await logSync(db, { connectionId: shop, resource: 'variant', recordId: 43, sku: 'CAP-43', action: 'mirror.update' });
      await page.locator('#log-rows tr', { hasText: 'CAP-43' }).waitFor();
      t.equal(await page.locator('#log-rows tr').count(), 3);

      // Filter by SKU through the form: only TEE-42 entries, old and new.
      await page.getByLabel('SKU').fill('TEE-42');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/sku=TEE-42/);
      await page.getByText('live: following new entries').waitFor();
      t.equal(await page.locator('#log-rows tr').count(), 1);
      await logSync(db, { connectionId: shop, resource: 'variant', recordId: 43, sku: 'CAP-43', action: 'not-for-this-filter' });
      const at1 = (onHand: string, available: string) => ({ location_id: 1, on_hand: onHand, committed: '2', incoming: '0', available });
      await logSync(db, {
        connectionId: shop,
        resource: 'variant',
        recordId: 42,
        sku: 'TEE-42',
        action: 'channel-quantity',
        deliveryId: 'dlv-browser-1',
        before: { locations: [at1('8', '6')], channel_quantity: '9.5' },
        after: { locations: [at1('7', '5')], channel_quantity: '8.5' },
        detail: { cause: 'delivery' },
      });
      await page.locator('#log-rows tr', { hasText: 'channel-quantity' }).waitFor();
      t.equal(await page.locator('#log-rows tr', { hasText: 'not-for-this-filter' }).count(), 0);
      t.equal(await page.locator('#log-rows tr').count(), 2);
    });

    await t.test('a failed delivery is replayed from the deliveries list', async (t) => {
      const id = await addDelivery(db, shop, { state: 'failed', error: 'fetch failed: HTTP 503', objectId: 42 });
      await page.goto(`${base}/deliveries?state=failed`);
      const row = page.locator(`#deliveries tr[data-id="${id}"]`);
      t.equal(await row.locator('.state').textContent(), 'failed');
      await row.getByRole('button', { name: 'Replay' }).click();
      await page.getByText(`Replayed ${id}: it is queued again.`).waitFor();
      const stored = await db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      t.equal(stored.state, 'queued');
      const [job] = await boss.findJobs(deliveriesQueue.name, { id: stored.job_id! });
      t.match(job!.data, { deliveryRowId: id, connectionId: shop, resource: 'variant', objectId: 42 });
    });

    await t.test('a dead letter is replayed to its live queue', async (t) => {
      const deadId = (await boss.send('reconcile-dead', { connectionId: shop, full: false }))!;
      await page.goto(`${base}/dead-letters`);
      await page.locator(`#dead-letters tr[data-id="${deadId}"]`).getByRole('button', { name: 'Replay' }).click();
      await page.getByText(`Replayed ${deadId}`).waitFor();
      t.match(await page.locator('#dead-letters').textContent(), /No dead letters/);
      t.equal((await boss.findJobs(reconcileQueue.name, { data: { connectionId: shop } })).length, 1);
    });

    await t.test('the record page shows stock per location, channel quantity and the history with causes', async (t) => {
      const channel = (
        await sql<{ id: number }>`INSERT INTO channels (connection_id, name) VALUES (${shop}, 'default') RETURNING id`.execute(db)
      ).rows[0]!.id;
      await sql`INSERT INTO channel_quantities (connection_id, channel_id, variant_id, sku, status, quantity, tracked, backorderable, stock)
                VALUES (${shop}, ${channel}, 42, 'TEE-42', 'active', '8.5', true, false, '{}')`.execute(db);
      await sql`INSERT INTO channel_quantity_changes (connection_id, channel_id, variant_id, sku, before_quantity, quantity, tracked, backorderable, cause, delivery_id)
                VALUES (${shop}, ${channel}, 42, 'TEE-42', '9.5', '8.5', true, false, 'delivery', 'dlv-77')`.execute(db);
      await page.goto(`${base}/variants`);
      await page.getByLabel('SKU or name').fill('TEE-42');
      await page.getByRole('button', { name: 'Show', exact: true }).click();
      await page.getByRole('link', { name: 'TEE-42' }).click();
      await page.waitForURL(/\/variants\/shop\/42$/);
      t.match(await page.locator('#variant-facts').textContent(), /Tee <script>alert\("x"\)<\/script>/);
      const stock = await page.locator('#stock tbody tr').allTextContents();
      t.match(stock[0], /Warehouse 1\s*7\s*2\s*5/);
      t.match(stock[1], /Warehouse 2\s*3\.5\s*0\s*3\.5/);
      t.match(await page.locator('#channel-quantity').textContent(), /8\.5/);
      t.match(await page.locator('#channel-history').textContent(), /9\.5\s*8\.5\s*delivery\s*dlv-77/);
      const stockHistory = await page.locator('#stock-history > tbody').textContent();
      t.match(stockHistory, /Warehouse 1: on hand 8 → 7, available 6 → 5/);
      t.match(stockHistory, /delivery\s*dlv-browser-1/);
      const history = await page.locator('#history > tbody').textContent();
      t.match(history, /channel-quantity/);
      t.match(history, /delivery\.received/, 'the delivery about the variant (by record id)');
      t.match(history, /mirror\.update/);
      t.notMatch(history, /CAP-43/);
    });

    await t.test('an address the console has no page for shows its 404 page, with a way back', async (t) => {
      const res = await page.goto(`${base}/no-such-page`);
      t.equal(res?.status(), 404);
      await page.getByRole('heading', { name: 'Not found' }).waitFor();
      await page.getByRole('link', { name: 'Back to the overview' }).click();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
    });

    t.same(missing, [], 'no page asked for anything that is not there');
    t.same(dialogs, [], 'no markup from data ran as script');
  });
}
