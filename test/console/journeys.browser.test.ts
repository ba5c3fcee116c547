// What a new operator does from the console alone, in Chromium, against the real sandbox, a real database
// and the real push worker: find the SKUs out of stock and see why one shows its quantity, find the orders
// imported in the last hour and ship one, find a failed operation and retry it, connect a second account.
// Every page visited is checked with axe-core (no serious or critical violation) and screenshotted at
// 1400x1000 under test-artifacts/console/. One browser, one console, one sandbox pair for the whole file.
import { pushHandler } from '../../src/push/worker.ts';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Page } from 'playwright-core';
import { startSandbox } from '@commerce-sync/sandbox';
import { addTokenConnection, clientFor } from '../../src/api/connections.ts';
import { enqueueOperation } from '../../src/push/enqueue.ts';
import { getOperation } from '../../src/db/operations.ts';
import { createQueues } from '../../src/queue/queues.ts';
import { workQueues } from '../../src/worker/handlers.ts';
import { runSweep } from '../../src/sync/sweep.ts';
import { sandboxAdmin } from '../support/sandbox.ts';
import { axe, chromiumMissing, openBrowser } from '../support/browser.ts';
import { consoleServer } from './harness.ts';

const TOKEN = 'journey-operator-token-0123';
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'console');
/** Presses Tab until `target` has the focus (a keyboard-only user's way there); fails after `max` presses. */
async function tabTo(page: Page, target: ReturnType<Page['locator']>, max = 40): Promise<void> {
  for (let i = 0; i < max; i++) {
    if (await target.evaluate((el) => el === el.ownerDocument.activeElement)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`Tab never reached ${target}`);
}

if (chromiumMissing) {
  t.test('operator journeys in chromium', { skip: chromiumMissing }, async () => {});
} else {
  t.test('operator journeys in chromium', async (t) => {
    const a = await startSandbox({ variants: 20, locations: 2, timeScale: 100 });
    const b = await startSandbox({ variants: 5, locations: 1, timeScale: 100, seed: 7 });
    t.teardown(() => Promise.all([a.close(), b.close()]));
    const dataDir = await mkdtemp(join(tmpdir(), 'cs-journeys-'));
    const server = await consoleServer(t, {
      token: TOKEN,
      config: {
        DATA_DIR: dataDir,
        TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 5).toString('base64'),
        API_MAX_ATTEMPTS: 3,
        COMMERCE_CLIENT_ID: a.clientId,
        COMMERCE_CLIENT_SECRET: a.clientSecret,
        // The second account is connected from the console: its sandbox is a configured service host.
        COMMERCE_SERVICE_HOSTS: new URL(b.url).host,
      },
    });
    const { base, db, boss, rt } = server;
    const deps = rt.workerDeps();
    const shop = await addTokenConnection(deps, { baseUrl: a.url, token: a.token, name: 'shop' });
    await createQueues(boss, rt.config);
    rt.onStop.push(await workQueues(deps, [pushHandler], { pollingIntervalSeconds: 0.5 }));
    const sweep = async () => runSweep(deps, await clientFor(deps, shop), { full: true, wait: true });
    const settle = async (id: number) => {
      for (let i = 0; i < 300; i++) {
        const op = (await getOperation(db, id))!;
        if (op.state === 'confirmed' || op.state === 'failed') return op;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`operation ${id} did not finish`);
    };
    await sweep();
    const snapshot = async (resource: string) => (await sandboxAdmin(a)('GET', `snapshot?resource=${resource}`))[resource] as any[];
    const plain = (await snapshot('variants')).filter((v) => v.sku && v.status !== 'archived' && !v.composite && v.manage_stock !== false);
    const [gone, sold] = plain;
    const locations = await snapshot('locations');
    // The merchant counts one SKU at zero everywhere; the next sweep brings it to the mirror.
    const count = await enqueueOperation(
      { db, boss },
      'stock-count',
      { counts: locations.map((l) => ({ sku: gone.sku, location_id: l.id, quantity: '0' })) },
      'shop',
    );
    t.equal((await settle(count.id)).state, 'confirmed');
    await sweep();

    await mkdir(ARTIFACTS, { recursive: true });
    const { page, dialogs } = await openBrowser(t);
    await page.setViewportSize({ width: 1400, height: 1000 });
    const look = async (t: { same(found: unknown, wanted: unknown, message: string): unknown }, name: string) => {
      t.same(await axe(page), [], `${name}: no serious or critical accessibility violation`);
      await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: false });
    };

    await page.goto(`${base}/`);
    await page.getByLabel('Token').fill(TOKEN);
    await page.getByLabel('Token').press('Enter');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();

    await t.test('the overview charts have time axes and a range to choose', async (t) => {
      t.ok((await page.locator('#chart-shop-deliveries svg text.axis').count()) >= 7, 'time and value labels');
      await page.getByRole('link', { name: 'last 24 hours' }).click();
      await page.waitForURL(/range=24h/);
      t.equal(await page.locator('nav.ranges [aria-current]').textContent(), 'last 24 hours');
      t.equal(await page.locator('.charts figure').count(), 6, 'deliveries, lag, budget, queues, drift, log entries');
      await look(t, 'overview');
    });

    await t.test('find the SKUs out of stock, keyboard only, and see why one shows its quantity', async (t) => {
      await page.goto(`${base}/variants`);
      const show = page.locator('select[name="filter"]');
      await tabTo(page, show);
      await page.keyboard.type('out'); // a closed select picks the option its typed text starts
      t.equal(await show.inputValue(), 'out');
      await tabTo(page, page.getByRole('button', { name: 'Show', exact: true }));
      await page.keyboard.press('Enter');
      await page.waitForURL(/filter=out/);
      const rows = page.locator('#variants tbody tr');
      // The sandbox's own data has SKUs at zero too; every row listed is at zero, the counted one among them.
      const quantities = await rows.locator('.quantity').allTextContents();
      t.ok(quantities.length >= 1 && quantities.every((q) => /^(0|-\d)/.test(q)), `all out of stock: ${quantities.join(', ')}`);
      const goneRow = page.locator(`#variants tbody tr[data-sku="${gone.sku}"]`);
      t.match(await goneRow.locator('.quantity').textContent(), /^0/, 'the SKU counted at zero is listed');
      await look(t, 'variants');
      const link = goneRow.getByRole('link', { name: gone.sku });
      await link.focus();
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/variants\/shop\/\d+$/);
      t.match(await page.locator('#channel-quantity').textContent(), /^0/);
      t.match(await page.locator('#channel-history').textContent(), /full sweep/, 'the change and its cause');
      await look(t, 'variant');

      // The same SKU is the drift the latest (full) sweep corrected.
      await page.goto(`${base}/variants?filter=drift`);
      t.ok(await page.locator(`#variants tbody tr[data-sku="${gone.sku}"]`).count(), 'corrected by the latest sweep');
    });

    let customer: Record<string, unknown> = {};
    await t.test('find a failed operation and retry it', async (t) => {
      // A shipment named by a channel order not imported yet fails at once; importing it makes the retry work.
      const ship = await enqueueOperation(
        { db, boss },
        'ship',
        { channel: 'webshop', channel_order_id: 'W-1', tracking: { company: 'DHL', number: 'JD1' } },
        'shop',
      );
      t.equal((await settle(ship.id)).state, 'failed');
      customer = { company: { name: 'Journey Ltd' }, shipping_address: { address1: '1 Main St', city: 'Springfield', country_code: 'US' } };
      const imp = await enqueueOperation(
        { db, boss },
        'import-order',
        {
          channel: 'webshop',
          channel_order_id: 'W-1',
          customer,
          currency: 'usd',
          issued_at: '2026-11-20',
          lines: [{ sku: sold.sku, quantity: '1', price: '9.50' }],
        },
        'shop',
      );
      t.equal((await settle(imp.id)).state, 'confirmed', (await getOperation(db, imp.id))!.reason ?? '');
      await page.goto(`${base}/operations`);
      await page.getByLabel('State').selectOption('failed');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/state=failed/);
      const row = page.locator(`#operations tr[data-id="${ship.id}"]`);
      t.match(await row.textContent(), /not been imported/);
      await look(t, 'operations');
      await row.getByRole('button', { name: 'Retry' }).click();
      await page.getByText(`Operation ${ship.id} is queued again`).waitFor();
      t.equal((await settle(ship.id)).state, 'confirmed');
      await page.reload();
      t.equal(await page.locator('#operation-facts .state').textContent(), 'confirmed');
      const sent = await page.locator('#operation-requests tbody tr').allTextContents();
      t.ok(sent.length >= 1, 'the requests of the attempt that reached the service');
      t.match(sent.join('\n'), /confirmed\s*POST\s*\/orders\/\d+\/\S+\s*20\d\s*\S+/, 'method, path, status and request id');
      await look(t, 'operation');
    });

    await t.test('find the orders imported in the last hour and ship one', async (t) => {
      const imp = await enqueueOperation(
        { db, boss },
        'import-order',
        {
          channel: 'webshop',
          channel_order_id: 'W-2',
          customer,
          currency: 'usd',
          issued_at: '2026-11-21',
          lines: [{ sku: sold.sku, quantity: '2', price: '4.00' }],
        },
        'shop',
      );
      t.equal((await settle(imp.id)).state, 'confirmed', (await getOperation(db, imp.id))!.reason ?? '');
      await sweep(); // the mirror reads the new orders
      await page.goto(`${base}/orders`);
      await page.getByLabel('Imported').selectOption('1h');
      await page.getByRole('button', { name: 'Show' }).click();
      await page.waitForURL(/imported=1h/);
      const rows = page.locator('#orders tbody tr');
      t.equal(await rows.count(), 2, 'the two imported orders');
      t.match(await page.locator('#orders').textContent(), /webshop W-2/);
      await look(t, 'orders');
      await rows.filter({ hasText: 'W-2' }).getByRole('link').first().click();
      await page.getByRole('heading', { name: /^Order / }).waitFor();
      await look(t, 'order');
      await page.getByLabel('Tracking company').fill('UPS');
      await page.getByLabel('Tracking number').fill('1Z999');
      await page.getByRole('button', { name: 'Ship everything not yet shipped' }).click();
      await page.waitForURL(/\/operations\/\d+\?queued=/);
      const id = Number(/operations\/(\d+)/.exec(page.url())![1]);
      t.equal((await settle(id)).state, 'confirmed', (await getOperation(db, id))!.reason ?? '');
      await page.reload();
      t.equal(await page.locator('#operation-facts .state').textContent(), 'confirmed');
    });

    await t.test('connect a second account through OAuth, see its webhooks, disable and reconnect it', async (t) => {
      await page.goto(`${base}/connections`);
      await look(t, 'connections');
      await page.locator('#connect-oauth').getByLabel('Service address').fill(b.url);
      await page.locator('#connect-oauth').getByLabel('Name (optional)').fill('second');
      await page.getByRole('button', { name: 'Connect with OAuth' }).click();
      await page.getByRole('button', { name: 'Authorize' }).click(); // the service's own page
      await page.waitForURL(/\/connections\/second\?connected=second/);
      t.match(await page.locator('#connection-facts').textContent(), /active/);
      t.ok((await page.locator('#webhooks tbody tr').count()) > 0, 'webhooks registered');
      t.match(await page.locator('#webhooks').textContent(), new RegExp(`${base}/webhooks/second`));
      const html = await page.content();
      t.notOk(html.includes(b.clientSecret) || html.includes(TOKEN), 'no secret rendered');
      await look(t, 'connection');
      await page.getByRole('button', { name: 'Disable second' }).click();
      await page.getByText('Disabled second').waitFor();
      t.match(await page.locator('#connection-facts .state').textContent(), /disabled/);
      await page.getByRole('button', { name: 'Reconnect (authorize again)' }).click();
      await page.getByRole('button', { name: 'Authorize' }).click();
      await page.waitForURL(/connected=second/);
      t.match(await page.locator('#connection-facts .state').textContent(), /^active/);
    });

    t.same(dialogs, [], 'no markup from data ran as script');
  });
}
