import t from 'tap';
import { sandbox } from './harness.ts';

t.test('Common list behaviour', async (t) => {
  const c = await sandbox(t, { variants: 120 });
  const all = (await c.get('/variants?limit=250')).body.variants as any[];
  const [a, b, d] = [all[0].id, all[5].id, all[9].id];

  t.test('Common list behaviour: ids accepts both forms', async (t) => {
    const comma = await c.get(`/variants?ids=${a},${b}`);
    const brackets = await c.get(`/variants?ids[]=${a}&ids[]=${b}`);
    t.same(comma.body.variants.map((v: any) => v.id).sort(), [a, b].sort());
    t.same(brackets.body.variants.map((v: any) => v.id).sort(), [a, b].sort());
    const bad = await c.get('/variants?ids=1,x');
    t.equal(bad.status, 400);
  });

  t.test('Common list behaviour: limit defaults to 50 and is at most 250 (more is 400); page pages', async (t) => {
    t.equal((await c.get('/variants')).body.variants.length, 50);
    t.equal((await c.get('/variants?limit=250')).body.variants.length, 120);
    const over = await c.get('/variants?limit=251');
    t.equal(over.status, 400, 'announced in tradegecko/smaug: source/changes.html.md');
    t.match(over.body, { error: /at most 250/ });
    const p2 = await c.get('/variants?limit=50&page=2');
    t.same(
      p2.body.variants.map((v: any) => v.id),
      all.slice(50, 100).map((v) => v.id),
    );
    t.equal((await c.get('/variants?limit=0')).status, 400);
  });

  t.test('Common list behaviour: X-Pagination carries exactly its six fields', async (t) => {
    const r = await c.get('/variants?limit=50&page=3');
    const p = JSON.parse(r.headers.get('x-pagination')!);
    t.same(Object.keys(p).sort(), ['first_page', 'last_page', 'offset', 'out_of_bounds', 'total_pages', 'total_records']);
    t.same(p, { total_records: 120, total_pages: 3, first_page: false, last_page: true, out_of_bounds: false, offset: 100 });
    const out = JSON.parse((await c.get('/variants?page=9')).headers.get('x-pagination')!);
    t.equal(out.out_of_bounds, true);
    for (const path of ['/orders', '/companies', '/webhooks', '/addresses', '/variants/composition', '/users', '/price_lists']) {
      t.ok((await c.get(path)).headers.get('x-pagination'), `${path} carries X-Pagination`);
    }
    t.equal((await c.get(`/variants/${a}`)).headers.get('x-pagination'), null, 'a single record has none');
  });

  t.test('Common list behaviour: lists are most recent first by default', async (t) => {
    const created = all.map((v) => v.created_at);
    t.same(created, [...created].sort().reverse());
    const made = await c.call('POST', '/variants', { variant: { product_id: all[0].product_id, sku: 'NEWEST' } });
    t.equal((await c.get('/variants?limit=1')).body.variants[0].id, made.body.variant.id);
  });

  t.test('Common list behaviour: order sorts by a field asc or desc', async (t) => {
    const asc = (await c.get('/variants?order=sku asc&limit=250')).body.variants.map((v: any) => v.sku);
    t.same(asc, [...asc].sort());
    const desc = (await c.get('/variants?order=id%20desc&limit=5')).body.variants.map((v: any) => v.id);
    t.same(
      desc,
      [...desc].sort((x: number, y: number) => y - x),
    );
    t.equal((await c.get('/variants?order=sku;drop')).status, 400);
  });

  t.test('Common list behaviour: time bounds on created_at and updated_at', async (t) => {
    const mid = all[60].created_at;
    const after = (await c.get(`/variants?created_at_min=${mid}&limit=250`)).body.variants;
    t.ok(after.length > 0 && after.every((v: any) => v.created_at >= mid));
    const before = (await c.get(`/variants?created_at_max=${mid}&limit=250`)).body.variants;
    t.ok(before.every((v: any) => v.created_at <= mid));
    const upd = (await c.get(`/variants?updated_at_min=${encodeURIComponent(new Date(Date.now() - 60_000).toISOString())}&limit=250`)).body
      .variants;
    t.ok(upd.every((v: any) => Date.parse(v.updated_at) >= Date.now() - 60_000 - 1000));
    t.equal((await c.get('/variants?updated_at_min=yesterday')).status, 400);
  });

  t.test('Common list behaviour: status defaults to active, archived returns soft-deleted records', async (t) => {
    t.equal((await c.call('DELETE', `/variants/${d}`)).status, 204);
    t.notOk((await c.get('/variants?limit=250')).body.variants.some((v: any) => v.id === d));
    const arch = (await c.get('/variants?status=archived')).body.variants;
    t.same(
      arch.map((v: any) => v.id),
      [d],
    );
    t.equal(arch[0].status, 'archived');
    t.equal((await c.get(`/variants/${d}`)).body.variant.status, 'archived', 'still readable by id');
  });

  t.test('Common list behaviour: name[]= repetition and comma-separated integer filters', async (t) => {
    const p1 = all[0].product_id,
      p2 = all[20].product_id;
    const comma = (await c.get(`/variants?product_id=${p1},${p2}&limit=250`)).body.variants;
    const rep = (await c.get(`/variants?product_id[]=${p1}&product_id[]=${p2}&limit=250`)).body.variants;
    t.ok(comma.length >= 2);
    t.ok(comma.every((v: any) => v.product_id === p1 || v.product_id === p2));
    t.same(
      rep.map((v: any) => v.id),
      comma.map((v: any) => v.id),
    );
    const skus = (await c.get(`/variants?sku[]=${all[1].sku}&sku[]=${all[2].sku}`)).body.variants;
    t.same(skus.map((v: any) => v.sku).sort(), [all[1].sku, all[2].sku].sort());
    const st = (await c.get('/variants?status[]=active&status[]=archived&limit=250')).body.variants;
    t.ok(st.some((v: any) => v.status === 'archived') && st.some((v: any) => v.status === 'active'));
  });

  t.test('Common list behaviour: filters are combined with AND', async (t) => {
    const p = all[0].product_id;
    const both = (await c.get(`/variants?product_id=${p}&sku=${all[0].sku}`)).body.variants;
    t.same(
      both.map((v: any) => v.id),
      [all[0].id],
    );
    const none = (await c.get(`/variants?product_id=${p}&sku=${all[100].sku}`)).body.variants;
    t.equal(none.length, 0);
  });

  t.test('Common list behaviour: resource filters (company_id, company_type, order_id)', async (t) => {
    const suppliers = (await c.get('/companies?company_type=supplier')).body.companies;
    t.ok(suppliers.length > 0 && suppliers.every((x: any) => x.company_type === 'supplier'));
    const co = suppliers[0].id;
    const addrs = (await c.get(`/addresses?company_id=${co}`)).body.addresses;
    t.ok(addrs.length > 0 && addrs.every((x: any) => x.company_id === co));
    const order = (await c.get('/orders?limit=1')).body.orders[0];
    const lines = (await c.get(`/order_line_items?order_id=${order.id}`)).body.order_line_items;
    t.same(lines.map((l: any) => l.id).sort(), [...order.order_line_item_ids].sort());
  });

  t.test('Common list behaviour: include sideloads related records on lists and single GETs', async (t) => {
    const list = await c.get('/variants?limit=2&include=product');
    t.same(list.body.products.map((p: any) => p.id).sort(), [...new Set(list.body.variants.map((v: any) => v.product_id))].sort());
    const one = await c.get(`/products/${all[0].product_id}?include=variants`);
    t.ok(one.body.product);
    t.same(one.body.variants.map((v: any) => v.id).sort(), [...one.body.product.variant_ids].sort());
    const none = await c.get(`/products/${all[0].product_id}`);
    t.notOk('variants' in none.body);
  });

  t.test('Common list behaviour: a request URI longer than the maximum gets 414', async (t) => {
    const ids = Array.from({ length: 2000 }, (_, i) => i + 1).join(',');
    const r = await c.get(`/variants?ids=${ids}`);
    t.equal(r.status, 414);
    t.ok(r.headers.get('x-request-id'));
    const huge = await c.get(`/variants?ids=${Array.from({ length: 20000 }, (_, i) => i + 1).join(',')}`);
    t.equal(huge.status, 414, "also beyond node's own 16 KiB header limit (which answers 431)");
    t.equal((await c.get(`/variants?ids=${ids.slice(0, 7000)}`)).status, 200, 'just under 8 KiB is fine');
  });
});

