// Tokens and account states against the sandbox: encryption at rest, OAuth refresh in the middle of a read,
// one refresh for many callers, refused refresh, revoked privileged token (401), lapsed subscription (402).
import t from 'tap';
import { addTokenConnection, clientFor, getConnection, probeLapsed } from '../../src/api/connections.ts';
import { startSandbox } from '@commerce-sync/sandbox';
import { ApiError } from '../../src/api/errors.ts';
import { decryptToken } from '../../src/api/secrets.ts';
import { needsRefresh } from '../../src/api/tokens.ts';
import { collect, oauthConnection, setup, TEST_KEY } from './harness.ts';

t.test('tokens are encrypted at rest: no column holds the plain token', async (t) => {
  const s = await setup(t);
  const { rows } = await s.database.pool.query('SELECT row_to_json(c)::text AS j FROM connections c');
  t.equal(rows.length, 1);
  t.notOk(rows[0].j.includes(s.sandbox.token), 'plain token absent from the row');
  t.match(s.connection.access_token_enc, /^v1:/);
  t.equal(decryptToken(Buffer.from(TEST_KEY, 'base64'), s.connection.access_token_enc!), s.sandbox.token);
  t.equal(s.connection.account_id, (await s.client.get('/accounts/current')).account.id);
  t.notOk(s.logs.text().includes(s.sandbox.token), 'never logged');
});

t.test('refresh ahead of expiry: a quarter of the lifetime, at most five minutes', async (t) => {
  const now = Date.now();
  const c = (lifetimeS: number, leftS: number) => ({
    auth_kind: 'oauth' as const,
    token_refreshed_at: new Date(now - (lifetimeS - leftS) * 1000),
    token_expires_at: new Date(now + leftS * 1000),
  });
  t.equal(needsRefresh(c(7200, 400), now), false);
  t.equal(needsRefresh(c(7200, 200), now), true);
  t.equal(needsRefresh(c(60, 20), now), false);
  t.equal(needsRefresh(c(60, 10), now), true);
  t.equal(needsRefresh({ auth_kind: 'token', token_refreshed_at: null, token_expires_at: null }, now), false);
});

t.test('OAuth: the token expires in the middle of a paginated read; one refresh, the read completes', async (t) => {
  const s = await setup(t, { sandbox: { variants: 600, manualClock: true, tokenExpiresIn: 600 } });
  const { deps, connection } = await oauthConnection(s);
  t.equal(connection.auth_kind, 'oauth');
  const client = await clientFor(deps, connection, { backoffBaseMs: 10 });
  const refreshBefore = connection.refresh_token_enc;
  const accessBefore = connection.access_token_enc;
  const ids: number[] = [];
  let pages = 0;
  for await (const page of client.paginate<any>('/variants')) {
    ids.push(...page.records.map((v) => v.id));
    if (++pages === 1) await s.admin('POST', 'clock', { advance_seconds: 700 });
  }
  t.ok(pages >= 3);
  t.equal(new Set(ids).size, ids.length);
  const expected = (await s.admin('GET', 'snapshot?resource=variants')).variants.filter((v: any) => v.status !== 'archived').length;
  t.equal(ids.length, expected);
  t.equal((await s.stats()).requests.by_status['401'], 1, 'one 401, then the refreshed token');
  const row = (await getConnection(s.database.db, connection.id))!;
  t.equal(row.status, 'active');
  t.not(row.refresh_token_enc, refreshBefore, 'the rotated refresh token was stored');
  t.not(row.access_token_enc, accessBefore);
});

t.test('OAuth: a short-lived token is refreshed ahead of expiry, before any 401', async (t) => {
  // timeScale 100: the sandbox's 300-second token lives 3 real seconds; refreshed with a quarter left.
  const s = await setup(t, { sandbox: { timeScale: 100, tokenExpiresIn: 300 } });
  const { deps, connection } = await oauthConnection(s);
  const client = await clientFor(deps, connection);
  for (let i = 0; i < 9; i++) {
    await client.get('/accounts/current');
    await new Promise((r) => setTimeout(r, 400));
  }
  t.notOk((await s.stats()).requests.by_status['401'], 'never refused');
  t.ok(s.logs.lines().filter((l) => l.msg === 'access token refreshed').length >= 1, 'refreshed on its own');
});

t.test('OAuth: many callers in separate clients hit an expired token at once; one refresh serves all', async (t) => {
  const s = await setup(t, { sandbox: { manualClock: true, tokenExpiresIn: 600 } });
  const { deps, connection } = await oauthConnection(s);
  const clients = await Promise.all(Array.from({ length: 4 }, () => clientFor(deps, connection.id, { backoffBaseMs: 10 })));
  await s.admin('POST', 'clock', { advance_seconds: 700 });
  // The sandbox rotates refresh tokens: a second refresh with the old one would be refused (invalid_grant).
  const answers = await Promise.all(clients.map((c) => c.get('/accounts/current')));
  t.equal(answers.length, 4);
  const row = (await getConnection(s.database.db, connection.id))!;
  t.equal(row.status, 'active', row.status_reason ?? '');
  const refreshed = s.logs.lines().filter((l) => l.msg === 'access token refreshed').length;
  t.equal(refreshed, 1, 'exactly one token call');
});

