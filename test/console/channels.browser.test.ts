// Channels in the console, in Chromium: three channels with different locations and buffers and an
// override show three different quantities of the same variant, each explained on its record page; a hold made
// through the API lowers all three and the page names it; the variants index shows the channel chosen; the
// Channels page shows rules, overrides, holds and a destination's state, and pauses and resumes it. Each page is
// checked with axe-core and screenshotted (SCREENSHOTS=dir, else test-artifacts/console).
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { recordOutcome, recordPost, saveDestination } from '../../src/db/channel-destinations.ts';
import { axe, chromiumMissing, openBrowser } from '../support/browser.ts';
import { consoleServer, threeChannels } from './harness.ts';

const TOKEN = 'channels-browser-operator-token';
const SHOTS = process.env.SCREENSHOTS || join(process.cwd(), 'test-artifacts', 'console');

if (chromiumMissing) {
  t.test('channels in the console, in chromium', { skip: chromiumMissing }, async () => {});
} else {
  t.test('channels in the console, in chromium', async (t) => {
    const { base, db, boss } = await consoleServer(t, { token: TOKEN });
    const { call, channel } = await threeChannels(db, base, TOKEN);
    // The marketplace's destination answered 503 twice: failing, its two changes waiting (three after the hold).
    await saveDestination(db, channel.marketplace, { url: 'https://market.example/hooks/s3cr3t', secrets: 'x', startAfter: 0 });
    for (const status of [503, 503]) {
      await recordOutcome(db, channel.marketplace, 'market.example', {
        ok: false,
        status,
        error: `answered ${status}`,
      });
      await recordPost(db, {
        channel_id: channel.marketplace,
        webhook_id: `msg_ch${channel.marketplace}_1_2`,
        first_change: 1,
        last_change: 2,
        changes: 2,
        ok: false,
        status,
        error: `answered ${status}`,
        attempts: 1,
        ms: 41,
      });
    }

    await mkdir(SHOTS, { recursive: true });
    const { page, dialogs } = await openBrowser(t);
    await page.setViewportSize({ width: 1400, height: 1000 });
    const look = async (t: { same(found: unknown, wanted: unknown, message: string): unknown }, name: string) => {
      t.same(await axe(page), [], `${name}: no serious or critical accessibility violation`);
      await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
    };
    await page.goto(`${base}/variants/shop/1`);
    await page.getByLabel('Token').fill(TOKEN);
    await page.getByLabel('Token').press('Enter');
    await page.getByRole('heading', { name: 'SKU-1' }).waitFor();

    /** The cells of one row of the per-channel table, channel name -> text. */
    const step = async (row: string) => {
      const cells = page.locator(`#channel-quantities tr.${row} td`);
      const out: Record<string, string> = {};
      for (let i = 0; i < (await cells.count()); i++) {
        const cell = cells.nth(i);
        out[(await cell.getAttribute('data-channel'))!] = ((await cell.textContent()) ?? '').replace(/\s+/g, ' ').trim();
      }
      return out;
    };

    await t.test('three channels, three quantities, each explained', async (t) => {
      t.same(await page.locator('#channel-quantities thead th[data-channel]').allTextContents(), ['default', 'marketplace', 'wholesale']);
      t.same(await step('quantity'), { default: '15', marketplace: '8', wholesale: '11' });
      t.same(await step('locations'), { default: 'all', marketplace: 'Warehouse', wholesale: 'all' });
      t.same(await step('counted'), { default: '15', marketplace: '10', wholesale: '15' });
      t.same(await step('held'), { default: '0', marketplace: '0', wholesale: '0' });
      t.same(await step('buffer'), { default: '0 none', marketplace: '− 2 2 units', wholesale: '− 4 own: 4 units' });
      t.match(await step('override'), { default: 'none', marketplace: 'none', wholesale: 'own buffer' });
      t.match(await step('cap'), { default: 'none set', wholesale: 'does not cap' });
      t.match(await page.locator('#channel-quantity').textContent(), /^15 in default/);
      await look(t, 'channels-record');
    });

    await t.test('a hold made through the API lowers all three, and the record page names it', async (t) => {
      const hold = await call('POST', '/api/channels/marketplace/holds?connection=shop', {
        channel_order_id: 'M-1001',
        lines: [{ sku: 'SKU-1', quantity: '2' }],
      });
      t.equal(hold.changes, 3);
      await page.reload();
      t.same(await step('quantity'), { default: '13', marketplace: '6', wholesale: '9' });
      const held = await step('held');
      for (const name of ['default', 'marketplace', 'wholesale']) t.match(held[name], /^− 2 marketplace order M-1001: 2 until /, name);
      t.match(
        await page.locator('#channel-quantities td.held[data-channel="wholesale"] a').getAttribute('href'),
        /^\/channels\?connection=shop#hold-\d+$/,
      );
      // The history: every channel's change, each naming its channel and the hold.
      const rows = page.locator('#channel-history tbody tr');
      t.same(await rows.locator('td.channel').allTextContents(), [
        'wholesale',
        'marketplace',
        'default',
        'wholesale',
        'wholesale',
        'marketplace',
        'default',
      ]);
      t.match(await rows.first().textContent(), /Went from 11 to 9 \(hold: marketplace order M-1001 created\)/);
      t.match(await rows.first().locator('table.diff').textContent(), /held\s*0\s*2/);
      await page.getByRole('navigation', { name: 'History of channel' }).getByRole('link', { name: 'marketplace' }).click();
      await page.waitForURL(/history=marketplace/);
      t.same(await page.locator('#channel-history tbody td.channel').allTextContents(), ['marketplace', 'marketplace']);
      t.match(await page.locator('#channel-history tbody tr').first().textContent(), /8\s*6\s*hold/);
      await look(t, 'channels-record-held');
    });

    await t.test('the variants index shows the channel chosen', async (t) => {
      await page.goto(`${base}/variants`);
      t.equal(await page.locator('#index-channel').textContent(), 'default');
      t.equal(await page.locator('#variants tr[data-sku="SKU-1"] .quantity').textContent(), '13');
      await page.locator('select[name="channel"]').selectOption('marketplace');
      await page.getByRole('button', { name: 'Show', exact: true }).click();
      await page.waitForURL(/channel=marketplace/);
      t.equal(await page.locator('#variants tbody tr').count(), 2, 'one row per variant');
      t.equal(await page.locator('#variants tr[data-sku="SKU-1"] .quantity').textContent(), '6');
      t.match(await page.locator('#variants tr[data-sku="SKU-1"]').textContent(), /hold, was 8/);
      await look(t, 'channels-index');
    });

    await t.test('the Channels page: rules, overrides, holds, and a destination paused and resumed', async (t) => {
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Channels' }).click();
      await page.getByRole('heading', { name: 'Channels', level: 1 }).waitFor();
      const card = (name: string) => page.locator(`section.channel[data-channel="${name}"]`);
      t.equal(await card('marketplace').locator('dd.locations').textContent(), 'Warehouse');
      t.equal(await card('marketplace').locator('dd.buffer').textContent(), '2 units');
      t.equal(
        await card('wholesale').locator('dd.buffer').textContent(),
        '10% of what is available, rounded up to a whole unit, at least 1',
      );
      t.equal(await card('wholesale').locator('dd.cap').textContent(), 'does not cap');
      t.match(await card('wholesale').locator('table.overrides').textContent(), /SKU-1\s*own buffer: 4 units/);
      const hold = page.locator('table.holds tr[data-order="M-1001"]');
      t.match(await hold.textContent(), /marketplace\s*M-1001\s*SKU-1 × 2\s*api/);
      t.match(await hold.textContent(), /not imported yet/);

      const market = card('marketplace');
      t.match(await market.locator('.destination-state').textContent(), /Failing since .* \(2 POSTs in a row\), 3 changes waiting/);
      t.equal(await market.locator('.last-answer').textContent(), 'answered 503');
      t.notMatch(await market.textContent(), /s3cr3t/, 'the URL path is not shown');
      await market.locator('details.posts summary').click();
      t.equal(await market.locator('table.posts tbody tr.outcome-error').count(), 2);
      t.match(await market.locator('table.posts tbody tr').first().textContent(), /2 changes\s*#1–#2\s*failed: answered 503/);
      t.match(await card('default').locator('.destination-none').textContent(), /No destination/);
      await look(t, 'channels-page');

      await market.getByLabel('Reason').fill('marketplace maintenance until 14:00');
      await market.getByRole('button', { name: 'Pause the destination of marketplace' }).click();
      await page.getByText('Paused the destination of marketplace: nothing is sent until it is resumed, and nothing is lost.').waitFor();
      t.match(
        await card('marketplace').locator('.destination-state').textContent(),
        /Paused since .*: marketplace maintenance until 14:00, 3 changes waiting/,
      );
      const paused = await db
        .selectFrom('channel_destinations')
        .selectAll()
        .where('channel_id', '=', channel.marketplace)
        .executeTakeFirstOrThrow();
      t.equal(paused.paused_reason, 'marketplace maintenance until 14:00');
      await look(t, 'channels-page-paused');

      await card('marketplace').getByRole('button', { name: 'Resume the destination of marketplace' }).click();
      await page.getByText('Resumed the destination of marketplace: everything after its cursor is sent now, in order.').waitFor();
      const resumed = await db
        .selectFrom('channel_destinations')
        .selectAll()
        .where('channel_id', '=', channel.marketplace)
        .executeTakeFirstOrThrow();
      t.equal(resumed.paused_at, null);
      t.equal(resumed.cursor, 0, 'nothing skipped: the cursor stays');
      t.match(await card('marketplace').locator('.destination-state').textContent(), /Behind by 3 changes/, 'failures forgotten on resume');
      t.ok((await boss.findJobs('channel-delivery', { data: { channelId: channel.marketplace } })).length >= 1, 'a delivery is requested');
    });

    t.same(dialogs, [], 'no markup from data ran as script');
  });
}
