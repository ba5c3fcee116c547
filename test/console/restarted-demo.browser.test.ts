// A newcomer's first hour, in Chromium: `npm start`'s demo (real processes: `commerce-sync start`, its sandbox
// and channel endpoint), stopped and started again on the same data, then every page of the console's navigation
// and a record of each kind walked: no error in the browser's console, no request answered 404 (a page, an icon, a
// stylesheet), and the overview's headline lag is stock's, with documents' lag apart and labelled as such. Each page
// is screenshotted under test-artifacts/console/restarted-demo/.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { chromiumMissing, openBrowser } from '../support/browser.ts';
import { testDatabase } from '../support/db.ts';
import { freePort } from '../support/http.ts';
import { spawnCli, until } from '../support/processes.ts';
import { sql } from 'kysely';

const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'console', 'restarted-demo');

if (chromiumMissing) {
  t.test('a restarted demo in chromium', { skip: chromiumMissing }, async () => {});
} else {
  t.test('a restarted demo in chromium: no console error, no 404, stock lag as the headline', async (t) => {
    const tdb = await testDatabase(t);
    const dataDir = await mkdtemp(join(tmpdir(), 'cs-restarted-demo-'));
    t.teardown(() => rm(dataDir, { recursive: true, force: true }));
    const env = {
      DATABASE_URL: tdb.url,
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: await freePort(),
      SANDBOX_VARIANTS: 20,
      SANDBOX_ACTIVITY: 5,
    };
    const first = await spawnCli(t, 'start (first)', ['start'], env, { readyTimeoutMs: 60_000 });
    await until(
      'the first sweep and some activity',
      async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM orders`.execute(tdb.db)).rows[0]!.n > 0,
      60_000,
      250,
    );
    t.equal(await first.stop(), 0, 'the first run stops');
    const app = await spawnCli(t, 'start (again)', ['start'], env, { readyTimeoutMs: 60_000 });
    // Some of the resumed account's activity through the restarted demo.
    await until(
      'deliveries after the restart',
      async () =>
        (
          await sql<{
            n: number;
          }>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE received_at > now() - interval '20 seconds'`.execute(tdb.db)
        ).rows[0]!.n > 5,
      60_000,
      250,
    );

    const { page } = await openBrowser(t);
    await page.setViewportSize({ width: 1400, height: 1000 });
    await mkdir(ARTIFACTS, { recursive: true });
    const errors: string[] = [];
    const missing: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`${page.url()}: ${e.message}`));
    page.on('response', (r) => {
      if (r.status() === 404) missing.push(r.url());
    });

    await page.goto(`${app.url}/`);
    const nav = await page.locator('nav[aria-label="Console"] a').evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''));
    t.ok(nav.includes('/demo-channel'), "the navigation has the demo's channel");
    const visit = async (path: string, name: string) => {
      const res = await page.goto(`${app.url}${path}`);
      t.equal(res?.status(), 200, `${path} answers 200`);
      await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: false });
    };
    for (const path of nav) await visit(path, path === '/' ? 'overview' : path.slice(1));
    // A record of each kind, as a newcomer clicks through: a variant, an order.
    await visit('/variants', 'variants');
    const variant = await page.locator('main a[href^="/variants/"]').first().getAttribute('href');
    t.ok(variant, 'the variants page links a variant');
    await visit(variant!, 'variant');
    await visit('/orders', 'orders');
    const order = await page.locator('main a[href^="/orders/"]').first().getAttribute('href');
    t.ok(order, 'the orders page links an order');
    await visit(order!, 'order');

    t.same(errors, [], 'no error in the browser console');
    t.same(missing, [], 'no request answered 404');

    // The headline is what a channel feels: stock's lag; documents wait in their windows apart.
    await page.goto(`${app.url}/`);
    const main = (await page.locator('main').textContent()) ?? '';
    t.match(main, /Stock lag/, 'the headline figure is labelled as stock lag');
    t.match(main, /Documents lag/, "documents' lag is shown apart");
    const headline = main.indexOf('Stock lag');
    t.ok(headline >= 0 && headline < main.indexOf('Documents lag'), 'stock lag comes first');
    t.equal(await app.stop(), 0, 'the demo stops');
  });
}
