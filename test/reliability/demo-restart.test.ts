// A demo that survives a restart (`commerce-sync start`, real processes, the channel's endpoint verifying every POST
// with the `standardwebhooks` package): a count pushed, a channel order imported and shipped, the demo stopped and
// started again resumes the same sandbox account (DATA_DIR/demo-sandbox.json): the count is still there, no
// subscription was lost, and a second order gets an id of its own, so its timeline and the channel hear only its own
// events. And a connection whose service answers for another account than its mirror's (the sandbox's file gone: a
// new account of the same id) stops before it sends anything, with an alert, until `reset-mirror` starts it afresh.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import t from 'tap';
import { testDatabase } from '../support/db.ts';
import { channelEndpoint, type VerifiedPost } from '../support/channel-endpoint.ts';
import { freePort, listenLocal } from '../support/http.ts';
import { runNode, spawnCli, until, type CliProcess } from '../support/processes.ts';

const OPERATOR = 'operator-token-of-the-restart-test';
const KEY = Buffer.alloc(32, 0x3c).toString('base64');

t.test('a restarted demo resumes its account; a connection to another account stops until reset', async (t) => {
  const tdb = await testDatabase(t);
  const db = tdb.db;
  const dataDir = await mkdtemp(join(tmpdir(), 'cs-demo-restart-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const posts: VerifiedPost[] = [];
  const ep = channelEndpoint(secret, (p) => {
    posts.push(p);
  });
  const endpointUrl = await listenLocal(t, ep.server);
  const env = {
    DATABASE_URL: tdb.url,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    // The same port each run, as a demo's (3000): its webhooks' address stays the same.
    PORT: await freePort(),
    OPERATOR_TOKEN: OPERATOR,
    TOKEN_ENCRYPTION_KEY: KEY,
    SANDBOX_ACTIVITY: 0,
    SANDBOX_VARIANTS: 20,
    CHANNEL_WEBHOOK_URL: `${endpointUrl}/stock`,
    CHANNEL_WEBHOOK_SECRET: secret,
    OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
  };
  const start = (name: string) => spawnCli(t, name, ['start'], env, { readyTimeoutMs: 60_000 });
  const api = (app: CliProcess) => async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${app.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const count = async (q: ReturnType<typeof sql<{ n: number }>>) => (await q.execute(db)).rows[0]!.n;
  const confirmed = (id: number) =>
    until(
      `operation ${id} confirmed`,
      async () => {
        const op = await db.selectFrom('push_operations').select(['state', 'reason']).where('id', '=', id).executeTakeFirstOrThrow();
        if (op.state === 'failed') throw new Error(`operation ${id} failed: ${op.reason}`);
        return op.state === 'confirmed';
      },
      60_000,
      200,
    );
  /** Events the channel heard about one of its orders, in order. */
  const heard = (channelOrderId: string) =>
    posts
      .filter((p) => p.payload.type === 'channel.orders.changed')
      .flatMap((p) => p.payload.data.events as { type: string; channel_order_id: string; data: any }[])
      .filter((e) => e.channel_order_id === channelOrderId);
  const orderOf = async (channelOrderId: string) =>
    (await db.selectFrom('channel_orders').select('order_id').where('channel_order_id', '=', channelOrderId).executeTakeFirstOrThrow())
      .order_id;
  const importAndShip = async (call: ReturnType<typeof api>, channelOrderId: string, sku: string, companyId: number) => {
    const imported = await call('POST', '/api/operations/import-order?connection=demo', {
      channel: 'default',
      channel_order_id: channelOrderId,
      customer: { company_id: companyId },
      currency: 'SGD',
      issued_at: '2026-11-21',
      lines: [{ sku, quantity: '1' }],
    });
    t.equal(imported.status, 202, `${channelOrderId} queued`);
    await confirmed(imported.body.operation.id);
    const shipped = await call('POST', '/api/operations/ship?connection=demo', {
      channel: 'default',
      channel_order_id: channelOrderId,
      tracking: { company: 'DHL', number: `T-${channelOrderId}` },
    });
    t.equal(shipped.status, 202, `${channelOrderId} shipment queued`);
    await confirmed(shipped.body.operation.id);
    await until(
      `the channel hears ${channelOrderId} shipped`,
      async () => heard(channelOrderId).some((e) => e.type === 'order.shipped'),
      60_000,
      200,
    );
  };

  /** What the service has on hand of the counted SKU at its location. */
  const stock = async () => {
    const sandboxUrl = (await db.selectFrom('connections').select('base_url').where('name', '=', 'demo').executeTakeFirstOrThrow())
      .base_url;
    const token = (await readFile(join(dataDir, 'demo-sandbox-token'), 'utf8')).trim();
    const res = await fetch(`${sandboxUrl}/variants?sku=${encodeURIComponent(level.sku)}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const [variant] = ((await res.json()) as any).variants;
    return variant.stock_levels[level.location_id] as string | undefined;
  };

  // First run: the mirror loaded, a count pushed, W-1 imported and shipped.
  let app = await start('start (first)');
  let call = api(app);
  await until(
    'the first sweep loaded the variants',
    async () => (await count(sql<{ n: number }>`SELECT count(*)::int AS n FROM variants`)) >= 20,
    60_000,
    250,
  );
  const level = (
    await sql<{ sku: string; location_id: number }>`
    SELECT v.sku, s.location_id FROM variants v JOIN stock_levels s ON s.connection_id = v.connection_id AND s.variant_id = v.id
    WHERE v.sku IS NOT NULL AND v.status = 'active' AND v.raw->>'composite' IS DISTINCT FROM 'true' ORDER BY v.id LIMIT 1`.execute(db)
  ).rows[0]!;
  const company = sql<{ id: number }>`SELECT id FROM companies WHERE status IS DISTINCT FROM 'archived' ORDER BY id LIMIT 1`;
  await until('the first sweep loaded the customers', async () => (await company.execute(db)).rows.length > 0, 60_000, 250);
  const companyId = (await company.execute(db)).rows[0]!.id;
  const counted = await call('POST', '/api/operations/stock-count?connection=demo', {
    counts: [{ sku: level.sku, location_id: level.location_id, quantity: '77' }],
  });
  t.equal(counted.status, 202, 'a stock count queued');
  await confirmed(counted.body.operation.id);
  await importAndShip(call, 'W-1', level.sku, companyId);
  const before = await stock();
  t.ok(before !== undefined, `${level.sku} has ${before} on hand at location ${level.location_id}`);
  const subscriptions = await count(sql<{ n: number }>`SELECT jsonb_array_length(webhooks)::int AS n FROM connections WHERE name = 'demo'`);
  t.ok(subscriptions > 0, `the demo subscribed to ${subscriptions} events`);
  t.equal(await app.stop(), 0, 'the first run stops cleanly');

  // Second run: the same account, resumed.
  app = await start('start (again)');
  call = api(app);
  t.equal(await stock(), before, 'the count pushed before the restart is still at the service');
  await importAndShip(call, 'W-2', level.sku, companyId);
  const [w1, w2] = [await orderOf('W-1'), await orderOf('W-2')];
  t.not(w2, w1, 'the second order has an id of its own');
  const ownFulfilments = new Set((await db.selectFrom('fulfillments').select('id').where('order_id', '=', w2).execute()).map((f) => f.id));
  const w2Events = heard('W-2');
  t.same(
    w2Events.filter((e) => e.data?.fulfillment_id !== undefined && !ownFulfilments.has(e.data.fulfillment_id)),
    [],
    "the channel heard of no other order's fulfilment for W-2",
  );
  t.notOk(
    w2Events.some((e) => e.type === 'order.voided'),
    'nor a void',
  );
  t.equal(
    await count(sql<{ n: number }>`SELECT count(*)::int AS n FROM sync_log WHERE action = 'webhooks.repaired'`),
    0,
    'no subscription had to be made again',
  );
  t.equal(
    await count(sql<{ n: number }>`SELECT count(*)::int AS n FROM alerts WHERE condition = 'webhooks' AND resolved_at IS NULL`),
    0,
    'no webhooks alert',
  );
  t.equal(await app.stop(), 0, 'the second run stops cleanly');

  // Third run: the sandbox's account is gone (a new account of the same id): the connection stops, nothing is sent.
  await rm(join(dataDir, 'demo-sandbox.json'));
  const postsBefore = posts.length;
  app = await start('start (another account)');
  call = api(app);
  await until(
    'the connection stopped as mismatched',
    async () =>
      (await db.selectFrom('connections').select('status').where('name', '=', 'demo').executeTakeFirstOrThrow()).status === 'mismatched',
    30_000,
    200,
  );
  await until(
    'an alert says so',
    async () =>
      (await db
        .selectFrom('alerts')
        .select('key')
        .where('key', '=', 'mismatched:demo')
        .where('resolved_at', 'is', null)
        .executeTakeFirst()) !== undefined,
    60_000,
    250,
  );
  const alert = await db.selectFrom('alerts').select('message').where('key', '=', 'mismatched:demo').executeTakeFirstOrThrow();
  t.match(alert.message, /another account.*commerce-sync reset-mirror demo/, 'the alert names what happened and the command');
  const refused = await call('POST', '/api/operations/import-order?connection=demo', {
    channel: 'default',
    channel_order_id: 'W-3',
    customer: { company_id: companyId },
    currency: 'SGD',
    issued_at: '2026-11-21',
    lines: [{ sku: level.sku, quantity: '1' }],
  });
  // A change staged now (an operator's override, announced at once) waits: no POST leaves for a stopped connection.
  t.equal((await call('PUT', `/api/channels/default/overrides/${level.sku}?connection=demo`, { mode: 'zero' })).status, 200);
  await new Promise((r) => setTimeout(r, 3000));
  t.same(
    posts.slice(postsBefore).map((p) => p.payload),
    [],
    'the channel was sent nothing',
  );
  t.equal(refused.status, 400, 'an order for it is refused');
  t.match(refused.body.error, /connection demo is stopped: .*another account/, 'saying why');

  // One command starts the mirror afresh; the running workers load it.
  const reset = await runNode(['src/cli.ts', 'reset-mirror', 'demo'], {
    PATH: process.env.PATH,
    ...Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)])),
  });
  if (reset.code !== 0) t.comment(reset.both);
  t.equal(reset.code, 0, 'reset-mirror exits 0');
  t.match(reset.out, /mirror forgotten .*account 1 is its own now/);
  t.equal((await db.selectFrom('connections').select('status').where('name', '=', 'demo').executeTakeFirstOrThrow()).status, 'active');
  t.equal(
    await count(sql<{ n: number }>`SELECT count(*)::int AS n FROM channel_orders`),
    0,
    "the other account's channel orders are forgotten",
  );
  await until(
    'the mirror is loaded afresh',
    async () => (await count(sql<{ n: number }>`SELECT count(*)::int AS n FROM variants`)) >= 20,
    60_000,
    250,
  );
  t.equal(await app.stop(), 0, 'the third run stops cleanly');
});
