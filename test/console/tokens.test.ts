// A personal token can't outlive the right it was made with, end to end through the API: the open demo console
// makes none (so none survives into a deployment that closes it), a token made with OPERATOR_TOKEN ends when that
// token is replaced, and a token made by a token ends with it (revoked with it, expiring no later). A person's
// tokens and their current role: test/console/oidc.test.ts.
import t from 'tap';
import { insertToken, listTokens, liveToken, revokeToken } from '../../src/db/people.ts';
import { testConfig } from '../support/config.ts';
import { runNode } from '../support/processes.ts';
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

t.test('no token outlives a revoked ancestor, however minting and revoking interleave', async (t) => {
  const tdb = await testDatabase(t);
  const { server } = await testConsole(t, tdb, testConfig({ OPERATOR_TOKEN: FIRST, DATABASE_URL: tdb.url }), captureLogger('error').log);
  const call = caller(`http://127.0.0.1:${server.port}`);
  for (let round = 0; round < 3; round++) {
    const parent = (await call(FIRST, 'POST', '/api/tokens', { name: `parent ${round}`, role: 'admin' })).body;
    const made: { id: number; token: string }[] = [];
    // Four loops mint with the parent, or with the last token they made (grandchildren), until refused.
    const loop = async () => {
      let using = parent.token as string;
      for (let i = 0; i < 200; i++) {
        const child = await call(using, 'POST', '/api/tokens', { name: `child ${round}.${i}`, role: 'admin' });
        if (child.status !== 201) return;
        made.push(child.body);
        using = i % 2 ? parent.token : child.body.token;
      }
    };
    const loops = [loop(), loop(), loop(), loop()];
    while (made.length < 8) await new Promise((r) => setTimeout(r, 5));
    t.equal((await call(FIRST, 'DELETE', `/api/tokens/${parent.id}`)).status, 200, `round ${round}: the parent is revoked mid-minting`);
    await Promise.all(loops);
    // Refused is 401, or 429 once this address has sent OPERATOR_LOGIN_FAILURES refused tokens.
    const live = [];
    for (const m of made) if ((await call(m.token, 'GET', '/api/tokens')).status === 200) live.push(m.id);
    t.same(live, [], `round ${round}: none of its ${made.length} descendants is let in`);
    const listed = (await call(FIRST, 'GET', '/api/tokens')).body.tokens as { id: number; revoked_at: string | null }[];
    const ids = new Set([parent.id, ...made.map((m) => m.id)]);
    t.same(
      listed.filter((l) => ids.has(l.id) && !l.revoked_at).map((l) => l.id),
      [],
      `round ${round}: the list shows every one of them revoked`,
    );
  }
});

t.test('a child committed after its parent was revoked is refused (the interleaving the recursive revoke misses)', async (t) => {
  const tdb = await testDatabase(t);
  const token = (name: string, parentId: number | null, digest: string) => ({
    name,
    person: 'ops',
    role: 'admin' as const,
    digest,
    expiresAt: new Date(Date.now() + 86_400_000),
    origin: { madeBy: 'cli' as const, parentId },
  });
  const parent = (await insertToken(tdb.db, token('parent', null, 'p'.repeat(64))))!;
  // The child's transaction has inserted but not committed when the revoke runs: the revoke cannot see it.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let inserted!: () => void;
  const ready = new Promise<void>((r) => (inserted = r));
  const child = tdb.db.transaction().execute(async (tx) => {
    const row = await insertToken(tx, token('child', parent.id, 'c'.repeat(64)));
    inserted();
    await held;
    return row;
  });
  await ready;
  t.ok(await revokeToken(tdb.db, parent.id), 'the parent is revoked');
  release();
  t.ok(await child, 'the child was committed after the revoke');
  t.equal(await liveToken(tdb.db, 'c'.repeat(64)), undefined, 'the child is not live: its parent is revoked');
  t.ok(
    (await listTokens(tdb.db)).every((r) => r.revoked_at),
    'and it is listed revoked',
  );
  t.equal(await insertToken(tdb.db, token('late', parent.id, 'l'.repeat(64))), undefined, 'a revoked parent makes no more');
});

t.test('a token asked for with no role, or another one, is told what the role may be, whichever door', async (t) => {
  const tdb = await testDatabase(t);
  const { server } = await testConsole(t, tdb, testConfig({ OPERATOR_TOKEN: FIRST, DATABASE_URL: tdb.url }), captureLogger('error').log);
  const call = caller(`http://127.0.0.1:${server.port}`);
  const api = await call(FIRST, 'POST', '/api/tokens', { name: 'bob' });
  t.equal(api.status, 400);
  t.match(api.body.error, /role: one of viewer, operator, admin \(none given\)/, 'the API names the roles');
  const env = {
    PATH: process.env.PATH,
    DATABASE_URL: tdb.url,
    LOG_LEVEL: 'error',
    TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64'),
  };
  const cli = await runNode(['src/cli.ts', 'tokens', 'create', 'bob'], env);
  t.equal(cli.code, 2, 'the CLI: a usage error');
  t.match(cli.err, /role: one of viewer, operator, admin \(none given\)/, 'naming the roles');
  t.match(
    (await runNode(['src/cli.ts', 'tokens', 'create', 'bob', '--role', 'boss'], env)).err,
    /role: one of viewer, operator, admin, not "boss"/,
  );
});
