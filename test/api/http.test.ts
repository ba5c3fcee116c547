import t from 'tap';
import { mkdtemp, stat, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildUrl, errorDetails, keyFromPath, parseJson, parsePagination, queryString } from '../../src/api/http.ts';
import { splitBody, splitIds } from '../../src/api/reads.ts';
import { decryptToken, encryptToken, tokenKey } from '../../src/api/secrets.ts';
import { ApiError } from '../../src/api/errors.ts';
import { splitPathQuery } from '../../src/connect.ts';

t.test('query strings: integer lists comma-separated, others name[]', async (t) => {
  t.equal(
    queryString({ ids: [1, 2, 3], limit: 250, status: 'archived', sku: ['A B', 'C'], skip: undefined, none: null }),
    'ids=1,2,3&limit=250&status=archived&sku[]=A%20B&sku[]=C',
  );
  t.equal(buildUrl('http://h/api/', 'variants', { limit: 1 }), 'http://h/api/variants?limit=1');
  t.equal(buildUrl('http://h', '/variants?x=1', { limit: 1 }), 'http://h/variants?x=1&limit=1');
});

t.test('ids split at 250 and at the URI length, never over either', async (t) => {
  const ids = Array.from({ length: 1000 }, (_, i) => 1_000_000 + i);
  const url = (chunk: number[]) => buildUrl('http://127.0.0.1:1234', '/variants', { ids: chunk, limit: 250, page: 1 });
  const byCount = splitIds(url, ids, 100_000);
  t.same(
    byCount.map((c) => c.length),
    [250, 250, 250, 250],
  );
  const byLength = splitIds(url, ids, 1000);
  t.ok(byLength.length > 4);
  for (const c of byLength) t.ok(url(c).length <= 1000, `uri of ${c.length} ids is ${url(c).length}`);
  t.same(byLength.flat(), ids, 'every id once, in order');
  t.ok(url(byLength[0]!.concat(byLength[1]![0]!)).length > 1000, 'chunks are filled');
  t.throws(() => splitIds(url, [1], 10));
});

t.test('JSON: decimals stay exact strings, ids stay numbers', async (t) => {
  const v = parseJson('{"id": 12, "quantity": 1.10, "stock_on_hand": 5, "rate": "0.5", "big": 12345678901234567890, "n": 3}') as any;
  t.same(v, { id: 12, quantity: '1.10', stock_on_hand: '5', rate: '0.5', big: '12345678901234567890', n: 3 });
});

t.test('X-Pagination, keys and error bodies are read tolerantly', async (t) => {
  t.same(parsePagination('{"total_records":"600","total_pages":3,"first_page":true,"last_page":false,"out_of_bounds":false,"offset":0}'), {
    total_records: 600,
    total_pages: 3,
    first_page: true,
    last_page: false,
    out_of_bounds: false,
    offset: 0,
  });
  t.equal(parsePagination('not json'), null);
  t.equal(parsePagination(null), null);
  t.equal(keyFromPath('/variants'), 'variants');
  t.equal(keyFromPath('/variants/composition?ids=1'), 'composition');
  t.equal(keyFromPath('/orders/12'), 'orders');
  t.same(errorDetails({ error: 'bad', errors: { name: ['is required'] } }, ''), { message: 'bad', fieldErrors: { name: ['is required'] } });
  t.same(errorDetails(null, 'Oops'), { message: 'Oops', fieldErrors: null });
  const e = new ApiError(null, {
    status: 422,
    method: 'POST',
    path: '/companies',
    requestId: 'r1',
    serviceMessage: 'invalid',
    fieldErrors: { name: ['blank'] },
  });
  t.match(e.message, /POST \/companies: 422 request invalid: invalid \(name: blank\) \[X-Request-ID r1\]/);
});

t.test('bodies: records under the key, other arrays are sideloads, null is empty', async (t) => {
  t.same(splitBody({ product: { id: 1 }, variants: [{ id: 2 }], meta: 1 }, 'product'), {
    records: [{ id: 1 }],
    sideloads: { variants: [{ id: 2 }] },
  });
  t.same(splitBody({ variants: null }, 'variants'), { records: [], sideloads: {} });
  t.same(splitBody(null, 'variants'), { records: [], sideloads: {} });
});

t.test('tokens at rest: AES-256-GCM round trip, key file created once with mode 600', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cs-key-'));
  const key = tokenKey({ TOKEN_ENCRYPTION_KEY: '', DATA_DIR: dir });
  const file = join(dir, 'secret.key');
  t.equal((await stat(file)).mode & 0o777, 0o600);
  t.same(tokenKey({ TOKEN_ENCRYPTION_KEY: '', DATA_DIR: dir }), key, 'the same key next time');
  const enc = encryptToken(key, 'secret-token');
  t.notOk(enc.includes('secret-token'));
  t.not(encryptToken(key, 'secret-token'), enc, 'a fresh IV each time');
  t.equal(decryptToken(key, enc), 'secret-token');
  const other = tokenKey({ TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'), DATA_DIR: dir });
  t.throws(() => decryptToken(other, enc), /cannot be decrypted/);
  t.notOk((await readFile(file, 'utf8')).includes('secret-token'));
});

t.test('api command: query in the path becomes the query', async (t) => {
  t.same(splitPathQuery('/variants?ids=1,2&sku[]=a&sku[]=b'), { path: '/variants', query: { ids: '1,2', sku: ['a', 'b'] } });
  t.same(splitPathQuery('/accounts/current'), { path: '/accounts/current', query: {} });
});