t.test('Common list behaviour: the maximum URI length is configurable', async (t) => {
  const c = await sandbox(t, { variants: 2, maxUriLength: 300 });
  t.equal((await c.get(`/variants?ids=${'1,'.repeat(200)}1`)).status, 414);
  t.equal((await c.get('/variants?ids=1,2')).status, 200);
});

t.test('listOrder updated: most recent first by update time; an explicit order= still wins', async (t) => {
  const c = await sandbox(t, { variants: 30, listOrder: 'updated' });
  const before = (await c.get('/variants?limit=250')).body.variants as any[];
  const oldest = before.at(-1);
  await new Promise((r) => setTimeout(r, 5)); // a later millisecond than every seeded record
  const put = await c.call('PUT', `/variants/${oldest.id}`, { variant: { name: 'moved to the front' } });
  t.ok(put.status < 300, `PUT answered ${put.status}`);
  const after = (await c.get('/variants?limit=250')).body.variants as any[];
  t.equal(after[0].id, oldest.id, 'the record just updated comes first');
  const stamps = after.map((v) => v.updated_at);
  t.same(stamps, [...stamps].sort().reverse(), 'sorted by updated_at, newest first');
  const byId = (await c.get('/variants?order=id%20asc&limit=250')).body.variants.map((v: any) => v.id);
  t.same(
    byId,
    [...byId].sort((x: number, y: number) => x - y),
    'order=id asc is stable whatever the default',
  );
  const created = (await sandbox(t, { variants: 30 }).then((d) => d.get('/variants?limit=250'))).body.variants.map(
    (v: any) => v.created_at,
  );
  t.same(created, [...created].sort().reverse(), 'the default stays by creation');
});

