// The console's JSON API, live tail and /metrics over real HTTP, without a browser.
import t from 'tap';
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { logSync } from '../../src/db/synclog.ts';
import { metrics } from '../../src/metrics.ts';
import { sampleOnce } from '../../src/console/gauges.ts';
import { MAX_TAIL_STREAMS } from '../../src/console/routes/logs.ts';
import { deadLetterOf } from '../../src/queue/queue.ts';
import { addBudget, addConnection, addDelivery, addVariant, consoleServer, readEvents } from './harness.ts';
import { reconcileQueue } from '../../src/queue/contracts.ts';
import { deliveriesQueue } from '../../src/queue/contracts.ts';

const TOKEN = 'op-secret-token-for-the-api-tests';
const auth = { authorization: `Bearer ${TOKEN}` };

t.test('JSON API answers the operator questions', async (t) => {
  const { base, db, boss } = await consoleServer(t, { token: TOKEN });
  const shop = await addConnection(db, 'shop');
  const other = await addConnection(db, 'other');
  await addVariant(db, shop, {
    id: 11,
    sku: 'SKU-11',
    stock: [
      { location: 1, onHand: '5.5', committed: '1' },
      { location: 2, onHand: '2' },
    ],
  });
  await addBudget(db, shop, { remaining: 123, resetAt: new Date(Date.now() + 60_000) });
  // A window whose known reset has passed is full again, less the requests in flight.
  await addBudget(db, other, { remaining: 0, resetAt: new Date(Date.now() - 1000), resetKnown: true, inFlight: 2 });
  await addDelivery(db, shop, { state: 'queued', objectId: 11 });
  await addDelivery(db, other, { state: 'failed', error: 'boom' });
  await logSync(db, [
    {
      connectionId: shop,
      resource: 'variant',
      recordId: 11,
      sku: 'SKU-11',
      action: 'mirror.update',
      before: { on_hand: '5' },
      after: { on_hand: '5.5' },
    },
    { connectionId: shop, resource: 'order', recordId: 7, action: 'fetch', outcome: 'error', error: 'HTTP 500' },
    { connectionId: other, resource: 'variant', recordId: 99, sku: 'SKU-99', action: 'mirror.update' },
  ]);

  await t.test('overview per connection', async (t) => {
    const res = await fetch(`${base}/api/overview`, { headers: auth });
    t.equal(res.status, 200);
    const body = (await res.json()) as { connections: Record<string, unknown>[]; queues: { queue: string }[] };
    const s = body.connections.find((c) => c.name === 'shop')!;
    t.match(s, { queuedDeliveries: 1, errorsLastHour: 1, health: 'degraded', budget: { remaining: 123, limit: 300 } });
    t.ok((s.lagSeconds as number) >= 0);
    t.match(
      body.connections.find((c) => c.name === 'other'),
      { failedDeliveries: 1, budget: { remaining: 298, inFlight: 2 } },
    );
    t.ok(body.queues.some((q) => q.queue === 'deliveries-dead'));
  });

  await t.test('log filters: connection, sku, outcome, record, bad input', async (t) => {
    const get = async (qs: string) =>
      (await (await fetch(`${base}/api/logs?${qs}`, { headers: auth })).json()) as {
        entries: { sku: string | null; action: string; connection: string }[];
      };
    t.equal((await get('')).entries.length, 3);
    t.same((await get('connection=shop')).entries.map((e) => e.action).sort(), ['fetch', 'mirror.update']);
    t.same(
      (await get('sku=SKU-99')).entries.map((e) => e.connection),
      ['other'],
    );
    t.same(
      (await get('outcome=error')).entries.map((e) => e.action),
      ['fetch'],
    );
    t.same(
      (await get('connection=shop&resource=variant&record=11')).entries.map((e) => e.sku),
      ['SKU-11'],
    );
    t.equal((await get(`from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).entries.length, 0);
    const bad = await fetch(`${base}/api/logs?outcome=maybe`, { headers: auth });
    t.equal(bad.status, 400);
    t.match(await bad.json(), { error: /outcome must be one of/ });
    t.equal((await fetch(`${base}/api/logs?connection=nope`, { headers: auth })).status, 400);
  });

  await t.test('paging through entries written in one transaction (same time) loses none', async (t) => {
    await logSync(
      db,
      Array.from({ length: 250 }, (_, i) => ({ connectionId: other, resource: 'batch', action: `b${i}` })),
    );
    const ids = new Set<number>();
    let qs = 'resource=batch&limit=100';
    for (let pages = 0; pages < 10; pages++) {
      const body = (await (await fetch(`${base}/api/logs?${qs}`, { headers: auth })).json()) as {
        entries: { id: number }[];
        next: Record<string, string | number> | null;
      };
      for (const e of body.entries) ids.add(e.id);
      if (!body.next) break;
      qs = `resource=batch&limit=100&${new URLSearchParams(Object.entries(body.next).map(([k, v]): [string, string] => [k, String(v)]))}`;
    }
    t.equal(ids.size, 250);
    // The page links to older entries with the same cursor.
    const html = await (await fetch(`${base}/logs?resource=batch&limit=100`, { headers: auth })).text();
    const older = /id="older" href="|href="([^"]+)" id="older"/.exec(html)?.[1]?.replaceAll('&amp;', '&');
    t.match(older, /^\/logs\?resource=batch&to=.+&before=\d+&limit=100$/);
    const next = await (await fetch(`${base}${older}`, { headers: auth })).text();
    t.equal((next.match(/<tr class="outcome-ok" data-id=/g) ?? []).length, 100);
  });

  await t.test('variant record by sku and by id', async (t) => {
    const found = await (await fetch(`${base}/api/variants?sku=SKU-11`, { headers: auth })).json();
    t.match(found, { variants: [{ connection: 'shop', id: 11 }] });
    const rec = (await (await fetch(`${base}/api/variants/shop/11`, { headers: auth })).json()) as Record<string, any>;
    t.same(
      rec.stock.map((s: any) => [s.locationId, s.onHand, s.available]),
      [
        [1, '5.5', '4.5'],
        [2, '2', '2'],
      ],
    );
    t.equal(rec.log[0].action, 'mirror.update');
    t.equal((await fetch(`${base}/api/variants/shop/12345`, { headers: auth })).status, 404);
  });

  await t.test('delivery replay re-enqueues with the same DeliveryJob data', async (t) => {
    const failed = (await (await fetch(`${base}/api/deliveries?state=failed`, { headers: auth })).json()) as {
      deliveries: { id: number; connection_id: number }[];
    };
    t.equal(failed.deliveries.length, 1);
    const d = failed.deliveries[0]!;
    const res = await fetch(`${base}/api/deliveries/${d.id}/replay`, { method: 'POST', headers: auth });
    t.equal(res.status, 202);
    const { replayed } = (await res.json()) as { replayed: { jobId: string } };
    const [job] = await boss.findJobs(deliveriesQueue.name, { id: replayed.jobId });
    t.same(job!.data, { kind: 'replay', deliveryRowId: d.id, connectionId: other, resource: 'variant', action: 'update', objectId: 1 });
    const row = await db.selectFrom('webhook_deliveries').selectAll().where('id', '=', d.id).executeTakeFirstOrThrow();
    t.match(row, { state: 'queued', error: null, job_id: replayed.jobId });
    t.equal((await fetch(`${base}/api/deliveries/999999/replay`, { method: 'POST', headers: auth })).status, 404);
  });

  await t.test('the deliveries page pages back through older deliveries', async (t) => {
    await db
      .insertInto('webhook_deliveries')
      .values(
        Array.from({ length: 105 }, (_, i) => ({
          connection_id: shop,
          delivery_id: `bulk-${i}`,
          event: 'orders.create',
          resource: 'order',
          action: 'create',
          object_id: i,
          body: '{}',
          state: 'processed' as const,
        })),
      )
      .execute();
    const first = await (await fetch(`${base}/deliveries?resource=order`, { headers: auth })).text();
    t.equal((first.match(/<tr data-id=/g) ?? []).length, 100);
    const older = /href="([^"]+)" id="older"/.exec(first)?.[1]?.replaceAll('&amp;', '&');
    t.match(older, /^\/deliveries\?resource=order&before=\d+$/);
    const second = await (await fetch(`${base}${older}`, { headers: auth })).text();
    t.equal((second.match(/<tr data-id=/g) ?? []).length, 5);
    t.notMatch(second, /id="older"/);
  });

  await t.test('dead letters are listed and replayed to their live queue', async (t) => {
    const deadId = await boss.send(deadLetterOf(reconcileQueue.name), { connectionId: shop, full: false });
    const list = (await (await fetch(`${base}/api/dead-letters`, { headers: auth })).json()) as {
      deadLetters: { id: string; liveQueue: string }[];
    };
    t.match(list.deadLetters, [{ id: deadId, liveQueue: 'reconcile' }]);
    const res = await fetch(`${base}/api/dead-letters/reconcile-dead/${deadId}/replay`, { method: 'POST', headers: auth });
    t.equal(res.status, 202);
    const { replayed } = (await res.json()) as { replayed: { jobId: string } };
    const [job] = await boss.findJobs(reconcileQueue.name, { id: replayed.jobId });
    t.same(job!.data, { connectionId: shop, full: false });
    await boss.deleteJob(reconcileQueue.name, replayed.jobId); // the queue depth is counted below
    t.same(((await (await fetch(`${base}/api/dead-letters`, { headers: auth })).json()) as { deadLetters: unknown[] }).deadLetters, []);
    t.equal((await fetch(`${base}/api/dead-letters/reconcile-dead/${deadId}/replay`, { method: 'POST', headers: auth })).status, 404);
    t.equal((await fetch(`${base}/api/dead-letters/reconcile/${deadId}/replay`, { method: 'POST', headers: auth })).status, 400);
  });

  await t.test('the minute samples feed the budget and lag series', async (t) => {
    // A fixed clock far from the real one: the console's own sampler (real time) cannot write into this
    // window, and the test never depends on the minute it runs in.
    const at = new Date('2031-03-04T10:20:30Z');
    t.equal(await sampleOnce(db, { now: at }), 2);
    await sampleOnce(db, { now: new Date(at.getTime() + 20_000) }); // the same minute again: the first sample stays the only one
    await db
      .insertInto('webhook_deliveries')
      .values({
        connection_id: shop,
        delivery_id: 'series-1',
        event: 'variants/update',
        resource: 'variant',
        action: 'update',
        object_id: 1,
        body: '{}',
        state: 'processed',
        received_at: new Date(at.getTime() - 60_000),
      })
      .execute();
    const series = (await (
      await fetch(`${base}/api/connections/shop/series?minutes=5&end=${at.toISOString()}`, { headers: auth })
    ).json()) as Record<string, { value: number }[]>;
    t.same(
      series.budget!.map((p) => p.value),
      [123],
      'one sample per minute',
    );
    t.same(
      series.budgetUsed!.map((p) => p.value),
      [300 - 123],
      'used of the window',
    );
    t.equal(series.lag!.length, 1);
    t.same(
      series.throughput!.map((p) => p.value),
      [0, 0, 0, 1, 0],
      'the delivery of the minute before is counted in its minute',
    );
    const day = (await (
      await fetch(`${base}/api/connections/shop/series?range=24h&end=${at.toISOString()}`, { headers: auth })
    ).json()) as Record<string, { value: number }[]>;
    t.equal(day.throughput!.length, 96, '24 hours in quarter hours');
    t.equal((await fetch(`${base}/api/connections/shop/series?range=2w`, { headers: auth })).status, 400);
  });

  await t.test('/metrics carries the gauges, refreshed on scrape', async (t) => {
    metrics.deliveriesReceived.inc({ connection: 'shop', event: 'variants/update' });
    await boss.send(reconcileQueue.name, { connectionId: shop, full: false });
    const res = await fetch(`${base}/metrics`, { headers: auth });
    t.equal(res.status, 200);
    const text = await res.text();
    t.match(text, /commerce_sync_api_budget_remaining\{connection="shop"\} 123/);
    t.match(text, /commerce_sync_queue_depth\{queue="reconcile"\} 1/);
    t.match(text, /commerce_sync_mirror_lag_seconds\{connection="shop"\} \d+/);
    t.match(text, /commerce_sync_deliveries_received_total\{connection="shop",event="variants\/update"\} 1/);
  });
});

t.test('live tail: filters server-side, resumes after Last-Event-ID', async (t) => {
  const { base, db, logLines } = await consoleServer(t, { token: TOKEN });
  const shop = await addConnection(db, 'shop');
  const other = await addConnection(db, 'other');
  const ctl = new AbortController();
  t.teardown(() => ctl.abort());
  const res = await fetch(`${base}/api/tail?connection=shop&sku=A-1`, { headers: auth, signal: ctl.signal });
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /text\/event-stream/);
  const reading = readEvents(res, (ev) => ev.length >= 2);
  // The subscription is in place once the response headers are sent.
  await logSync(db, { connectionId: other, resource: 'variant', sku: 'A-1', action: 'not-this-connection' });
  await logSync(db, { connectionId: shop, resource: 'variant', sku: 'B-2', action: 'not-this-sku' });
  await logSync(db, { connectionId: shop, resource: 'variant', sku: 'A-1', action: 'first' });
  await logSync(db, [
    { connectionId: shop, resource: 'variant', sku: 'A-1', action: 'second' },
    { connectionId: shop, sku: 'C', action: 'x' },
  ]);
  const events = await reading;
  t.same(
    events.map((e) => e.data.action),
    ['first', 'second'],
  );
  const lastId = events[1]!.id;

  // Reconnect with Last-Event-ID: what was written meanwhile arrives first.
  await logSync(db, { connectionId: shop, resource: 'variant', sku: 'A-1', action: 'while-away' });
  const again = await fetch(`${base}/api/tail?connection=shop&sku=A-1`, {
    headers: { ...auth, 'last-event-id': lastId },
    signal: ctl.signal,
  });
  const more = await readEvents(again, (ev) => ev.length >= 1);
  t.same(
    more.map((e) => e.data.action),
    ['while-away'],
  );

  // An entry written without NOTIFY still arrives (the tail also polls).
  const quiet = await fetch(`${base}/api/tail?connection=shop`, { headers: auth, signal: ctl.signal });
  const reading2 = readEvents(quiet, (ev) => ev.length >= 1);
  await db.insertInto('sync_log').values({ connection_id: shop, action: 'no-notify', outcome: 'ok' }).execute();
  t.same(
    (await reading2).map((e) => e.data.action),
    ['no-notify'],
  );

  // Clients going away is the normal end of a stream: nothing is logged as an error.
  ctl.abort();
  await logSync(db, { connectionId: shop, sku: 'A-1', action: 'after-abort' });
  await new Promise((r) => setTimeout(r, 300));
  t.same(
    logLines().filter((l) => (l.level as number) >= 50),
    [],
  );
});

t.test('a shutdown ends open event streams instead of waiting for them', async (t) => {
  const { base, server } = await consoleServer(t, { token: TOKEN });
  const res = await fetch(`${base}/api/tail`, { headers: auth });
  const reader = res.body!.getReader();
  t.match(new TextDecoder().decode((await reader.read()).value), /retry: 2000/);
  const closing = server.close(120_000);
  // Ended by the console (a clean end of stream), not cut by the server's grace timeout (an error).
  let r;
  do r = await reader.read();
  while (!r.done);
  t.ok(r.done);
  await closing;
});

t.test('operator auth: every console and API route refuses a request without the token', async (t) => {
  // A wrong token per route: more than the failure throttle lets one address send (it would answer 429).
  const { base, db } = await consoleServer(t, { token: TOKEN, config: { OPERATOR_LOGIN_FAILURES: 1000 } });
  const shop = await addConnection(db, 'shop');
  await addVariant(db, shop, { id: 1, sku: 'S1' });
  const id = await addDelivery(db, shop);
  const gets = [
    '/',
    '/logs',
    '/tail',
    '/deliveries',
    '/dead-letters',
    '/variants',
    '/variants/shop/1',
    '/metrics',
    '/api/overview',
    '/api/status',
    '/api/queues',
    '/api/logs',
    '/api/tail',
    '/api/deliveries',
    `/api/deliveries/${id}`,
    '/api/dead-letters',
    '/api/variants?sku=S1',
    '/api/variants/shop/1',
    '/api/connections/shop/series',
  ];
  const posts = [
    `/api/deliveries/${id}/replay`,
    `/deliveries/${id}/replay`,
    '/api/dead-letters/reconcile-dead/00000000-0000-0000-0000-000000000000/replay',
  ];
  for (const path of gets) {
    const res = await fetch(base + path);
    t.equal(res.status, 401, `GET ${path} without token`);
    const wrong = await fetch(base + path, { headers: { authorization: 'Bearer wrong' } });
    t.equal(wrong.status, 401, `GET ${path} with a wrong token`);
    await res.body?.cancel();
  }
  for (const path of posts) t.equal((await fetch(base + path, { method: 'POST' })).status, 401, `POST ${path} without token`);
  // Routes other areas mount through the console get the same guard.
  for (const [file, path] of [
    ['../../src/channels/routes.ts', '/api/channel-stock'],
    ['../../src/stock/variant-routes.ts', '/api/variants/shop/1/channels'],
    ['../../src/push/routes.ts', '/api/operations'],
  ] as const) {
    if (!existsSync(fileURLToPath(new URL(file, import.meta.url)))) continue;
    t.equal((await fetch(base + path)).status, 401, `GET ${path} without token`);
    t.not((await fetch(base + path, { headers: auth })).status, 401, `GET ${path} with the token`);
  }
  t.equal(
    (await db.selectFrom('webhook_deliveries').select('state').where('id', '=', id).executeTakeFirstOrThrow()).state,
    'processed',
    'no replay happened',
  );

  // A page asks for the login form; API clients get JSON.
  const pageRes = await fetch(`${base}/deliveries`, { headers: { accept: 'text/html' } });
  t.match(await pageRes.text(), /Operator login/);
  t.match(await (await fetch(`${base}/api/overview`, { headers: { accept: 'text/html' } })).json(), { error: /token required/ });

  // Bearer, Basic and the login cookie all work.
  t.equal((await fetch(`${base}/api/overview`, { headers: auth })).status, 200);
  t.equal(
    (await fetch(`${base}/api/overview`, { headers: { authorization: `Basic ${Buffer.from(`op:${TOKEN}`).toString('base64')}` } })).status,
    200,
  );
  const login = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `token=${TOKEN}&next=%2Fdeliveries`,
  });
  t.equal(login.status, 302);
  t.equal(login.headers.get('location'), '/deliveries');
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  t.notMatch(cookie, TOKEN, 'the cookie does not carry the operator token itself');
  t.equal((await fetch(`${base}/deliveries`, { headers: { cookie } })).status, 200);
  t.equal(
    (await fetch(`${base}/deliveries`, { headers: { cookie: `cs_operator=${TOKEN}` } })).status,
    401,
    'nor does the token work as a cookie',
  );
  const badLogin = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'token=nope&next=//evil.example',
  });
  t.equal(badLogin.status, 401);

  // Another site's page cannot replay with the operator's cookie.
  const csrf = await fetch(`${base}/api/deliveries/${id}/replay`, { method: 'POST', headers: { cookie, origin: 'http://evil.example' } });
  t.equal(csrf.status, 403);

  // Health and readiness stay open.
  t.equal((await fetch(`${base}/healthz`)).status, 200);
  t.equal((await fetch(`${base}/readyz`)).status, 200);
});

t.test('without OPERATOR_TOKEN: closed unless demo mode on localhost, which says so', async (t) => {
  const closed = await consoleServer(t, {});
  t.equal((await fetch(`${closed.base}/api/overview`)).status, 401);
  t.match(await (await fetch(`${closed.base}/api/overview`)).json(), { error: /set OPERATOR_TOKEN/ });
  const demo = await consoleServer(t, { demo: true });
  const res = await fetch(`${demo.base}/`);
  t.equal(res.status, 200);
  t.match(await res.text(), /Demo mode:/);
  t.equal((await fetch(`${demo.base}/api/overview`)).status, 200);
});

t.test('HTML and SQL in names and SKUs are rendered escaped', async (t) => {
  const { base, db } = await consoleServer(t, { demo: true });
  const shop = await addConnection(db, 'shop', { accountName: '<script>alert(1)</script>' });
  const evil = `<img src=x onerror=alert(1)>'; DROP TABLE variants; --`;
  await addVariant(db, shop, { id: 5, sku: evil, name: '<b>bold</b>', stock: [{ location: 1, onHand: '1' }] });
  await logSync(db, { connectionId: shop, resource: 'variant', recordId: 5, sku: evil, action: 'mirror.update', error: '<i>x</i>' });
  for (const path of ['/', '/logs', `/logs?sku=${encodeURIComponent(evil)}`, '/variants/shop/5']) {
    const text = await (await fetch(base + path)).text();
    t.notMatch(text, /<script>alert|<img src=x|<b>bold|<i>x<\/i>/, `${path} has no raw markup from data`);
  }
  const page = await (await fetch(`${base}/variants/shop/5`)).text();
  t.match(page, '&lt;img src=x onerror=alert(1)&gt;&#39;; DROP TABLE variants; --');
  t.match(page, '&lt;b&gt;bold&lt;/b&gt;');
  t.ok(await db.selectFrom('variants').select('id').executeTakeFirst(), 'the SKU was data, not SQL');
  const logs = (await (await fetch(`${base}/api/logs?sku=${encodeURIComponent(evil)}`)).json()) as { entries: unknown[] };
  t.equal(logs.entries.length, 1);
});

t.test('notices say only the console’s own words: no text from the query string', async (t) => {
  const { base, db } = await consoleServer(t, { token: TOKEN });
  const shop = await addConnection(db, 'shop');
  const id = await addDelivery(db, shop);
  const bait = 'Support-call-555-0100-now';
  const get = async (path: string) =>
    (await fetch(base + path, { headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/html' } })).text();
  for (const path of [
    `/deliveries?replayed=${bait}`,
    `/dead-letters?replayed=${bait}`,
    `/operations/1?retried=${bait}`,
    `/operations/1?queued=${bait}`,
    `/connections/shop?connected=${bait}`,
    `/connections/shop?disabled=${bait}`,
    `/connections/${bait}?connected=${bait}`,
    `/deliveries?connection=${bait}`,
    `/orders?connection=${bait}`,
    `/variants?connection=${bait}`,
    `/operations?connection=${bait}`,
  ]) {
    t.notMatch(await get(path), bait, `${path.replace(bait, '<text>').replace(bait, '<text>')} shows none of it`);
  }
  t.match(await get(`/deliveries?replayed=${id}`), `Replayed ${id}: it is queued again.`, 'the notice after a real replay still shows');
  t.match(await get('/connections/shop?connected=shop'), 'Connected shop: its webhooks point at this console.');
  t.match(await get('/connections/shop?disabled=shop'), 'Disabled shop');
  t.match(
    await get('/dead-letters?replayed=0b1d8c3e-2f4a-4c55-9a1e-6f7d8e9fa0b1'),
    'Replayed 0b1d8c3e-2f4a-4c55-9a1e-6f7d8e9fa0b1',
    "a dead letter's id (pg-boss's uuid)",
  );
});

t.test('live-tail streams are bounded in number per process', async (t) => {
  const { base } = await consoleServer(t, { token: TOKEN });
  const ctl = new AbortController();
  t.teardown(() => ctl.abort());
  const limit = MAX_TAIL_STREAMS;
  const open: Response[] = [];
  for (let i = 0; i < limit; i++) open.push(await fetch(`${base}/api/tail`, { headers: auth, signal: ctl.signal }));
  t.ok(
    open.every((r) => r.status === 200),
    `${limit} streams open`,
  );
  const over = await fetch(`${base}/api/tail`, { headers: auth, signal: ctl.signal });
  t.equal(over.status, 503, 'one more is refused');
  t.ok(Number(over.headers.get('retry-after')) > 0, 'with Retry-After (an EventSource tries again)');
  await open[0]!.body!.cancel();
  let again: Response | undefined;
  for (let i = 0; i < 50 && again?.status !== 200; i++) {
    await again?.body?.cancel();
    await new Promise((r) => setTimeout(r, 50));
    again = await fetch(`${base}/api/tail`, { headers: auth, signal: ctl.signal });
  }
  t.equal(again?.status, 200, 'a stream that ends makes room');
});

t.test('a live-tail client that reads nothing is cut off instead of buffered without end', async (t) => {
  const { base, db } = await consoleServer(t, { token: TOKEN });
  const shop = await addConnection(db, 'shop');
  const { port } = new URL(base);
  const socket = net.connect(Number(port), '127.0.0.1');
  t.teardown(() => socket.destroy());
  await once(socket, 'connect');
  socket.write(`GET /api/tail HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
  socket.pause(); // a client that stopped reading (a frozen tab, a stuck proxy)
  let closed = false;
  socket.on('close', () => {
    closed = true;
  });
  await new Promise((r) => setTimeout(r, 300));
  // 20 MB of entries: more than the kernel's socket buffers on both sides take.
  const blob = 'x'.repeat(100_000);
  for (let i = 0; i < 200; i++) await logSync(db, { connectionId: shop, action: 'big', detail: { blob } });
  await new Promise((r) => setTimeout(r, 2000));
  let received = 0;
  socket.on('data', (d: Buffer) => {
    received += d.length;
  });
  socket.resume();
  for (let i = 0; i < 100 && !closed; i++) await new Promise((r) => setTimeout(r, 100));
  t.ok(closed, 'the console ended the stream (the client reconnects with Last-Event-ID and catches up)');
  t.ok(received < 200 * 100_000, `it did not hold everything for it (${(received / 1e6).toFixed(1)} MB reached the client)`);

  // Reconnecting, a client that reads gets the whole catch-up at its own pace (20 MB, not cut as a slow one).
  const ctl = new AbortController();
  t.teardown(() => ctl.abort());
  const again = await fetch(`${base}/api/tail?action=big`, { headers: { ...auth, 'last-event-id': '0' }, signal: ctl.signal });
  const events = await readEvents(again, (ev) => ev.length >= 200);
  t.equal(events.length, 200, 'every entry it missed');
});
