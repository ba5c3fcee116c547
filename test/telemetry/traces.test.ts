// One stock move followed end to end in the team's tracing backend: a receiver and a worker as their own processes,
// configured by the standard OTEL_* variables alone to export OTLP/HTTP to a collector stand-in in this test. One
// stock adjustment at the sandbox becomes one trace holding the delivery's POST and its commit, the intake, the
// drain, the API read with the rate budget's wait, the mirror write and the POST to the channel's destination; the
// destination (every POST verified with the `standardwebhooks` package) receives that trace's id in `traceparent`,
// and the sync log's entries of the drain carry it, linked from the console through TRACE_URL_TEMPLATE.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import t from 'tap';
import { ClientState } from '../../src/api/client-state.ts';
import { setDestination } from '../../src/channels/destinations.ts';
import { addChannel } from '../../src/channels/channels.ts';
import { listenLocal } from '../support/http.ts';
import { channelEndpoint } from '../support/channel-endpoint.ts';
import { merchantApi } from '../support/sandbox.ts';
import { startWorld, until } from '../reliability/harness.ts';

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
  events?: { name: string }[];
  links?: { traceId: string; spanId: string }[];
  service: string;
}

/** An OTLP/HTTP collector stand-in: keeps every span it is sent (JSON encoding). */
async function collector(t: Parameters<typeof listenLocal>[0]) {
  const spans: ExportedSpan[] = [];
  const paths = new Set<string>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      paths.add(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const doc = JSON.parse(body);
      for (const rs of doc.resourceSpans ?? []) {
        const service = rs.resource?.attributes?.find((a: any) => a.key === 'service.name')?.value?.stringValue ?? '';
        for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, service });
      }
      res.setHeader('content-type', 'application/json');
      res.end('{}');
    });
  });
  return { url: await listenLocal(t, server), spans, paths };
}

const attr = (s: ExportedSpan, key: string) => {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  return v ? Object.values(v)[0] : undefined;
};

