// Connecting an account from the console sends the OAuth client secret (also the webhook signing key) to the
// token endpoint and a token to the account read. Only configured service hosts get either (https outside
// loopback), and neither call follows a redirect: a redirect would carry the secret somewhere else.
import t from 'tap';
import http from 'node:http';
import { startSandbox } from '@commerce-sync/sandbox';
import { listenLocal } from '../support/http.ts';
import { sandboxAdmin } from '../support/sandbox.ts';
import { CLIENT_SECRET, consoleServer } from './harness.ts';
import type { Teardown } from '../support/teardown.ts';

const TOKEN = 'operator-token-for-connect-tests';
const auth = { authorization: `Bearer ${TOKEN}` };
const form = (fields: Record<string, string>) => ({
  method: 'POST',
  redirect: 'manual' as const,
  headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
});

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A plain HTTP server answering with `handle`, keeping every request it saw. */
async function fakeHost(t: Teardown, handle: (req: Seen, res: http.ServerResponse) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      const r = { method: req.method!, url: req.url!, headers: req.headers, body };
      seen.push(r);
      handle(r, res);
    });
  });
  return { url: await listenLocal(t, server), seen };
}

const PHISHING = 'Your account is suspended: call +1 555 0100 and read out your client secret';

t.test('the connect forms reach only configured service hosts', async (t) => {
  const stranger = await fakeHost(t, (_req, res) => {
    res.writeHead(403, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: PHISHING }));
  });
  const { base } = await consoleServer(t, { token: TOKEN, config: { COMMERCE_SERVICE_HOSTS: 'api.example-commerce.com' } });

  const byToken = await fetch(`${base}/connections/token`, form({ base_url: stranger.url, token: 'typed-token' }));
  t.equal(byToken.status, 400, 'a token for a host that is not configured is refused');
  const page = await byToken.text();
  t.match(page, /COMMERCE_SERVICE_HOSTS/, 'the page names the setting');
  t.notMatch(page, /call \+1 555/, 'and shows nothing that host would say');
  const byOAuth = await fetch(`${base}/connections/oauth`, form({ base_url: stranger.url }));
  t.equal(byOAuth.status, 400, 'OAuth with a host that is not configured is refused (no redirect to it)');
  t.notOk(byOAuth.headers.get('location'));
  t.equal(stranger.seen.length, 0, 'the host was never contacted');

  const plain = await fetch(`${base}/connections/oauth`, form({ base_url: 'http://api.example-commerce.com' }));
  t.equal(plain.status, 400, 'a configured host over plain http is refused');
  t.match(await plain.text(), /https/);
  for (const lookalike of ['https://api.example-commerce.com.evil.example', 'https://evil.example/api.example-commerce.com']) {
    const res = await fetch(`${base}/connections/oauth`, form({ base_url: lookalike }));
    t.equal(res.status, 400, `${lookalike} is not the configured host`);
  }
  const ok = await fetch(`${base}/connections/oauth`, form({ base_url: 'https://api.example-commerce.com' }));
  t.equal(ok.status, 302, 'the configured host over https: off to its authorize page');
  t.match(ok.headers.get('location'), /^https:\/\/api\.example-commerce\.com\/oauth\/authorize\?/);
});

t.test('the sandbox of demo mode and the host of COMMERCE_BASE_URL are allowed without listing them', async (t) => {
  const sandbox = await startSandbox({ variants: 2 });
  const other = await startSandbox({ variants: 2, token: 'other-account-token' });
  t.teardown(() => Promise.all([sandbox.close(), other.close()]));
  const { base, rt, db } = await consoleServer(t, { token: TOKEN, config: { COMMERCE_BASE_URL: other.url } });
  rt.demo = { baseUrl: sandbox.url };
  const toSandbox = await fetch(`${base}/connections/token`, form({ base_url: sandbox.url, token: sandbox.token, name: 'demo' }));
  t.equal(toSandbox.status, 302, 'the demo sandbox');
  const toConfigured = await fetch(`${base}/connections/token`, form({ base_url: other.url, token: other.token, name: 'real' }));
  t.equal(toConfigured.status, 302, 'the account of COMMERCE_BASE_URL');
  t.same(
    (await db.selectFrom('connections').select('name').orderBy('name').execute()).map((c) => c.name),
    ['demo', 'real'],
  );
});

