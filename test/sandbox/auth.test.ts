import t from 'tap';
import http from 'node:http';
import { listenLocal } from '../support/http.ts';
import { sandbox } from './harness.ts';

const redirectUri = 'http://127.0.0.1:9/callback';

async function authorize(url: string, decision: 'approve' | 'deny', state = 'xyz'): Promise<URL> {
  const q = new URLSearchParams({ response_type: 'code', client_id: 'commerce-sync', redirect_uri: redirectUri, state });
  const page = await fetch(`${url}/oauth/authorize?${q}`);
  if (page.status !== 200) throw new Error(`authorize page: ${page.status}`);
  const html = await page.text();
  if (!html.includes('<form')) throw new Error('no form');
  const form = new URLSearchParams(q);
  form.set('decision', decision);
  const res = await fetch(`${url}/oauth/authorize`, {
    method: 'POST',
    body: form,
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
  });
  if (res.status !== 302) throw new Error(`decision: ${res.status}`);
  return new URL(res.headers.get('location')!);
}

const token = (url: string, body: object) =>
  fetch(`${url}/oauth/token`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

t.test('Authentication: Authorization Code with Refresh Token', async (t) => {
  const c = await sandbox(t, { variants: 2, manualClock: true });
  const url = c.sb.url;
  const page = await (
    await fetch(`${url}/oauth/authorize?response_type=code&client_id=commerce-sync&redirect_uri=${encodeURIComponent(redirectUri)}`)
  ).text();
  t.match(page, /Authorize/);
  t.match(page, /Deny/);
  t.equal(
    (await fetch(`${url}/oauth/authorize?response_type=code&client_id=nobody&redirect_uri=${encodeURIComponent(redirectUri)}`)).status,
    400,
    'unknown client',
  );

  const denied = await authorize(url, 'deny');
  t.equal(denied.searchParams.get('error'), 'access_denied');
  t.equal(denied.searchParams.get('state'), 'xyz');

  const approved = await authorize(url, 'approve');
  t.equal(`${approved.origin}${approved.pathname}`, redirectUri);
  const code = approved.searchParams.get('code')!;
  t.ok(code);
  const base = { client_id: 'commerce-sync', client_secret: 'sandbox-secret', redirect_uri: redirectUri };
  t.equal((await token(url, { ...base, client_secret: 'wrong', code, grant_type: 'authorization_code' })).status, 401, 'bad client secret');
  t.equal(
    (await token(url, { ...base, redirect_uri: 'http://elsewhere/cb', code, grant_type: 'authorization_code' })).status,
    400,
    'redirect_uri must match',
  );
  const res = await token(url, { ...base, code, grant_type: 'authorization_code' });
  t.equal(res.status, 200);
  const tok: any = await res.json();
  t.match(tok, { access_token: String, refresh_token: String, expires_in: 7200, scope: 'public', token_type: 'bearer' });
  t.equal((await token(url, { ...base, code, grant_type: 'authorization_code' })).status, 400, 'a code is used once');

  const me = await fetch(`${url}/accounts/current`, { headers: { Authorization: `Bearer ${tok.access_token}` } });
  t.equal(me.status, 200);

  await c.admin('POST', 'clock', { advance_seconds: 7200 });
  const expired = await fetch(`${url}/accounts/current`, { headers: { Authorization: `Bearer ${tok.access_token}` } });
  t.equal(expired.status, 401, 'expired after expires_in');

  const refreshed: any = await (await token(url, { ...base, refresh_token: tok.refresh_token, grant_type: 'refresh_token' })).json();
  t.ok(refreshed.access_token && refreshed.refresh_token !== tok.refresh_token, 'refresh token rotated');
  t.equal((await fetch(`${url}/accounts/current`, { headers: { Authorization: `Bearer ${refreshed.access_token}` } })).status, 200);
  t.equal(
    (await token(url, { ...base, refresh_token: tok.refresh_token, grant_type: 'refresh_token' })).status,
    400,
    'the old refresh token stops working',
  );
  t.equal((await token(url, { ...base, grant_type: 'password' })).status, 400);
});

t.test('Authentication: expires_in is configurable and the expiry follows the time scale', async (t) => {
  const c = await sandbox(t, { variants: 2, tokenExpiresIn: 400, timeScale: 200 });
  const approved = await authorize(c.sb.url, 'approve');
  const tok: any = await (
    await token(c.sb.url, {
      client_id: 'commerce-sync',
      client_secret: 'sandbox-secret',
      redirect_uri: redirectUri,
      code: approved.searchParams.get('code'),
      grant_type: 'authorization_code',
    })
  ).json();
  t.equal(tok.expires_in, 2, 'reported in real seconds (400 sandbox s at scale 200)');
  const h = { Authorization: `Bearer ${tok.access_token}` };
  t.equal((await fetch(`${c.sb.url}/accounts/current`, { headers: h })).status, 200);
  await new Promise((r) => setTimeout(r, 2100));
  t.equal((await fetch(`${c.sb.url}/accounts/current`, { headers: h })).status, 401);
});

t.test('Authentication: missing or invalid tokens get 401; privileged tokens never expire', async (t) => {
  const c = await sandbox(t, { variants: 2, manualClock: true });
  const none = await fetch(`${c.sb.url}/variants`);
  t.equal(none.status, 401);
  t.match(await none.json(), { error: String });
  t.ok(none.headers.get('x-request-id'));
  t.equal((await fetch(`${c.sb.url}/variants`, { headers: { Authorization: 'Bearer nope' } })).status, 401);
  t.equal((await fetch(`${c.sb.url}/variants`, { headers: { Authorization: `Basic ${c.sb.token}` } })).status, 401);
  await c.admin('POST', 'clock', { advance_seconds: 10 * 365 * 86400 });
  t.equal((await c.get('/variants')).status, 200, 'privileged token still valid after 10 years');
  await c.admin('POST', 'revoke', { token: c.sb.token });
  t.equal((await c.get('/variants')).status, 401, 'revoked');
});

t.test('Errors: 403 for a token without access', async (t) => {
  const c = await sandbox(t, { variants: 2 });
  const read = (await c.admin('POST', 'tokens', { access: 'read' })).body.token;
  const h = { Authorization: `Bearer ${read}`, 'Content-Type': 'application/json' };
  t.equal((await fetch(`${c.sb.url}/variants`, { headers: h })).status, 200);
  const w = await fetch(`${c.sb.url}/products`, { method: 'POST', headers: h, body: JSON.stringify({ product: { name: 'x' } }) });
  t.equal(w.status, 403);
  const hook = (await c.call('POST', '/webhooks', { webhook: { address: 'https://e.example/h', event: 'order.create' } })).body.webhook;
  const other = (await c.admin('POST', 'tokens', { application_id: 2 })).body.token;
  const oh = { Authorization: `Bearer ${other}` };
  t.equal((await fetch(`${c.sb.url}/webhooks/${hook.id}`, { headers: oh })).status, 403, "another application's webhook");
  t.same(((await (await fetch(`${c.sb.url}/webhooks`, { headers: oh })).json()) as any).webhooks, []);
  t.equal((await c.call('PUT', '/accounts/999', { account: { name: 'x' } })).status, 403, 'another account');
});

t.test('Authentication: the redirect carries the code to a real callback', async (t) => {
  const c = await sandbox(t, { variants: 2 });
  let seen: URL | null = null;
  const cb = http.createServer((req, res) => {
    seen = new URL(req.url!, 'http://x');
    res.end('ok');
  });
  const redirect = `${await listenLocal(t, cb)}/cb`;
  const form = new URLSearchParams({ response_type: 'code', client_id: 'commerce-sync', redirect_uri: redirect, decision: 'approve' });
  const res = await fetch(`${c.sb.url}/oauth/authorize`, { method: 'POST', body: form });
  t.equal(res.status, 200, 'followed the redirect');
  t.ok(seen && (seen as URL).searchParams.get('code'));
});
