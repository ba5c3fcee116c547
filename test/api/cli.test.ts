// The commands against a running sandbox, as separate processes: connect (token and OAuth), connections, api.
import t from 'tap';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSandbox } from '@commerce-sync/sandbox';
import { testDatabase } from '../support/db.ts';
import { runNode, type Finished } from '../support/processes.ts';
import { TEST_KEY } from './harness.ts';

function cli(args: string[], env: NodeJS.ProcessEnv, onOut?: (text: string) => void): Promise<Finished> {
  return runNode(['src/cli.ts', ...args], { ...process.env, LOG_LEVEL: 'silent', ...env }, onOut);
}

t.test('connect, connections, api', async (t) => {
  const sandbox = await startSandbox({ variants: 300 });
  t.teardown(() => sandbox.close());
  const { url } = await testDatabase(t);
  const env = {
    DATABASE_URL: url,
    DATA_DIR: await mkdtemp(join(tmpdir(), 'cs-cli-')),
    TOKEN_ENCRYPTION_KEY: TEST_KEY,
    PUBLIC_URL: 'http://127.0.0.1:9',
    // The token goes only to a configured service host, from the CLI as from the console.
    COMMERCE_SERVICE_HOSTS: new URL(sandbox.url).host,
  };

  const elsewhere = await cli(['connect', '--base-url', 'http://127.0.0.1:1', '--token', sandbox.token], env);
  t.equal(elsewhere.code, 2, 'a host not configured is refused');
  t.match(elsewhere.err, /127\.0\.0\.1:1 is not a configured service host.*COMMERCE_SERVICE_HOSTS/);
  const plain = await cli(['connect', '--base-url', `http://shop.example`, '--token', sandbox.token], {
    ...env,
    COMMERCE_SERVICE_HOSTS: 'shop.example',
  });
  t.match(plain.err, /must use https/, 'and a remote one only over https');
  const c = await cli(['connect', '--base-url', sandbox.url, '--token', sandbox.token], env);
  t.equal(c.code, 0, c.err);
  t.match(c.out, /connected sandbox-trading-co: account Sandbox Trading Co\. \(\d+\)/);
  t.match(c.out, /webhooks at http:\/\/127\.0\.0\.1:9\/webhooks\/sandbox-trading-co: \d+ created/, 'webhooks registered after connect');

  const list = await cli(['connections', '--json'], env);
  t.equal(list.code, 0, list.err);
  const [conn] = JSON.parse(list.out);
  t.equal(conn.status, 'active');
  t.equal(conn.auth, 'token');
  t.notOk(list.out.includes(sandbox.token));

  const account = await cli(['api', '/accounts/current'], env);
  t.equal(account.code, 0, account.err);
  t.equal(JSON.parse(account.out).account.name, 'Sandbox Trading Co.');

  const all = await cli(['api', '--paginate', '/variants'], env);
  t.equal(all.code, 0, all.err);
  t.equal(JSON.parse(all.out).variants.length, 300, 'all pages merged');

  const ids = await cli(['api', '/variants?ids=1,2,3'], env);
  t.equal(ids.code, 0, ids.err);
  t.ok(JSON.parse(ids.out).variants.length <= 3);

  const post = await cli(['api', 'POST', '/currencies', '--data', '{"currency":{"iso":"EUR","rate":"0.9"}}'], env);
  t.equal(post.code, 0, post.err);
  t.equal(JSON.parse(post.out).currency.iso, 'EUR');

  const bad = await cli(['api', 'GET', '/companies/999999'], env);
  t.equal(bad.code, 1);
  t.match(bad.err, /404 not found.*X-Request-ID/);

  const oauthEnv = { ...env, COMMERCE_CLIENT_ID: sandbox.clientId, COMMERCE_CLIENT_SECRET: sandbox.clientSecret };
  let approved = false;
  const oauth = await cli(
    ['connect', '--base-url', sandbox.url, '--oauth', '--name', 'oauth-shop', '--skip-webhooks', '--wait', '30'],
    oauthEnv,
    (out) => {
      const m = /(http:\/\/\S+\/oauth\/authorize\?\S+)/.exec(out);
      if (!m || approved) return;
      approved = true;
      // The browser: approve on the authorize page, then follow the redirect to the CLI's listener.
      const q = new URL(m[1]!).searchParams;
      void (async () => {
        const form = new URLSearchParams({ ...Object.fromEntries(q), decision: 'approve' });
        const res = await fetch(`${sandbox.url}/oauth/authorize`, {
          method: 'POST',
          redirect: 'manual',
          body: form,
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        });
        await fetch(res.headers.get('location')!);
      })();
    },
  );
  t.equal(oauth.code, 0, oauth.err);
  t.match(oauth.out, /connected oauth-shop: .* \[oauth\]/);
  const both = JSON.parse((await cli(['connections', '--json'], env)).out);
  t.same(
    both.map((x: any) => [x.name, x.auth]),
    [
      ['sandbox-trading-co', 'token'],
      ['oauth-shop', 'oauth'],
    ],
  );
  t.ok(both[1].token_expires_at);

  const choose = await cli(['api', '/accounts/current'], env);
  t.equal(choose.code, 2, 'several connections: --connection is needed');
  const chosen = await cli(['api', '/accounts/current', '--connection', 'oauth-shop'], env);
  t.equal(chosen.code, 0, chosen.err);
});