t.test('OAuth: a refused refresh marks the connection unauthorized with the reason', async (t) => {
  const s = await setup(t, { sandbox: { manualClock: true, tokenExpiresIn: 600 } });
  const { deps, connection } = await oauthConnection(s);
  const client = await clientFor(deps, connection);
  const refresh = decryptToken(Buffer.from(TEST_KEY, 'base64'), connection.refresh_token_enc!);
  await s.admin('POST', 'revoke', { token: refresh });
  await s.admin('POST', 'clock', { advance_seconds: 700 });
  const err = await client.get('/accounts/current').catch((e) => e);
  t.ok(err instanceof ApiError);
  t.equal(err.status, 401);
  const row = (await getConnection(s.database.db, connection.id))!;
  t.equal(row.status, 'unauthorized');
  t.match(row.status_reason, /token refresh refused by the service \(400 .*invalid/);
  const before = (await s.stats()).requests.total;
  const again = await client.get('/accounts/current').catch((e) => e);
  t.equal(again.status, 401);
  t.equal((await s.stats()).requests.total, before, 'nothing more is sent');
});

t.test('a revoked privileged token: 401, connection unauthorized, no refresh attempted', async (t) => {
  const s = await setup(t);
  await s.admin('POST', 'revoke', { token: s.sandbox.token });
  const err = await s.client.get('/accounts/current').catch((e) => e);
  t.ok(err instanceof ApiError);
  t.equal(err.status, 401);
  const row = (await getConnection(s.database.db, 'shop'))!;
  t.equal(row.status, 'unauthorized');
  t.match(row.status_reason, /privileged access token/);
  t.equal((await s.stats()).requests.by_status['401'], 1);
});

t.test('402: the connection is marked lapsed and stops spending, in every process', async (t) => {
  const s = await setup(t);
  await collect(s.client.paginate('/variants'));
  await s.admin('POST', 'account', { lapsed: true });
  const err = await s.client.get('/variants').catch((e) => e);
  t.ok(err instanceof ApiError);
  t.equal(err.status, 402);
  t.ok(err.requestId);
  const row = (await getConnection(s.database.db, 'shop'))!;
  t.equal(row.status, 'lapsed');
  t.match(row.status_reason, /402/);
  const total = (await s.stats()).requests.total;
  const other = await clientFor(s.deps, 'shop'); // a fresh client, as another process would make
  const again = await other.get('/variants').catch((e) => e);
  t.equal(again.status, 402);
  t.match(again.message, /lapsed/);
  t.equal((await s.stats()).requests.total, total, 'nothing sent after the 402');
});

t.test('402: a lapsed connection is probed and becomes active again once the service answers', async (t) => {
  const s = await setup(t);
  await s.admin('POST', 'account', { lapsed: true });
  await s.client.get('/variants').catch(() => {});
  t.equal((await getConnection(s.database.db, 'shop'))!.status, 'lapsed');
  t.same(await probeLapsed(s.deps), [], 'still lapsed: stays lapsed');
  t.equal((await getConnection(s.database.db, 'shop'))!.status, 'lapsed');
  await s.admin('POST', 'account', { lapsed: false });
  t.same(await probeLapsed(s.deps), ['shop']);
  const row = (await getConnection(s.database.db, 'shop'))!;
  t.equal(row.status, 'active');
  t.equal(row.status_reason, null);
  t.ok((await s.client.get('/variants')).variants.length > 0, 'the same client sends again');
});

t.test('connecting again renews a connection; a name never switches accounts', async (t) => {
  const s = await setup(t);
  await s.admin('POST', 'revoke', { token: s.sandbox.token });
  await s.client.get('/accounts/current').catch(() => {});
  t.equal((await getConnection(s.database.db, 'shop'))!.status, 'unauthorized');
  const { token } = await s.admin('POST', 'tokens', {});
  const again = await addTokenConnection(s.deps, { baseUrl: s.sandbox.url, token });
  t.equal(again.name, 'shop', 'same base URL and account: the same connection');
  t.equal(again.status, 'active');
  t.equal(again.status_reason, null);
  t.ok((await clientFor(s.deps, 'shop').then((c) => c.get('/accounts/current'))).account, 'usable again');
  const other = await startSandbox();
  t.teardown(() => other.close());
  const err = await addTokenConnection(s.deps, { baseUrl: other.url, token: other.token, name: 'shop' }).catch((e) => e);
  t.match(err.message, /connection shop is account \d+ at http:\/\/127\.0\.0\.1:\d+; choose another --name/);
  const second = await addTokenConnection(s.deps, { baseUrl: other.url, token: other.token });
  t.not(second.name, 'shop', `a second account gets its own name (${second.name})`);
});
