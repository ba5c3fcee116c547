// `commerce-sync logs` and `commerce-sync status` as a person runs them, against a real database.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { logSync } from '../../src/db/synclog.ts';
import { parseSince } from '../../src/console/cli.ts';
import { testDatabase } from '../support/db.ts';
import { addBudget, addConnection, addDelivery } from './harness.ts';

const env = (url: string) => ({ ...process.env, LOG_LEVEL: 'silent', DATABASE_URL: url });
const cli = (url: string, args: string[]) => spawnSync(process.execPath, ['src/cli.ts', ...args], { encoding: 'utf8', env: env(url) });

t.test('logs: filters by connection and sku, prints lines or JSON', async (t) => {
  const { url, db } = await testDatabase(t);
  const shop = await addConnection(db, 'shop');
  const other = await addConnection(db, 'other');
  await logSync(db, {
    connectionId: shop,
    resource: 'variant',
    recordId: 3,
    sku: 'AB-1',
    action: 'mirror.update',
    before: { on_hand: '1' },
    after: { on_hand: '2.5' },
    requestId: 'req-9',
  });
  await logSync(db, { connectionId: shop, resource: 'order', recordId: 4, action: 'fetch', outcome: 'error', error: 'HTTP 503' });
  await logSync(db, { connectionId: other, resource: 'variant', sku: 'AB-1', action: 'mirror.update' });

  const all = cli(url, ['logs', '--connection', 'shop']);
  t.equal(all.status, 0, all.stderr);
  const lines = all.stdout.trim().split('\n');
  t.equal(lines.length, 2);
  t.match(lines[0], /shop {2}ok +mirror\.update {2}variant#3 {2}sku=AB-1 \{"on_hand":"1"\} -> \{"on_hand":"2\.5"\}.*request=req-9/);
  t.match(lines[1], /error +fetch {2}order#4 {2}error: HTTP 503/);

  const json = cli(url, ['logs', '--sku', 'AB-1', '--json']);
  const entries = json.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.same(
    entries.map((e) => e.connection),
    ['shop', 'other'],
  );

  const bad = cli(url, ['logs', '--connection', 'nope']);
  t.equal(bad.status, 2);
  t.match(bad.stderr, /no connection named "nope"/);
});

t.test('logs --follow prints new entries as they are written, stops on Ctrl-C', async (t) => {
  const { url, db } = await testDatabase(t);
  const shop = await addConnection(db, 'shop');
  await logSync(db, { connectionId: shop, sku: 'OLD', action: 'before-follow' });
  const child = spawn(process.execPath, ['src/cli.ts', 'logs', '--follow', '--sku', 'NEW-1'], {
    env: env(url),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  const waitFor = (re: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (re.test(out)) {
          child.stdout.off('data', onData);
          resolve();
        }
      };
      const onData = (b: Buffer) => {
        out += b;
        check();
      };
      child.stdout.on('data', onData);
      child.once('exit', () => reject(new Error(`exited before printing ${re}: ${out}`)));
      check();
    });
  // Keep writing until the follower (whose start we cannot observe otherwise) prints one.
  const seen = waitFor(/followed-\d+/);
  let n = 0;
  let done = false;
  void seen.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  while (!done && n < 200) {
    await logSync(db, { connectionId: shop, sku: 'NEW-1', action: `followed-${++n}` });
    await logSync(db, { connectionId: shop, sku: 'OTHER', action: 'filtered-out' });
    await new Promise((r) => setTimeout(r, 100));
  }
  await seen;
  child.kill('SIGINT');
  const [code] = await once(child, 'exit');
  t.equal(code, 0);
  t.notMatch(out, /filtered-out|before-follow/);
  const printed = out
    .trim()
    .split('\n')
    .map((l) => /followed-(\d+)/.exec(l)![1]);
  t.same(printed, [...new Set(printed)], 'no entry printed twice');
});

t.test('status: per connection health, lag, budget, queues; exit 1 when something needs a person', async (t) => {
  const { url, db } = await testDatabase(t);
  const shop = await addConnection(db, 'shop');
  await addBudget(db, shop, { remaining: 250, resetAt: new Date(Date.now() + 120_000) });
  const ok = cli(url, ['status']);
  t.equal(ok.status, 0, ok.stderr);
  t.match(ok.stdout, /shop \(shop account\): OK, connection active/);
  t.match(ok.stdout, /budget +250 of 300 requests left/);
  t.match(ok.stdout, /Stock lag: 0 s/);
  t.match(ok.stdout, /deliveries-dead +0 \/ 0 \/ 0/);

  await addDelivery(db, shop, { state: 'queued' });
  await logSync(db, { connectionId: shop, action: 'fetch', outcome: 'error', error: 'HTTP 500' });
  const bad = cli(url, ['status', '--json']);
  t.equal(bad.status, 1);
  t.match(JSON.parse(bad.stdout), { connections: [{ name: 'shop', health: 'degraded', queuedDeliveries: 1, errorsLastHour: 1 }] });
});

t.test('parseSince takes durations and timestamps', async (t) => {
  const now = Date.parse('2026-01-01T12:00:00Z');
  t.equal(parseSince('30m', now).toISOString(), '2026-01-01T11:30:00.000Z');
  t.equal(parseSince('2d', now).toISOString(), '2025-12-30T12:00:00.000Z');
  t.equal(parseSince('2026-01-01T00:00:00Z').toISOString(), '2026-01-01T00:00:00.000Z');
  t.throws(() => parseSince('yesterday'), /--since yesterday/);
});
