// The overview in a real browser (Debian's chromium through playwright-core) shows open alerts at the top, with
// what to do, and once resolved says so.
import t from 'tap';
import { evaluateAlerts } from '../../src/alerts/evaluate.ts';
import { rejectionCounter } from '../../src/receiver/rejections.ts';
import { testConfig } from '../support/config.ts';
import { captureLogger } from '../support/log.ts';
import { chromiumMissing, openBrowser } from '../support/browser.ts';
import { addConnection, addDelivery, consoleServer } from '../console/harness.ts';

const TOKEN = 'alerts-browser-operator-token';

if (chromiumMissing) {
  t.test('alerts on the overview in chromium', { skip: chromiumMissing }, async () => {});
} else {
  t.test('alerts on the overview in chromium', async (t) => {
    const { base, db } = await consoleServer(t, { token: TOKEN });
    const { log } = captureLogger('error');
    const config = testConfig({ ALERT_QUIET_SECONDS: 0 });
    const shop = await addConnection(db, 'shop');
    const counter = rejectionCounter(db, log);
    for (let i = 0; i < 5; i++) counter.add('shop', 'signature');
    await counter.flush();
    await evaluateAlerts({ db, config, log });

    const { page } = await openBrowser(t);
    await page.goto(`${base}/`);
    await page.getByLabel('Token').fill(TOKEN);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    const alerts = page.locator('section.alerts');
    await alerts.getByRole('heading', { name: 'Alerts' }).waitFor();
    const row = alerts.locator('tr[data-alert="signature:shop"]');
    t.match(await row.textContent(), /critical.*5 deliveries to shop refused for their signature.*check COMMERCE_CLIENT_SECRET/);
    t.ok(await row.isVisible(), 'the open alert is visible at the top of the overview');
    t.match(await row.textContent(), /not sent yet/, 'and whether its notice went out');

    // The right secret: a delivery is stored after the refusals, and the alert resolves.
    await addDelivery(db, shop);
    await evaluateAlerts({ db, config, log });
    await page.reload();
    await alerts.getByText('No open alerts.').waitFor();
    t.match(await alerts.locator('details summary').textContent(), /Resolved in the last 24 hours \(1\)/);
  });
}
