// Sign-in by name: a real OpenID provider (oidc-provider) runs inside the test with commerce-sync as its client and
// accounts whose claims carry email, email_verified and groups. A browser (fetch and a cookie jar, no redirects
// followed for it) goes through the Authorization Code flow over HTTP: the console's /auth/oidc/start, the
// provider's login and consent forms (its devInteractions, filled in as a person would), and back to
// /auth/oidc/callback. A person in the admin group gets an admin session and changes a buffer (the audit entry names
// them by e-mail); one in the operator group gets operator, voids an order, and is refused (403, the role named) a
// buffer change; one in no mapped group, one of another domain and one with an unverified e-mail are refused
// sign-in with the reason on the page. A callback that was not started in that browser, or whose state was changed,
// opens nothing; `next` stays a local path.
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
// @ts-expect-error oidc-provider ships no type declarations: the little of it used here is typed below.
import OidcProvider from 'oidc-provider';
import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { admit, roleOf } from '../../src/console/oidc.ts';
import { ensureDefaultChannel } from '../../src/db/channels.ts';
import type { Teardown } from '../support/teardown.ts';
import { addConnection, consoleServer } from './harness.ts';

const Provider = OidcProvider as new (issuer: string, configuration: Record<string, unknown>) => { callback(): http.RequestListener };

const CLIENT_ID = 'commerce-sync';
const CLIENT_SECRET = 'oidc-test-client-secret-0123456789';

const ACCOUNTS: Record<string, { email: string; email_verified: boolean; name: string; groups: string[] }> = {
  ada: { email: 'ada@example.com', email_verified: true, name: 'Ada Admin', groups: ['staff', 'ops-admins'] },
  otto: { email: 'otto@example.com', email_verified: true, name: 'Otto Operator', groups: ['warehouse'] },
  nina: { email: 'nina@example.com', email_verified: true, name: 'Nina Nogroup', groups: ['marketing', 'staff'] },
  eve: { email: 'eve@example.org', email_verified: true, name: 'Eve Elsewhere', groups: ['ops-admins'] },
  uma: { email: 'uma@example.com', email_verified: false, name: 'Uma Unverified', groups: ['ops-admins'] },
  // Her groups change during a test (a demotion, a removal).
  grace: { email: 'grace@example.com', email_verified: true, name: 'Grace Changing', groups: ['ops-admins'] },
};

/** A browser: one cookie jar for every host (cookies do not tell ports apart), redirects shown, not followed. */
class Browser {
  private readonly jar = new Map<string, { name: string; value: string; path: string }>();

  cookie(name: string): string | undefined {
    return [...this.jar.values()].find((c) => c.name === name)?.value;
  }

  async request(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Response> {
    const path = new URL(url).pathname;
    const cookie = [...this.jar.values()]
      .filter((c) => path.startsWith(c.path))
      .map((c) => `${c.name}=${c.value}`)
      .join('; ');
    const res = await fetch(url, { ...init, redirect: 'manual', headers: { ...init.headers, ...(cookie ? { cookie } : {}) } });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';').map((s) => s.trim());
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i);
      const value = pair!.slice(i + 1);
      const attr = (key: string) => attributes.find((a) => a.toLowerCase().startsWith(`${key}=`))?.slice(key.length + 1);
      const cookiePath = attr('path') ?? '/';
      const expires = attr('expires');
      const gone = !value || attr('max-age') === '0' || (expires !== undefined && Date.parse(expires) <= Date.now());
      if (gone) this.jar.delete(`${name} ${cookiePath}`);
      else this.jar.set(`${name} ${cookiePath}`, { name, value, path: cookiePath });
    }
    return res;
  }
}

const unescapeHtml = (s: string) =>
  s
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');