t.test('the token endpoint and the account read follow no redirect', async (t) => {
  const catcher = await fakeHost(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ access_token: 'stolen', account: { id: 1, name: 'caught' } }));
  });
  // A configured host (say, taken over, or misconfigured) that sends both calls elsewhere.
  const service = await fakeHost(t, (req, res) => {
    res.writeHead(req.url!.startsWith('/oauth/token') ? 307 : 302, { location: `${catcher.url}${req.url}` });
    res.end();
  });
  const { base } = await consoleServer(t, {
    token: TOKEN,
    config: { COMMERCE_SERVICE_HOSTS: new URL(service.url).host, COMMERCE_CLIENT_ID: 'client-id' },
  });

  // OAuth: start, then come back to the callback as the service's authorize page would.
  const start = await fetch(`${base}/connections/oauth`, form({ base_url: service.url }));
  t.equal(start.status, 302);
  const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
  const nonce = /cs_oauth=([^;]+)/.exec(start.headers.get('set-cookie') ?? '')![1]!;
  const callback = await fetch(`${base}/connections/oauth/callback?state=${encodeURIComponent(state)}&code=the-code`, {
    headers: { ...auth, cookie: `cs_oauth=${nonce}` },
    redirect: 'manual',
  });
  t.equal(callback.status, 400, 'the connection fails');
  t.match(await callback.text(), /answered 307 with a redirect.*not followed/, 'saying the service answered with a redirect');
  t.ok(
    service.seen.some((r) => r.url === '/oauth/token' && r.body.includes(CLIENT_SECRET)),
    'the token request went to the configured host',
  );

  const byToken = await fetch(`${base}/connections/token`, form({ base_url: service.url, token: 'typed-token' }));
  t.equal(byToken.status, 400, 'a redirected account read fails too');
  t.same(
    catcher.seen.map((r) => `${r.method} ${r.url}`),
    [],
    'the other host got neither the client secret nor the token (nor any request)',
  );
});

t.test('an account connected by OAuth is on record, though the callback that creates it is a GET', async (t) => {
  const sandbox = await startSandbox({ variants: 2, locations: 1 });
  t.teardown(() => sandbox.close());
  const { base, db } = await consoleServer(t, {
    token: TOKEN,
    config: {
      COMMERCE_SERVICE_HOSTS: new URL(sandbox.url).host,
      COMMERCE_CLIENT_ID: sandbox.clientId,
      COMMERCE_CLIENT_SECRET: sandbox.clientSecret,
    },
  });
  const start = await fetch(`${base}/connections/oauth`, form({ base_url: sandbox.url, name: 'second' }));
  t.equal(start.status, 302);
  const nonce = /cs_oauth=([^;]+)/.exec(start.headers.get('set-cookie') ?? '')![1]!;
  // The service's authorize page, approved as a person would.
  const authorize = new URL(start.headers.get('location')!);
  const approved = await fetch(`${sandbox.url}/oauth/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams([...authorize.searchParams, ['decision', 'approve']]).toString(),
  });
  const callback = await fetch(approved.headers.get('location')!, {
    headers: { ...auth, cookie: `cs_oauth=${nonce}` },
    redirect: 'manual',
  });
  t.equal(callback.status, 302, await callback.text());
  t.match(callback.headers.get('location'), '/connections/second?connected=second');
  const entries = await db.selectFrom('audit_log').selectAll().execute();
  t.match(
    entries.map((e) => e.action),
    ['POST /connections/oauth', 'GET /connections/oauth/callback'],
  );
  t.match(
    entries,
    [
      {},
      {
        actor: 'break-glass (OPERATOR_TOKEN)',
        action: 'GET /connections/oauth/callback',
        connection: 'second',
        target: 'connection second',
        after: { connection: { name: 'second', auth_kind: 'oauth' } },
      },
    ],
    'the new connection has its entry',
  );
  t.notMatch(JSON.stringify(entries), new RegExp(`${sandbox.clientSecret}|code=`), 'and no secret or code in it');

  // Looking at the connection shows its subscriptions as the connect's sync left them, and asks the service nothing:
  // a page view must not spend the merchant's budget.
  const admin = sandboxAdmin(sandbox);
  const before = (await admin('GET', 'stats')).requests.total;
  for (let i = 0; i < 10; i++) {
    const page = await fetch(`${base}/connections/second`, { headers: auth });
    t.equal(page.status, 200);
    const html = await page.text();
    if (i === 0) {
      t.match(html, /id="webhooks"/, 'the subscriptions are listed');
      t.match(html, `${base}/webhooks/second`);
      t.match(html, /As the service listed them at/, 'saying when the service listed them');
    }
  }
  t.equal((await admin('GET', 'stats')).requests.total, before, 'ten page views, no request to the service');
});
