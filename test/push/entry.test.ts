// The two ways in: the JSON API (routes.ts) and the CLI (cli.ts), with the worker running in this process.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp, listen } from '../../src/server.ts';
import { mountRoutes } from '../../src/push/routes.ts';
import { runNode } from '../support/processes.ts';
import { harness, orderInput, plainVariants } from './harness.ts';

async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const run = await runNode(['src/cli.ts', ...args], { ...process.env, LOG_LEVEL: 'silent', ...env });
  return { status: run.code, stdout: run.out, stderr: run.err };
}

t.test('API and CLI', async (t) => {
  const h = await harness(t);
  const [a] = plainVariants(await h.snapshot('variants'));
  const companies = await h.snapshot('companies');
  const { app, router } = createApp(h.tdb.pool, h.rt.log);
  mountRoutes(h.runtime, router);
  const server = await listen(app, 0, '127.0.0.1');
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${server.port}/api/operations`;
  const post = (path: string, body?: unknown) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  await t.test('POST an operation: 202, then it is confirmed; GET one and the list', async (t) => {
    const res = await post('/import-order', {
      connection: 'shop',
      ...orderInput(companies[0].id, 'api', 'A-1', [{ sku: a.sku, quantity: '1' }]),
    });
    t.equal(res.status, 202);
    const { operation } = (await res.json()) as any;
    t.match(operation, { kind: 'import-order', state: 'queued', order_key: 'channel:api:A-1' });
    await h.settle(operation.id);
    const one = (await (await fetch(`${base}/${operation.id}`)).json()) as any;
    t.equal(one.operation.state, 'confirmed');
    t.type(one.operation.result.order_id, 'number');
    t.match(
      one.operation.plan,
      { currency_iso: 'SGD', order_line_items: [{ variant_id: a.id, quantity: '1' }] },
      'one operation shows its plan',
    );
    const list = (await (await fetch(`${base}?kind=import-order&state=confirmed`)).json()) as any;
    t.same(
      list.operations.map((o: any) => o.id),
      [operation.id],
    );
    t.notOk('plan' in list.operations[0], 'the list leaves plans out');
    t.equal((await fetch(`${base}/999999`)).status, 404);
  });

  await t.test('bad input: 400 with every problem; unknown operation: 404', async (t) => {
    const res = await post('/ship', { lines: [{ sku: 'X', quantity: 'two' }] });
    t.equal(res.status, 400);
    const body = (await res.json()) as any;
    t.match(body.error, /invalid ship input/);
    t.match(body.problems.join('\n'), /quantity.*decimal/);
    t.match(body.problems.join('\n'), /order_id, or channel and channel_order_id/);
    t.equal((await post('/teleport', {})).status, 404);
    t.equal((await post('/pay', { order_id: 1, connection: 'elsewhere' })).status, 400);
    t.equal((await h.tdb.db.selectFrom('push_operations').select('id').where('kind', '=', 'ship').execute()).length, 0, 'nothing stored');
  });

  await t.test('retry a failed operation with the same key', async (t) => {
    const failed = await h.run('invoice', { order_id: 88888888 });
    t.equal(failed.state, 'failed');
    const res = await post(`/${failed.id}/retry`);
    t.equal(res.status, 202);
    const { operation } = (await res.json()) as any;
    t.equal(operation.state, 'queued');
    t.equal(operation.idempotency_key, failed.idempotency_key);
    const again = await h.settle(failed.id);
    t.equal(again.state, 'failed');
    t.equal(again.attempts, 2);
    const confirmed = (await h.tdb.db.selectFrom('push_operations').select('id').where('state', '=', 'confirmed').executeTakeFirstOrThrow())
      .id;
    t.equal((await post(`/${confirmed}/retry`)).status, 409, 'a confirmed operation is not retried');
  });

  await t.test('CLI: push with flags waits and prints the outcome; list; show; --no-wait', async (t) => {
    const env = { DATABASE_URL: h.tdb.url };
    const dir = await mkdtemp(join(tmpdir(), 'push-cli-'));
    const file = join(dir, 'order.json');
    await writeFile(file, JSON.stringify(orderInput(companies[0].id, 'cli', 'C-1', [{ sku: a.sku, quantity: '2' }])));
    const imported = await cli(['push', 'import-order', '--file', file], env);
    t.equal(imported.status, 0, imported.stderr);
    const op = JSON.parse(imported.stdout);
    t.equal(op.state, 'confirmed');
    const shipped = await cli(
      ['push', 'ship', '--channel', 'cli', '--channel-order-id', 'C-1', '--line', `${a.sku}=1`, '--tracking-number', 'CLI-1'],
      env,
    );
    t.equal(shipped.status, 0, shipped.stderr);
    t.match(JSON.parse(shipped.stdout), { kind: 'ship', state: 'confirmed', result: { status: 'fulfilled', tracking_number: 'CLI-1' } });
    const failed = await cli(['push', 'pay', '--order-id', '77777777'], env);
    t.equal(failed.status, 1, 'a failed operation exits 1');
    t.match(JSON.parse(failed.stdout), { state: 'failed', status_code: 404 });
    const queued = await cli(['push', 'invoice', '--channel', 'cli', '--channel-order-id', 'C-1', '--no-wait'], env);
    t.equal(queued.status, 0, queued.stderr);
    t.equal(JSON.parse(queued.stdout).state, 'queued');
    const listed = await cli(['push', 'list', '--kind', 'ship'], env);
    t.equal(listed.status, 0, listed.stderr);
    t.match(listed.stdout, /ship\s+confirmed/);
    const shown = await cli(['push', 'show', String(op.id)], env);
    t.equal(JSON.parse(shown.stdout).id, op.id);
    // The stock counts README, docs/push.md and `push --help` show are the demo's SKUs: they are confirmed as given.
    const examples = ['../../README.md', '../../docs/push.md', '../../src/push/cli.ts'].flatMap((f) =>
      [...readFileSync(new URL(f, import.meta.url), 'utf8').matchAll(/push stock-count((?: --count [\w@=.-]+)+)/g)].flatMap((m) =>
        [...m[1]!.matchAll(/--count ([\w@=.-]+)/g)].map((c) => c[1]!),
      ),
    );
    t.ok(examples.length >= 6, 'found the examples');
    const counted = await cli(['push', 'stock-count', ...[...new Set(examples)].flatMap((c) => ['--count', c])], env);
    t.equal(counted.status, 0, counted.stderr);
    const count = JSON.parse(counted.stdout);
    t.equal(count.state, 'confirmed', count.reason ?? 'the examples are counted');
    const bad = await cli(['push', 'stock-count', '--count', 'nonsense'], env);
    t.equal(bad.status, 2);
    t.match(bad.stderr, /expected SKU@LOCATION_ID=QUANTITY/);
    await h.settle(JSON.parse(queued.stdout).id);
  });
});
