// One boundary for every string from outside (src/server.ts, src/inputs.ts): a NUL byte or another control
// character in a path or a query, a NUL byte or a lone UTF-16 surrogate in a form or a JSON body, or a query or
// form field given twice is refused with a 400 naming where it was, before any handler sees it (PostgreSQL text
// cannot hold a NUL byte, jsonb no lone surrogate: 22021 and 22P05 were 500s; a repeated field was an array where
// code expected a string). An id is digits within bigint and JavaScript's safe integers: a longer run of digits
// named a connection as an id PostgreSQL refused (22003, and 22P02 for the `1e+30` JavaScript made of 30 digits).
// A walk over every route of the OpenAPI document and every console route mounted with a role, with such values,
// ids no table holds and over-long values, finds no 500.
import t from 'tap';
import { leastRole } from '../../src/console/roles.ts';
import type { Db } from '../../src/db/index.ts';
import { routesOf } from '../support/routes.ts';
import { consoleServer, threeChannels } from './harness.ts';

const TOKEN = 'op-secret-token-for-the-input-boundary';
const auth = { authorization: `Bearer ${TOKEN}` };
const NUL = 'a\u0000b';
const LONG = 'x'.repeat(8000);
/** A lone surrogate: JSON.stringify writes it as the escape `\ud800`, which JSON.parse reads back alone. */
const LONE = 'a\ud800b';
/** The same in a URL: the UTF-8 bytes of U+D800 (WTF-8), which no decoder turns into a string of ours. */
const LONE_URL = 'a%ED%A0%80b';
/** No ids: beyond bigint (20 digits, and 30), beyond JavaScript's safe integers, negative, fractional, an exponent. */
const IDS = ['99999999999999999999', `1${'0'.repeat(29)}`, '9007199254740993', '-1', '1.5', '1e3'];

/** A path of the route with each `:param` a value that names something there, `bad` (URL-encoded) for the one in `at`. */
const pathOf = (route: string, at?: string, bad?: string) =>
  route.replace(/:(\w+)/g, (_, p: string) =>
    p === at
      ? bad!
      : ({ connection: 'shop', name: 'default', queue: 'fetch', kind: 'import-order', action: 'pause', sku: 'SKU-1' }[p] ?? '1'),
  );

/** Order 1 of the connection, so the ship form reaches its fields. */
const anOrder = (db: Db, connectionId: number) =>
  db
    .insertInto('orders')
    .values({ connection_id: connectionId, id: 1, order_number: 'SO1', status: 'active', raw: JSON.stringify({ id: 1 }) })
    .execute();