t.test('one stock move is one trace from the delivery to the channel POST, which carries it on', async (t) => {
  const otlp = await collector(t);
  const otel = (service: string) => ({
    OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: service,
    OTEL_BSP_SCHEDULE_DELAY: 200,
  });
  const world = await startWorld(t);
  const { db } = world;
  const [shop] = world.shops;
  const receiver = await world.spawn('receiver', otel('commerce-sync-receiver'));
  world.setReceivers([receiver]);
  await world.spawn('worker', otel('commerce-sync-worker'));
  await world.reconcile({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });

  // The channel's endpoint.
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const posts: { traceparent: string | undefined; skus: string[] }[] = [];
  const { server: endpoint, refused: bad } = channelEndpoint(secret, ({ payload, headers }) => {
    posts.push({ traceparent: headers.traceparent as string | undefined, skus: (payload.data?.changes ?? []).map((c: any) => c.sku) });
  });
  const url = await listenLocal(t, endpoint);
  const { channel } = await addChannel(db, Number(shop!.connection.id), { name: 'webshop' });
  await setDestination(db, new ClientState().key(world.config), Number(channel.id), { url: `${url}/stock`, secret, kinds: 'stock' }, [
    '127.0.0.1',
  ]);

  // The channel's backlog (the first sweep's quantities) goes out first, in the sweep's own trace.
  const channelId = Number(channel.id);
  await until(
    'the destination caught up',
    async () => {
      const last = await db
        .selectFrom('channel_quantity_changes')
        .select((e) => e.fn.max('id').as('id'))
        .where('channel_id', '=', channelId)
        .executeTakeFirst();
      const dest = await db
        .selectFrom('channel_destinations')
        .select('cursor')
        .where('channel_id', '=', channelId)
        .executeTakeFirstOrThrow();
      return Number(dest.cursor) >= Number(last?.id ?? 0) || `cursor ${dest.cursor} of ${last?.id}`;
    },
    60_000,
  );
  const before = posts.length;

  // One stock move of one variant at the service.
  const variant = (await shop!.snapshot('variants')).find(
    (v) => v.sku && v.status === 'active' && !v.composite && v.manage_stock !== false,
  )!;
  const location = (await shop!.snapshot('locations'))[0]!.id;
  await merchantApi(shop!.sandbox)('POST', '/stock_adjustments', {
    stock_adjustment: {
      stock_location_id: location,
      reason: 'damaged',
      stock_adjustment_line_items: [{ variant_id: variant.id, quantity: -1 }],
    },
  });
  let post: (typeof posts)[number] | undefined;
  await until(
    'the channel POST of the move',
    () => !!(post = posts.slice(before).find((p) => p.skus.includes(variant.sku))) || `${posts.length} POSTs`,
    60_000,
  );
  t.same(bad, [], 'every POST verifies');
  const traceparent = post!.traceparent ?? '';
  t.match(traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/, 'the POST carries a W3C traceparent');
  const traceId = traceparent.split('-')[1]!;

  const wanted = [
    'POST /webhooks/:connection',
    'webhook commit',
    'drain variant',
    'GET /variants',
    'mirror write',
    'POST channel destination',
  ];
  const inTrace = () => otlp.spans.filter((s) => s.traceId === traceId);
  await until(
    'the trace at the collector',
    () => wanted.every((n) => inTrace().some((s) => s.name === n)) || `has ${[...new Set(inTrace().map((s) => s.name))].join(', ')}`,
    30_000,
  );
  const spans = inTrace();
  const named = (n: string) => spans.find((s) => s.name === n)!;
  t.same([...new Set(spans.map((s) => s.service))].sort(), ['commerce-sync-receiver', 'commerce-sync-worker'], 'across both processes');
  t.equal(named('POST /webhooks/:connection').kind, 2, 'the delivery is a server span');
  t.notOk(named('POST /webhooks/:connection').parentSpanId, 'and the root of the trace');
  t.equal(attr(named('POST /webhooks/:connection'), 'commerce.connection'), shop!.name, 'naming its connection');
  const event = String(attr(named('POST /webhooks/:connection'), 'commerce.event'));
  t.ok(/^\w+\.\w+$/.test(event), `and its event (${event})`);
  t.equal(named('webhook commit').parentSpanId, named('POST /webhooks/:connection').spanId, 'the commit is in the request');
  // The intake of a batch continues its first delivery's trace and links the others' (the adjustment's own
  // delivery may come first).
  const intake = otlp.spans.filter((s) => s.name === 'deliveries intake');
  t.ok(
    intake.some((s) => s.traceId === traceId || s.links?.some((l) => l.traceId === traceId)),
    'the intake of the delivery is in the trace or linked to it',
  );
  t.equal(named('GET /variants').kind, 3, 'the API read is a client span');
  t.equal(named('GET /variants').parentSpanId, named('drain variant').spanId, 'of the drain');
  t.ok(
    named('GET /variants').events?.some((e) => e.name === 'rate budget granted'),
    "with the rate budget's wait as an event",
  );
  t.equal(named('mirror write').parentSpanId, named('drain variant').spanId, 'the mirror write is the drain’s');
  t.ok(
    spans.some((s) => s.name.startsWith('pg.query') && s.parentSpanId === named('mirror write').spanId),
    'and its statements are spans of their own (instrumentation-pg)',
  );
  t.equal(named('POST channel destination').kind, 3);
  t.equal(
    named('POST channel destination').parentSpanId,
    named('mirror write').spanId,
    'the POST continues the mirror write that made its change',
  );
  t.equal(traceparent.split('-')[2], named('POST channel destination').spanId, "the channel's traceparent names our POST span");
  const forbidden = spans
    .flatMap((s) => (s.attributes ?? []).map((a) => JSON.stringify(a.value)))
    .filter((v) => v.includes(secret) || v.includes('whsec_'));
  t.same(forbidden, [], 'no secret in any attribute');

  const logged = await db.selectFrom('sync_log').select(['action', 'trace_id']).where('trace_id', '=', traceId).execute();
  t.ok(
    logged.some((e) => e.action === 'fetch'),
    `the sync log's entries of the drain carry the trace id (${logged.map((e) => e.action).join(', ')})`,
  );

  // Five moves made at once: their deliveries are coalesced into a drain or two, and each POST carrying them
  // continues the trace of the mirror write that made its first change, which holds a delivery, the drain and its read.
  // Five variants the channel lists with a tracked quantity and no cap (max_online), so that stock added moves each one's.
  const tracked = new Set(
    (
      await db
        .selectFrom('channel_quantities')
        .select('variant_id')
        .where('channel_id', '=', channelId)
        .where('tracked', '=', true)
        .where('listed', '=', true)
        .execute()
    ).map((q) => Number(q.variant_id)),
  );
  const five = (await shop!.snapshot('variants'))
    .filter((v) => v.sku && tracked.has(Number(v.id)) && v.max_online == null && v.id !== variant.id)
    .slice(0, 5);
  t.equal(five.length, 5, 'five tracked variants to move');
  const mark = posts.length;
  await Promise.all(
    five.map((v) =>
      merchantApi(shop!.sandbox)('POST', '/stock_adjustments', {
        // Stock added: a channel's quantity moves whatever the variant had (taken from none, it would stay 0).
        stock_adjustment: {
          stock_location_id: location,
          reason: 'supplier',
          stock_adjustment_line_items: [{ variant_id: v.id, quantity: 5, price: '1.00' }],
        },
      }),
    ),
  );
  const carrying = () => posts.slice(mark).filter((p) => p.skus.some((sku) => five.some((v) => v.sku === sku)));
  await until(
    'the POSTs of the five moves',
    () =>
      five.every((v) => carrying().some((p) => p.skus.includes(v.sku))) ||
      `${carrying().length} POSTs so far, without ${five
        .filter((v) => !carrying().some((p) => p.skus.includes(v.sku)))
        .map((v) => v.sku)
        .join(', ')}`,
    60_000,
  );
  for (const p of carrying()) {
    const id = (p.traceparent ?? '').split('-')[1]!;
    const trace = () => otlp.spans.filter((x) => x.traceId === id);
    await until(
      `the trace of the POST carrying ${p.skus.join(', ')}`,
      () => wanted.every((n) => trace().some((x) => x.name === n)) || `has ${[...new Set(trace().map((x) => x.name))].join(', ')}`,
      30_000,
    );
    const post = trace().find((x) => x.name === 'POST channel destination' && x.spanId === p.traceparent!.split('-')[2])!;
    const write = trace().find((x) => x.spanId === post.parentSpanId);
    t.equal(write?.name, 'mirror write', `the POST of ${p.skus.length} change(s) continues a mirror write`);
    const drain = trace().find((x) => x.spanId === write?.parentSpanId);
    t.equal(drain?.name, 'drain variant', 'of a drain');
    t.ok(
      trace().some((x) => x.name === 'GET /variants' && x.parentSpanId === drain?.spanId),
      "whose API read is in the POST's trace",
    );
    t.ok(
      trace().some((x) => x.name === 'POST /webhooks/:connection'),
      'as is a delivery the drain read for',
    );
  }

  // The console links the traced entries to the team's backend.
  const operator = 'an-operator-token-for-the-trace-test';
  const console = await world.spawn('start', {
    ROLES: 'console',
    OPERATOR_TOKEN: operator,
    TRACE_URL_TEMPLATE: 'https://traces.example/trace/{trace_id}',
  });
  const page = await fetch(`${console.url}/logs?sku=${encodeURIComponent(variant.sku)}`, {
    headers: { authorization: `Bearer ${operator}` },
  }).then((r) => r.text());
  t.ok(page.includes(`href="https://traces.example/trace/${traceId}"`), 'the sync log page links the entry to its trace');
  t.ok(
    [...otlp.paths].every((p) => p.startsWith('POST /v1/traces application/json')),
    `exported as OTLP/HTTP JSON to /v1/traces (${[...otlp.paths].join('; ')})`,
  );
});