async function world(t: Teardown) {
  // The provider listens first (the console's settings name it), and gets its client once the console's address is known.
  const idp = http.createServer();
  await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => idp.close(() => resolve())));
  const issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
  const s = await consoleServer(t, {
    config: {
      OIDC_ISSUER: issuer,
      OIDC_CLIENT_ID: CLIENT_ID,
      OIDC_CLIENT_SECRET: CLIENT_SECRET,
      OIDC_ALLOWED_DOMAINS: 'example.com',
      OIDC_ROLES: 'ops-admins=admin, warehouse=operator',
    },
  });
  const signingKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [`${s.base}/auth/oidc/callback`],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    findAccount: (_ctx: unknown, id: string) => {
      const account = ACCOUNTS[id];
      return account ? { accountId: id, claims: () => ({ sub: id, ...account }) } : undefined;
    },
    cookies: { keys: ['oidc-test-cookie-key'] },
    jwks: { keys: [signingKey] },
    features: { devInteractions: { enabled: true } },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, IdToken: 600, Interaction: 600, Session: 3600 },
  });
  idp.on('request', provider.callback());
  t.teardown(() => idp.closeAllConnections());

  /**
   * A person signs in at the console as `login`, from a fresh browser: follows the redirects, fills in the provider's
   * login form and confirms its consent form. Answers the console's answer at the callback, and the forms seen.
   */
  const signIn = async (login: string, next = '/channels') => {
    const browser = new Browser();
    let url = `${s.base}/auth/oidc/start?next=${encodeURIComponent(next)}`;
    let res = await browser.request(url);
    const forms: string[] = [];
    for (let step = 0; step < 20; step++) {
      if (res.status >= 300 && res.status < 400) {
        url = new URL(res.headers.get('location')!, url).href;
        res = await browser.request(url);
        if (url.startsWith(`${s.base}/auth/oidc/callback`)) return { browser, res, html: await res.text(), forms };
        continue;
      }
      const html = await res.text();
      if (res.status !== 200 || !url.startsWith(issuer)) throw new Error(`${res.status} at ${url}: ${html.slice(0, 500)}`);
      const form = /<form[^>]*action="([^"]+)"[^>]*method="post"/.exec(html);
      if (!form) throw new Error(`no form at ${url}: ${html.slice(0, 500)}`);
      const fields = new URLSearchParams();
      for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g))
        fields.set(name!, unescapeHtml(value!));
      if (/name="login"/.test(html)) {
        fields.set('login', login);
        fields.set('password', 'whatever the person types');
      }
      forms.push(fields.get('prompt') ?? '?');
      url = new URL(unescapeHtml(form[1]!), url).href;
      res = await browser.request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: fields.toString(),
      });
    }
    throw new Error('the sign-in did not come back to the console');
  };

  /** A request of the signed-in person's browser to the console (same-site: Origin is the console's). */
  const call = async (browser: Browser, method: string, path: string, body?: unknown) => {
    const res = await browser.request(`${s.base}${path}`, {
      method,
      headers: { accept: 'application/json', origin: s.base, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text.startsWith('{') ? JSON.parse(text) : text };
  };
  return { s, issuer, signIn, call };
}

/** Where the page after a sign-in sends the browser on (its zero-second refresh). */
const refreshTo = (html: string) => unescapeHtml(/<meta http-equiv="refresh" content="0;url=([^"]*)">/.exec(html)?.[1] ?? '');