t.test('NUL bytes, lone surrogates and repeated fields are a 400 naming the field, not a 500', async (t) => {
  const { base, db, logLines } = await consoleServer(t, { token: TOKEN, receiver: true });
  const { shop, channel } = await threeChannels(db, base, TOKEN);
  await anOrder(db, shop);
  const call = async (method: string, path: string, body?: string, type = 'application/json') => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : { 'content-type': type }) },
      body,
      redirect: 'manual',
    });
    return { status: res.status, text: await res.text() };
  };
  const form = (path: string, body: string) => call('POST', path, body, 'application/x-www-form-urlencoded');
  /** Imports an order, its company and line given as JSON text (deeper than JSON.stringify goes). */
  const importOrder = (id: string, company: string, line = '{"sku":"SKU-1","quantity":"1"}') =>
    call(
      'POST',
      '/api/operations/import-order?connection=shop',
      `{"channel":"webshop","channel_order_id":"${id}","currency":"usd","issued_at":"2026-11-20","lines":[${line}],` +
        `"customer":{"company":${company},"shipping_address":{"address1":"1 Row","city":"London","country":"GB"}}}`,
    );
  const cases: [string, () => Promise<{ status: number; text: string }>, RegExp][] = [
    ['GET /api/channels/%00', () => call('GET', '/api/channels/%00'), /path segment 3/],
    ['PUT overrides/%00', () => call('PUT', '/api/channels/default/overrides/%00', '{"mode":"zero"}'), /path segment 5/],
    ['DELETE holds/%00', () => call('DELETE', '/api/channels/default/holds/%00'), /path segment 5/],
    ['GET orders/%00', () => call('GET', '/api/channels/default/orders/%00'), /path segment 5/],
    ['POST orders/%00/cancel', () => call('POST', '/api/channels/default/orders/%00/cancel', '{}'), /path segment 5/],
    ['/api/audit?actor=%00', () => call('GET', '/api/audit?actor=%00'), /query field "actor"/],
    ['/api/logs?sku=%00', () => call('GET', '/api/logs?sku=%00'), /query field "sku"/],
    ['/api/deliveries?resource=%00', () => call('GET', '/api/deliveries?resource=%00'), /query field "resource"/],
    ['/api/variants?sku=%00', () => call('GET', '/api/variants?sku=%00'), /query field "sku"/],
    ['/api/variants?connection=shop&q=%00', () => call('GET', '/api/variants?connection=shop&q=%00'), /query field "q"/],
    ['/api/variants/%00/1', () => call('GET', '/api/variants/%00/1'), /path segment 3/],
    ['/connections/%00', () => call('GET', '/connections/%00'), /path segment 2/],
    [
      'a query field twice',
      () => call('GET', '/api/variants?connection=shop&connection=shop'),
      /query field "connection" is given more than once/,
    ],
    ['pause reason a%00b', () => form(`/channels/${channel.default}/destination/pause`, 'reason=a%00b'), /form field "reason"/],
    [
      'a form field twice (orders)',
      () => form('/orders/shop/1/ship', 'tracking_number=1&tracking_number=2'),
      /form field "tracking_number"/,
    ],
    ['a form field twice (connections)', () => form('/connections/token', 'name=a&name=b&base_url=x&token=y'), /form field "name"/],
    ['a bracketed form field', () => form('/connections/token', 'name[x]=a&base_url=x&token=y'), /form field "name"/],
    [
      'a loose field nested 100,000 deep',
      () => importOrder('N-0', `{"name":"Ada","extra":${'['.repeat(100_000)}${']'.repeat(100_000)}}`),
      /body field "customer\.company\.extra(\[0\])+\.\.\." nests deeper than 32 levels/,
    ],
    [
      'import-order: NUL in a company field',
      () => importOrder('N-1', JSON.stringify({ name: 'Ada', note: NUL })),
      /body field "customer\.company\.note" has a NUL byte/,
    ],
    [
      'import-order: NUL in a free-form line field',
      () => importOrder('N-2', '{"name":"Ada"}', JSON.stringify({ freeform: true, label: 'Wrap', quantity: '1', gift: NUL })),
      /body field "lines\[0\]\.gift" has a NUL byte/,
    ],
    [
      'import-order: a lone surrogate in the company name',
      () => importOrder('N-3', '{"name":"Co\\ud800"}'),
      /body field "customer\.company\.name" has a lone surrogate/,
    ],
    [
      'ship: a lone surrogate in the tracking company',
      () => call('POST', '/api/operations/ship?connection=shop', JSON.stringify({ order_id: 1, tracking: { company: LONE } })),
      /body field "tracking\.company" has a lone surrogate/,
    ],
    [
      'a lone surrogate in a field name',
      () => call('POST', '/api/operations/ship?connection=shop', `{"order_id":1,"tracking":{"\\udc00":"x"}}`),
      /body field "tracking" has a field name with a lone surrogate/,
    ],
  ];
  for (const [what, answer, names] of cases) {
    const { status, text } = await answer();
    t.equal(status, 400, `${what}: 400 (${text.slice(0, 200)})`);
    t.match(status === 400 ? JSON.parse(text).error : text, names, `${what}: names the field`);
  }
  // A connection is named by name or id: a value that is no id is a name, answered as any name no connection has.
  const routes = [
    (c: string) => `/api/logs?connection=${c}`,
    (c: string) => `/api/operations?connection=${c}`,
    (c: string) => `/api/connections/${c}/series`,
    (c: string) => `/connections/${c}`,
  ];
  for (const path of routes) {
    const unknown = await call('GET', path('nosuch'));
    t.match(unknown, { status: /^40[04]$/, text: /no connection/i }, `${path('nosuch')}: no such connection`);
    for (const id of IDS)
      t.match(await call('GET', path(id)), { status: unknown.status, text: /no connection/i }, `${path(id)}: no such connection`);
  }
  // Not the boundary's: a time JavaScript reads that PostgreSQL did not (a 500 too).
  t.equal((await call('GET', '/api/logs?to=1')).status, 200, 'a sync log `to` of "1" is a time');
  t.match(await call('GET', '/api/logs?to=10000-01-01'), { status: 400, text: /to must be an ISO timestamp/ }, 'a year beyond 9999 is not');
  t.same(
    logLines().filter((l) => l.msg === 'http error'),
    [],
    'nothing logged as a server error',
  );
});

