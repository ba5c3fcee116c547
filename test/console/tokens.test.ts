// A personal token can't outlive the right it was made with, end to end through the API: the open demo console
// makes none (so none survives into a deployment that closes it), a token made with OPERATOR_TOKEN ends when that
// token is replaced, and a token made by a token ends with it (revoked with it, expiring no later). A person's
// tokens and their current role: test/console/oidc.test.ts.
import t from 'tap';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { testConsole } from '../support/runtime.ts';
import { consoleServer } from './harness.ts';

const FIRST = 'first-break-glass-token-0123456789';
const SECOND = 'second-break-glass-token-0123456789';

const caller = (base: string) => async (token: string | null, method: string, path: string, body?: unknown) => {
  const res = await fetch(base + path, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
};

t.test('the open demo console makes no token, so none outlives it', async (t) => {
  const demo = await consoleServer(t, { demo: true });
  const call = caller(demo.base);
  t.equal((await call(null, 'GET', '/api/tokens')).status, 200, 'the demo console is open on localhost');
  const made = await call(null, 'POST', '/api/tokens', { name: 'forever', role: 'admin', expires_in_days: 3650 });
  t.equal(made.status, 403);
  t.match(made.body.error, /the open demo console makes no tokens: it lets in every user of this machine/);
  t.same(await demo.db.selectFrom('api_tokens').selectAll().execute(), [], 'nothing was stored');

  // The same data behind a closed console: there is no token to carry the demo's rights over.
  const config = testConfig({ OPERATOR_TOKEN: FIRST, DATABASE_URL: demo.tdb.url });
  const { server } = await testConsole(t, demo.tdb, config, captureLogger('error').log);
  const closed = caller(`http://127.0.0.1:${server.port}`);
  t.equal((await closed(null, 'GET', '/api/tokens')).status, 401, 'closed once OPERATOR_TOKEN is set');
  t.same((await closed(FIRST, 'GET', '/api/tokens')).body.tokens, [], 'and no token from the demo');
});

t.test('a token made with OPERATOR_TOKEN ends when that token is replaced', async (t) => {
  const tdb = await testDatabase(t);
  const first = await testConsole(t, tdb, testConfig({ OPERATOR_TOKEN: FIRST, DATABASE_URL: tdb.url }), captureLogger('error').log);
  const before = caller(`http://127.0.0.1:${first.server.port}`);
  const made = await before(FIRST, 'POST', '/api/tokens', { name: 'ops', role: 'admin' });
  t.equal(made.status, 201);
  t.equal((await before(made.body.token, 'GET', '/api/tokens')).status, 200, 'works while OPERATOR_TOKEN is the one it was made with');

  const second = await testConsole(t, tdb, testConfig({ OPERATOR_TOKEN: SECOND, DATABASE_URL: tdb.url }), captureLogger('error').log);
  const after = caller(`http://127.0.0.1:${second.server.port}`);
  t.equal((await after(made.body.token, 'GET', '/api/tokens')).status, 401, 'refused once OPERATOR_TOKEN is another');
  t.equal((await after(made.body.token, 'POST', '/api/tokens', { name: 'more', role: 'admin' })).status, 401, 'and mints nothing');
  t.equal((await after(SECOND, 'GET', '/api/tokens')).status, 200, 'the new break-glass token works');
});

t.test('a token made by a token ends with it: revoked with it, and expiring no later', async (t) => {
  const tdb = await testDatabase(t);
  const { server } = await testConsole(t, tdb, testConfig({ OPERATOR_TOKEN: FIRST, DATABASE_URL: tdb.url }), captureLogger('error').log);
  const call = caller(`http://127.0.0.1:${server.port}`);
  const parent = (await call(FIRST, 'POST', '/api/tokens', { name: 'parent', role: 'admin', expires_in_days: 10 })).body;
  const child = await call(parent.token, 'POST', '/api/tokens', { name: 'child', role: 'operator', expires_in_days: 3650 });
  t.equal(child.status, 201, 'an admin token makes a token');
  t.equal(child.body.expires_at, parent.expires_at, 'which expires no later than its parent');
  t.equal((await call(child.body.token, 'GET', '/api/overview')).status, 200, 'the child works');

  t.equal((await call(FIRST, 'DELETE', `/api/tokens/${parent.id}`)).status, 200, 'the parent is revoked');
  t.equal((await call(parent.token, 'GET', '/api/overview')).status, 401, 'the parent stops working');
  t.equal((await call(child.body.token, 'GET', '/api/overview')).status, 401, 'and so does its child');
  const rows = await tdb.db.selectFrom('api_tokens').select(['name', 'revoked_at']).orderBy('id').execute();
  t.ok(rows.length === 2 && rows.every((r) => r.revoked_at), 'both are listed revoked');
});
