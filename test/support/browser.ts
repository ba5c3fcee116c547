// Debian's chromium driven by playwright-core, with a fresh profile per test. Tests skip with a clear
// message when /usr/bin/chromium is missing (.ci/run installs it).
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import type { Teardown } from './teardown.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const chromiumMissing = existsSync(CHROMIUM)
  ? null
  : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the browser tests`;

export async function openBrowser(t: Teardown): Promise<{ context: BrowserContext; page: Page; dialogs: string[] }> {
  const profile = await mkdtemp(join(tmpdir(), 'cs-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
      '--disable-dev-shm-usage',
    ],
    timeout: 60_000,
  });
  t.teardown(async () => {
    await context.close().catch(() => {});
    await rm(profile, { recursive: true, force: true });
  });
  context.setDefaultTimeout(15_000);
  const page = context.pages()[0] ?? (await context.newPage());
  // Any alert() would mean markup from data ran as script.
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  return { context, page, dialogs };
}

let axeSource: Promise<string> | undefined;

/** axe-core in the page: the serious and critical violations, as "rule: target" lines. */
export async function axe(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the console's CSP (script-src 'self') rightly refuses inline scripts.
  if (!(await page.evaluate(() => 'axe' in globalThis)))
    await page.evaluate(await (axeSource ??= readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')));
  const result = await page.evaluate(async () =>
    (
      globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }
    ).axe.run(),
  );
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map(
      (v) =>
        `${v.id}: ${v.nodes
          .slice(0, 3)
          .map((n) => n.target.join(' '))
          .join(', ')}`,
    );
}
