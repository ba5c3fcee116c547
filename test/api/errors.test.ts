// The 422 body as documented, `{"errors": {...}}` with no top-level `error` (real-service-notes §6), parsed into
// field errors like the spec's shape (`error` plus `errors`, test/api/http.test.ts).
import t from 'tap';
import { ApiError } from '../../src/api/index.ts';
import { errorDetails } from '../../src/api/http.ts';
import { PROFILES, sandboxProfile } from '../support/sandbox.ts';
import { setup } from './harness.ts';

t.test('a documented 422 body gives field errors and a message naming them', async (t) => {
  const body = { errors: { name: ["can't be blank"], product_id: ['is required', 'must exist'] } };
  t.same(errorDetails(body, JSON.stringify(body)), {
    message: null,
    fieldErrors: { name: ["can't be blank"], product_id: ['is required', 'must exist'] },
  });
  const e = new ApiError(null, { status: 422, method: 'POST', path: '/products', fieldErrors: errorDetails(body, '').fieldErrors });
  t.equal(e.message, "POST /products: 422 request invalid (name: can't be blank; product_id: is required, must exist)");
});

for (const profile of PROFILES) {
  t.test(`${profile}: a refused create reaches the caller as field errors`, async (t) => {
    const s = await setup(t, { sandbox: { variants: 2, ...sandboxProfile(profile) } });
    const err = await s.client.request('POST', '/products', { body: { product: { brand: 'nameless' } } }).catch((e) => e);
    t.ok(err instanceof ApiError);
    t.equal(err.status, 422);
    t.match(err.fieldErrors, { name: [/blank|required/] });
    t.match(err.message, /POST \/products: 422 request invalid.*\(name: /);
  });
}