t.test('people sign in through the OpenID provider in the role their groups map to', async (t) => {
  const { s, issuer, signIn, call } = await world(t);
  const { db } = s;
  const shop = await addConnection(db, 'shop');
  await ensureDefaultChannel(db, shop, { location_ids: null, buffer_units: '0' });
  await db
    .insertInto('orders')
    .values({ connection_id: shop, id: 1001, order_number: 'SO1001', status: 'active', raw: JSON.stringify({ id: 1001 }) })
    .execute();

  const login = await fetch(`${s.base}/login`);
  const loginHtml = await login.text();
  t.match(loginHtml, `Sign in with ${new URL(issuer).host}`, 'the login page offers the provider');
  t.match(loginHtml, /name="token"/, 'and keeps the break-glass token form');
  const guarded = await fetch(`${s.base}/channels`, { headers: { accept: 'text/html' } });
  t.equal(guarded.status, 401);
  t.match(await guarded.text(), 'href="/auth/oidc/start?next=%2Fchannels"', 'a refused page offers the sign-in, back to where it was');

  await t.test('an admin group: an admin session, and their changes are audited under their e-mail', async (t) => {
    const { browser, res, html, forms } = await signIn('ada', '/channels?connection=shop');
    t.same(forms, ['login', 'consent'], "the provider's login and consent forms were filled in");
    t.equal(res.status, 200, 'signed in');
    t.match(html, 'Signed in as ada@example.com (admin)');
    t.equal(refreshTo(html), '/channels?connection=shop', 'on to the page the sign-in started from');
    t.ok(browser.cookie('cs_operator'), 'a session cookie');
    t.notOk(browser.cookie('cs_oidc'), 'the flow cookie is used up');
    const setCookie = res.headers.getSetCookie().join('\n');
    t.match(setCookie, /cs_operator=[^;]+;.*httponly/i);
    t.match(setCookie, /cs_operator=[^;]+;.*samesite=strict/i);

    const person = await db.selectFrom('people').selectAll().where('email', '=', 'ada@example.com').executeTakeFirstOrThrow();
    t.match(person, { subject: `${issuer}#ada`, name: 'Ada Admin', role: 'admin' }, 'the person is kept by issuer and subject');
    const session = await db.selectFrom('console_sessions').selectAll().where('person_id', '=', person.id).executeTakeFirstOrThrow();
    t.equal(session.role, 'admin');

    const page = await browser.request(`${s.base}/channels?connection=shop`, { headers: { accept: 'text/html' } });
    t.equal(page.status, 200, 'the console opens with the session');
    await page.arrayBuffer();
    const changed = await call(browser, 'PATCH', '/api/channels/default', { buffer_units: '3' });
    t.equal(changed.status, 200, 'an admin changes a buffer');
    const audit = await call(browser, 'GET', '/api/audit?since=0');
    t.equal(audit.status, 200);
    t.match(audit.body.entries, [
      { actor: 'ada@example.com', role: 'admin', action: 'sign-in', after: { how: 'oidc' } },
      { actor: 'ada@example.com', role: 'admin', action: 'channels.change', connection: 'shop' },
    ]);
    t.match(audit.body.entries[1], { before: { channel: { buffer_units: '0' } }, after: { channel: { buffer_units: '3' } } });

    // Signing in again keeps one person (the provider's subject), and logging out ends the session.
    const again = await signIn('ada');
    t.equal(again.res.status, 200);
    t.equal((await db.selectFrom('people').select('id').where('subject', '=', `${issuer}#ada`).execute()).length, 1);
    t.equal((await call(browser, 'POST', '/logout')).status, 302);
    t.equal((await call(browser, 'GET', '/api/channels')).status, 401, 'logged out');
  });

  await t.test('an operator group: operator work is allowed, admin work refused with the role named', async (t) => {
    const { browser, res, html } = await signIn('otto');
    t.equal(res.status, 200, 'signed in');
    t.match(html, 'Signed in as otto@example.com (operator)');
    t.equal((await call(browser, 'GET', '/api/channels')).status, 200, 'reads');
    const voided = await call(browser, 'POST', '/api/operations/void', { order_id: 1001 });
    t.equal(voided.status, 202, 'an operator voids an order');
    const refused = await call(browser, 'PATCH', '/api/channels/default', { buffer_units: '5' });
    t.equal(refused.status, 403);
    t.match(refused.body, {
      error: 'PATCH /api/channels/:name needs the admin role; otto@example.com has operator',
      role: 'operator',
      needs: 'admin',
    });
    const refusedToken = await call(browser, 'POST', '/api/tokens', { name: 'script', role: 'admin' });
    t.equal(refusedToken.status, 403, 'nor may an operator make tokens');
    const entries = (await call(browser, 'GET', '/api/audit?since=0')).body.entries as any[];
    t.match(entries.at(-1), { actor: 'otto@example.com', role: 'operator', action: 'POST /api/operations/void', target: 'order 1001' });
    t.notOk(
      entries.some((e) => e.actor === 'otto@example.com' && !['POST /api/operations/void', 'sign-in'].includes(e.action)),
      'the refused changes left no entry',
    );
  });

  await t.test('no mapped group, another domain, an unverified e-mail: refused, saying why', async (t) => {
    const cases: [string, RegExp][] = [
      ['nina', /nina@example\.com has no role in this console: none of your groups \(marketing, staff\) has a role here/],
      ['eve', /eve@example\.org may not sign in here: example\.org is not one of the e-mail domains allowed/],
      ['uma', /Your e-mail address uma@example\.com is not verified at the provider/],
    ];
    for (const [login, reason] of cases) {
      const { browser, res, html } = await signIn(login);
      t.equal(res.status, 403, `${login}: 403`);
      t.match(unescapeHtml(html), reason, `${login}: the page says why`);
      t.match(html, /Sign in with/, `${login}: on the login page`);
      t.notOk(browser.cookie('cs_operator'), `${login}: no session`);
      t.equal((await call(browser, 'GET', '/api/channels')).status, 401);
    }
    const people = await db.selectFrom('people').select('email').orderBy('email').execute();
    t.same(
      people.map((p) => p.email),
      ['ada@example.com', 'otto@example.com'],
      'no one refused is stored',
    );
  });

  await t.test('the callback opens nothing it did not start; next stays local', async (t) => {
    const stranger = new Browser();
    const unstarted = await stranger.request(`${s.base}/auth/oidc/callback?code=abc&state=def&iss=${encodeURIComponent(issuer)}`);
    t.equal(unstarted.status, 400);
    t.match(await unstarted.text(), 'This sign-in was not started in this browser');

    // A flow started in this browser, answered with another state (a login CSRF): refused, nothing asked of the provider.
    const browser = new Browser();
    const start = await browser.request(`${s.base}/auth/oidc/start`);
    t.equal(start.status, 302);
    const authorize = new URL(start.headers.get('location')!);
    t.equal(authorize.origin, issuer);
    t.equal(authorize.searchParams.get('code_challenge_method'), 'S256', 'PKCE');
    t.ok(authorize.searchParams.get('code_challenge') && authorize.searchParams.get('nonce') && authorize.searchParams.get('state'));
    t.equal(authorize.searchParams.get('scope'), 'openid email profile groups', 'the groups scope, which the provider offers');
    t.equal(authorize.searchParams.get('redirect_uri'), `${s.base}/auth/oidc/callback`);
    // Reached at another of its names than PUBLIC_URL's: first to that name, where the provider will send it back.
    const port = new URL(s.base).port;
    const elsewhere = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http
        .get({ host: '127.0.0.1', port, path: '/auth/oidc/start?next=%2Forders', headers: { host: `localhost:${port}` } }, resolve)
        .on('error', reject),
    );
    elsewhere.resume();
    t.equal(elsewhere.statusCode, 302);
    t.equal(elsewhere.headers.location, `${s.base}/auth/oidc/start?next=%2Forders&via=public`);
    t.notOk(elsewhere.headers['set-cookie'], 'no flow cookie on a name the provider does not return to');

    const forged = await browser.request(`${s.base}/auth/oidc/callback?code=abc&state=forged&iss=${encodeURIComponent(issuer)}`);
    t.equal(forged.status, 400);
    t.match(await forged.text(), /did not check out/);
    t.notOk(browser.cookie('cs_operator'));

    for (const next of ['https://evil.example/', '//evil.example/', '/\\evil.example', '/auth/oidc/start', '/%0d%0aSet-Cookie:x']) {
      const { html } = await signIn('ada', next);
      t.ok(refreshTo(html).startsWith('/') && !refreshTo(html).startsWith('//'), `${JSON.stringify(next)} -> ${refreshTo(html)}`);
      if (!next.startsWith('/%')) t.equal(refreshTo(html), '/');
    }
  });
});