t.test('clockSkewSeconds moves the Date header, not webhook or record stamps; the admin API sets it', async (t) => {
  const c = await sandbox(t, { variants: 5, clockSkewSeconds: 3 });
  const date = (r: { headers: Headers }) => Date.parse(r.headers.get('date')!);
  const ahead = await c.get('/variants?limit=1');
  const now = Date.parse((await c.admin('POST', 'clock', {})).body.now);
  t.ok(date(ahead) - now >= 1000 && date(ahead) - now <= 4000, `Date runs 3 s ahead (${date(ahead) - now} ms)`);
  const id = ahead.body.variants[0].id;
  await c.call('PUT', `/variants/${id}`, { variant: { name: 'stamped' } });
  const stamped = Date.parse((await c.get(`/variants/${id}`)).body.variant.updated_at);
  t.ok(Math.abs(stamped - now) < 1000, `records keep the service clock (${stamped - now} ms from it)`);
  const set = await c.admin('POST', 'clock', { skew_seconds: -3 });
  t.equal(set.body.skew_seconds, -3);
  const behind = await c.get('/variants?limit=1');
  const now2 = Date.parse((await c.admin('POST', 'clock', {})).body.now);
  t.ok(now2 - date(behind) >= 2000 && now2 - date(behind) <= 5000, `Date runs 3 s behind (${now2 - date(behind)} ms)`);
  t.equal((await c.admin('POST', 'clock', { skew_seconds: 'x' })).status, 422);
});
