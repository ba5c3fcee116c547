// Strings with SQL and HTML in every field a merchant or a delivery controls: stored verbatim through the whole
// loop (sandbox -> webhook -> receiver -> worker -> mirror), and rendered escaped on every console page that
// shows them (and on pages that echo them back from the query string).
import t from 'tap';
import { createHmac } from 'node:crypto';
import { sql } from 'kysely';
import { testConsole } from '../support/runtime.ts';
import { startLoop } from '../sync/harness.ts';

const OPERATOR = 'hostile-operator-token-0123';
// HTML that would run, SQL that would drop, quotes of every kind, a null-looking word, non-ASCII.
const H = `<script>alert(1)</script><img src=x onerror=alert(2)>'; DROP TABLE variants; -- " \` \\ %s {{7*7}} NULL ünï €`;
const RAW_MARKERS = ['<script>alert(1)</script>', '<img src=x onerror=alert(2)>'];

t.test('SQL and HTML in every field: stored verbatim, rendered escaped', async (t) => {
  const loop = await startLoop(t, { sandbox: { variants: 5 }, config: { OPERATOR_TOKEN: OPERATOR } });
  // The console on the same database, as `start` would mount it.
  const { server } = await testConsole(t, loop.tdb, loop.config, loop.logs.log);
  const consoleUrl = `http://127.0.0.1:${server.port}`;

  // The merchant names a product and a variant with hostile text in every text field.
  const unwrap = (b: any, key: string) => b?.[key] ?? b;
  const product = unwrap(
    (await loop.client.request('POST', '/products', { body: { product: { name: H, brand: H, description: H, product_type: H } } })).body,
    'product',
  );
  const sku = `${H}-sku`;
  const variant = unwrap(
    (
      await loop.client.request('POST', '/variants', {
        body: { variant: { product_id: product.id, name: H, sku, description: H } },
      })
    ).body,
    'variant',
  );
  await loop.until(
    'the hostile variant in the mirror',
    async () => (await sql`SELECT 1 FROM variants WHERE id = ${variant.id} AND sku IS NOT NULL`.execute(loop.tdb.db)).rows.length === 1,
  );
  const row = await loop.tdb.db
    .selectFrom('variants')
    .select(['sku', 'name', 'raw'])
    .where('id', '=', variant.id)
    .executeTakeFirstOrThrow();
  t.equal(row.sku, sku, 'sku stored verbatim');
  t.equal(row.name, H, 'name stored verbatim');
  t.equal((row.raw as any).description, H, 'the raw record keeps every field verbatim');
  t.ok(await loop.tdb.db.selectFrom('variants').select('id').executeTakeFirst(), 'the variants table is still there');

  // A genuine (signed) delivery whose every field is hostile.
  const body = JSON.stringify({ object_id: variant.id, event: H, timestamp: 1, resource_url: H });
  const deliveryId = `${H.replace(/[^\x20-\x7e]/g, '?')}-delivery`;
  const res = await fetch(`${await receiverUrl(loop)}/webhooks/shop`, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      'x-service-delivery': deliveryId,
      'x-service-signature': createHmac('sha256', loop.sandbox.clientSecret).update(body).digest('base64'),
    },
  });
  await res.arrayBuffer();
  t.ok(res.status === 200 || res.status === 400, `hostile delivery answered ${res.status}`);
  const stored = await loop.tdb.db
    .selectFrom('webhook_deliveries')
    .select(['delivery_id', 'body', 'event'])
    .where('delivery_id', '=', deliveryId)
    .executeTakeFirstOrThrow();
  t.equal(stored.body, body, 'delivery body stored byte for byte');
  t.equal(stored.delivery_id, deliveryId, 'delivery id stored verbatim');

  // Every page that can show these values, and pages that echo the query back.
  const q = encodeURIComponent(H);
  const pages = [
    '/',
    '/logs',
    `/logs?sku=${q}`,
    '/deliveries',
    `/deliveries?resource=${q}`,
    '/dead-letters',
    `/variants?sku=${q}`,
    `/variants/shop/${variant.id}`,
    `/variants?id=${variant.id}`,
    `/logs?record=${variant.id}&resource=variant`,
  ];
  let sawEscaped = 0;
  for (const path of pages) {
    const page = await fetch(consoleUrl + path, { headers: { authorization: `Bearer ${OPERATOR}`, accept: 'text/html' } });
    const html = await page.text();
    const label = path.length > 40 ? `${path.slice(0, path.indexOf('=') + 1)}<hostile>` : path;
    t.ok(page.status < 500, `${label}: ${page.status}`);
    for (const marker of RAW_MARKERS) t.notOk(html.includes(marker), `${label}: no raw ${marker.slice(0, 8)}... markup`);
    if (html.includes('&lt;script&gt;alert(1)&lt;/script&gt;')) sawEscaped++;
  }
  const record = await (
    await fetch(`${consoleUrl}/variants/shop/${variant.id}`, { headers: { authorization: `Bearer ${OPERATOR}` } })
  ).text();
  t.match(record, '&lt;script&gt;alert(1)&lt;/script&gt;', 'the variant page shows the name, escaped');
  t.ok(sawEscaped >= 3, `the hostile text is shown escaped on ${sawEscaped} pages`);
  const json = (await (
    await fetch(`${consoleUrl}/api/variants/shop/${variant.id}`, { headers: { authorization: `Bearer ${OPERATOR}` } })
  ).json()) as any;
  t.match(JSON.stringify(json), JSON.stringify(sku).slice(1, -1), 'the JSON API returns the value exactly');
});

/** The receiver of the loop listens where the webhooks were registered. */
async function receiverUrl(loop: Awaited<ReturnType<typeof startLoop>>): Promise<string> {
  const hooks = await loop.client.listWebhooks();
  return new URL(hooks[0].address).origin;
}