t.test("a person's token acts in the lower of its role and theirs now, and ends when they lose their role", async (t) => {
  const { s, signIn, call } = await world(t);
  const shop = await addConnection(s.db, 'shop');
  await ensureDefaultChannel(s.db, shop, { location_ids: null, buffer_units: '0' });
  const api = async (token: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${s.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const grace = ACCOUNTS.grace!;
  t.teardown(() => {
    grace.groups = ['ops-admins'];
  });

  const admin = await signIn('grace');
  const made = await call(admin.browser, 'POST', '/api/tokens', { name: 'ops', role: 'admin', expires_in_days: 3650 });
  t.equal(made.status, 201, 'an admin makes an admin token');
  const token = made.body.token as string;
  const child = (await api(token, 'POST', '/api/tokens', { name: 'ops child', role: 'admin' })).body.token as string;
  t.ok(child, 'and with it a child token');
  t.equal((await api(token, 'PATCH', '/api/channels/default', { buffer_units: '1' })).status, 200, 'the token changes a buffer');

  grace.groups = ['warehouse'];
  const demoted = await signIn('grace');
  t.match(demoted.html, 'Signed in as grace@example.com (operator)', 'demoted by the provider: an operator now');
  const refused = await api(token, 'PATCH', '/api/channels/default', { buffer_units: '2' });
  t.equal(refused.status, 403, 'her admin token does no admin work any more');
  t.match(refused.body, { role: 'operator', needs: 'admin' });
  t.equal((await api(token, 'POST', '/api/tokens', { name: 'more', role: 'admin' })).status, 403, 'nor mints tokens');
  t.equal((await api(child, 'PATCH', '/api/channels/default', { buffer_units: '2' })).status, 403, 'nor does its child');
  t.equal((await api(token, 'GET', '/api/channels')).status, 200, 'it still reads, as an operator may');
  t.equal(
    (await call(admin.browser, 'PATCH', '/api/channels/default', { buffer_units: '2' })).status,
    403,
    'her admin session is lowered too',
  );

  grace.groups = ['marketing'];
  const removed = await signIn('grace');
  t.equal(removed.res.status, 403, 'removed from every group: her sign-in is refused');
  t.equal((await api(token, 'GET', '/api/channels')).status, 401, 'and her token is refused');
  t.equal((await api(child, 'GET', '/api/channels')).status, 401, 'and its child');
  t.equal((await call(demoted.browser, 'GET', '/api/channels')).status, 401, 'and her open session');

  grace.groups = ['ops-admins'];
  const back = await signIn('grace');
  t.equal(back.res.status, 200, 'given a role again, she signs in');
  t.equal((await api(token, 'GET', '/api/channels')).status, 200, 'and her token acts for her again, within her role');

  // An administrator removes her: sessions and tokens go at once, without waiting for her next sign-in.
  const ada = await signIn('ada');
  const person = await s.db.selectFrom('people').select('id').where('email', '=', 'grace@example.com').executeTakeFirstOrThrow();
  t.equal((await call(ada.browser, 'DELETE', `/api/people/${person.id}`)).status, 200, 'an admin removes her');
  t.equal((await api(token, 'GET', '/api/channels')).status, 401, 'her token is refused');
  t.equal((await call(back.browser, 'GET', '/api/channels')).status, 401, 'her session is ended');
  const entry = (await call(ada.browser, 'GET', '/api/audit?since=0')).body.entries.at(-1);
  t.match(entry, { actor: 'ada@example.com', action: 'DELETE /api/people/:id', target: 'person grace@example.com' }, 'on record');
});

t.test('without OIDC_ISSUER the login page has only the token form, and the sign-in routes say so', async (t) => {
  const s = await consoleServer(t, { token: 'oidc-test-break-glass-token-0123' });
  const login = await (await fetch(`${s.base}/login`)).text();
  t.notMatch(login, /Sign in with/);
  t.match(login, /name="token"/);
  for (const path of ['/auth/oidc/start', '/auth/oidc/callback?code=x&state=y']) {
    const res = await fetch(`${s.base}${path}`, { redirect: 'manual' });
    t.equal(res.status, 404, path);
    t.match(await res.text(), /Sign-in by name is not set up here \(OIDC_ISSUER is empty\)/);
  }
});

t.test('settings of sign-in by name are checked at start-up, one line per problem', async (t) => {
  const problems = (env: NodeJS.ProcessEnv): string[] => {
    try {
      loadConfig(env);
      return [];
    } catch (err) {
      if (err instanceof ConfigError) return err.problems;
      throw err;
    }
  };
  t.same(problems({ OIDC_ISSUER: 'https://login.example.com' }), [
    'OIDC_CLIENT_ID is empty: signing in through OIDC_ISSUER needs the client id commerce-sync is registered with at the provider',
    'OIDC_CLIENT_SECRET is empty: signing in through OIDC_ISSUER needs the client secret of that registration',
    'OIDC_ROLES is empty: no one signing in through OIDC_ISSUER would get a role; map groups to roles, e.g. ops-admins=admin,warehouse=operator,*=viewer',
  ]);
  const complete = {
    OIDC_ISSUER: 'https://login.example.com',
    OIDC_CLIENT_ID: 'cs',
    OIDC_CLIENT_SECRET: 'secret',
    OIDC_ROLES: 'ops=admin',
  };
  t.same(problems(complete), []);
  t.same(problems({ ...complete, OIDC_ROLES: 'ops=boss, =admin,warehouse, ops-admins=admin,ops-admins=viewer' }), [
    'OIDC_ROLES entry "ops=boss" is not valid: expected GROUP=ROLE with ROLE one of viewer, operator, admin',
    'OIDC_ROLES entry "=admin" is not valid: expected GROUP=ROLE with ROLE one of viewer, operator, admin',
    'OIDC_ROLES entry "warehouse" is not valid: expected GROUP=ROLE with ROLE one of viewer, operator, admin',
    'OIDC_ROLES gives group "ops-admins" a role twice: keep one entry',
  ]);
  t.match(problems({ ...complete, OIDC_ISSUER: 'http://login.example.com' }), [
    /^OIDC_ISSUER = "http:\/\/login.example.com" is not valid: expected an https URL/,
  ]);
  t.same(problems({ ...complete, OIDC_ISSUER: 'http://127.0.0.1:4000' }), [], 'http at a loopback address (a provider run beside it)');
  t.match(problems({ ...complete, OIDC_ALLOWED_DOMAINS: 'example.com, @example.org' }), [
    /^OIDC_ALLOWED_DOMAINS entry "@example.org" is not an e-mail domain/,
  ]);
  t.match(problems({ OIDC_ISSUER: 'not a url' }), [/^OIDC_ISSUER = "not a url" is not valid: expected an http\(s\) URL/]);
});

t.test('groups map to the highest role they give; * gives one to everyone vouched for', async (t) => {
  const roles = new Map([
    ['ops-admins', 'admin'],
    ['warehouse', 'operator'],
  ] as const);
  t.equal(roleOf(['warehouse', 'ops-admins'], roles), 'admin');
  t.equal(roleOf('warehouse', roles), 'operator', 'a claim that is one string');
  t.equal(roleOf(['marketing'], roles), null);
  t.equal(roleOf(undefined, roles), null);
  t.equal(roleOf([42, { group: 'ops-admins' }], roles), null, 'only strings count');
  t.equal(roleOf(['marketing'], new Map([...roles, ['*', 'viewer']])), 'viewer');
  t.equal(roleOf(['warehouse'], new Map([...roles, ['*', 'viewer']])), 'operator');

  const config = loadConfig({ OIDC_ROLES: 'ops-admins=admin', OIDC_ROLE_CLAIM: 'roles' });
  t.match(admit({ email: 'a@x.io', email_verified: true, roles: ['ops-admins'] }, config), { ok: true, role: 'admin', name: null });
  t.match(admit({ email: 'a@x.io', email_verified: 'true', roles: 'ops-admins', name: 'A' }, config), { ok: true, name: 'A' });
  t.match(admit({ email: 'a@x.io', email_verified: true, groups: ['ops-admins'] }, config), {
    ok: false,
    reason: /the provider gave no roles claim for you/,
  });
  t.match(admit({ email_verified: true, roles: ['ops-admins'] }, config), { ok: false, reason: /email claim/ });
});