t.test('every route, with NUL bytes, lone surrogates, ids no table holds, over-long values and repeated fields: no 500', async (t) => {
  const { base, db, rt, logLines } = await consoleServer(t, { token: TOKEN, receiver: true });
  await anOrder(db, (await threeChannels(db, base, TOKEN)).shop);
  const doc = (await (await fetch(`${base}/api/openapi.json`, { headers: auth })).json()) as {
    paths: Record<string, Record<string, { parameters?: { name: string; in: string }[]; requestBody?: unknown }>>;
    components: { schemas: Record<string, unknown> };
  };
  type Route = { method: string; route: string; query: string[]; fields: string[]; form: boolean };
  const routes: Route[] = [];
  // The properties a body schema names, each branch of a union too ($refs followed into the components).
  const fieldsOf = (schema: any): string[] => {
    if (!schema || typeof schema !== 'object') return [];
    if (typeof schema.$ref === 'string') return fieldsOf(doc.components.schemas[schema.$ref.split('/').at(-1)!]);
    return [
      ...Object.keys(schema.properties ?? {}),
      ...[...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])].flatMap(fieldsOf),
    ];
  };
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item)) {
      const body = (op.requestBody as any)?.content?.['application/json']?.schema;
      routes.push({
        method: method.toUpperCase(),
        route: path.replace(/\{(\w+)\}/g, ':$1'),
        query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
        fields: [...new Set(fieldsOf(body))],
        form: false,
      });
    }
  // The console's pages and forms (every guarded route is mounted with a role): every query field the API knows,
  // and every field a console form sends.
  const anyQuery = [...new Set(routes.flatMap((r) => r.query)), 'history', 'sort', 'dir', 'threshold', 'filter', 'next'];
  const formFields = ['reason', 'tracking_company', 'tracking_number', 'fulfillment_id', 'name', 'base_url', 'token', 'next'];
  for (const { method, path: route, router } of routesOf(rt.app)) {
    if (method === 'HEAD' || !leastRole(router, method, route) || route.startsWith('/api/') || route === '/tail') continue;
    routes.push({ method, route, query: anyQuery, fields: method === 'POST' ? formFields : [], form: true });
  }
  routes.push({ method: 'POST', route: '/login', query: ['next'], fields: ['token', 'next'], form: true });
  // Reads first: what a change takes away (a channel, a connection) is still there for them.
  const order = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
  routes.sort((a, b) => order.indexOf(a.method) - order.indexOf(b.method));
  t.ok(routes.length > 70, `${routes.length} routes`);

  const failures: string[] = [];
  const unrefused: string[] = [];
  /** Sends a request; `refused`: it must be the boundary's 400. */
  const send = async (method: string, path: string, body?: string, form = false, refused = false) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...auth,
        accept: form ? 'text/html' : 'application/json',
        ...(body === undefined ? {} : { 'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json' }),
      },
      body,
      redirect: 'manual',
    });
    const text = await res.text();
    const what = `${method} ${path.slice(0, 120)} ${body?.slice(0, 120) ?? ''}: ${res.status} ${text.slice(0, 200)}`;
    if (res.status >= 500) failures.push(what);
    else if (refused && res.status !== 400) unrefused.push(what);
  };
  for (const r of routes) {
    if (r.route === '/api/tail') continue; // a stream that never ends
    const emptyBody = r.method === 'GET' || r.method === 'DELETE' ? undefined : r.form ? '' : '{}';
    // Values as they go in a URL (a lone surrogate has no encoding of its own: LONE_URL) and in a JSON body.
    for (const [bad, inUrl] of [[NUL], [LONG], [LONE, LONE_URL], ...IDS.map((id) => [id])] as [string, string?][]) {
      const refused = bad === NUL;
      const url = inUrl ?? encodeURIComponent(bad);
      for (const p of r.route.match(/:(\w+)/g) ?? []) await send(r.method, pathOf(r.route, p.slice(1), url), emptyBody, r.form, refused);
      for (const q of r.query) await send(r.method, `${pathOf(r.route)}?${q}=${url}`, emptyBody, r.form, refused);
      // Bodies: only where the route reads one (the webhook endpoint checks its signature first). Ids in a body are
      // numbers its schema checks: the id forms are tried in paths and queries, where one parser reads them.
      if (!IDS.includes(bad))
        for (const f of r.fields) await send(r.method, pathOf(r.route), r.form ? `${f}=${url}` : JSON.stringify({ [f]: bad }), r.form);
    }
    for (const q of r.query) await send(r.method, `${pathOf(r.route)}?${q}=1&${q}=2`, emptyBody, r.form, true);
    if (r.form) for (const f of r.fields) await send(r.method, pathOf(r.route), `${f}=1&${f}=2`, true);
  }
  t.same(unrefused, [], 'a NUL byte in a path or a query, or a query field twice, is a 400 on every route');
  t.same(failures, [], 'no route answers 500');
  t.same(
    logLines()
      .filter((l) => l.msg === 'http error')
      .slice(0, 5),
    [],
    'nothing logged as a server error',
  );
});
