// The one signed sender (src/channels/sender.ts) against real local HTTP endpoints; every signature is checked with
// the `standardwebhooks` package from the registry, never with our own code.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenLocal } from '../support/http.ts';
import { Webhook } from 'standardwebhooks';
import { checkDestination, internalAddress, parseAllowedHosts, SPECIAL_BLOCKS } from '../../src/channels/address-guard.ts';
import { isSlackUrl, parseSecrets, sendWebhook, validSecret } from '../../src/channels/sender.ts';
import type { Teardown } from '../support/teardown.ts';

interface Received {
  headers: Record<string, string>;
  body: string;
}

/** A local endpoint answering each request with what `answer` says; records what it received. */
async function endpoint(
  t: Teardown,
  answer: (n: number, req: IncomingMessage, res: ServerResponse) => void = (_n, _q, res) => res.end('ok'),
) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8') });
      answer(received.length, req, res);
    });
  });
  return { url: `${await listenLocal(t, server)}/hook`, received };
}

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;
/** The endpoints here listen on loopback, which our webhooks reach only when it is allowed by name. */
const LOCAL = { allowHosts: ['127.0.0.1'] };
const verify = (s: string, r: Received) =>
  new Webhook(s).verify(r.body, {
    'webhook-id': r.headers['webhook-id']!,
    'webhook-timestamp': r.headers['webhook-timestamp']!,
    'webhook-signature': r.headers['webhook-signature']!,
  });

t.test('a signed POST verifies with the standardwebhooks package; a wrong secret does not', async (t) => {
  const ep = await endpoint(t);
  const s = secret();
  const body = JSON.stringify({ type: 'alert.opened', data: { message: 'ünïcode & <b>' } });
  const out = await sendWebhook({ url: ep.url, id: 'msg_1', body, secrets: [s] }, LOCAL);
  t.same(out, { ok: true, status: 200, attempts: 1, error: null });
  t.equal(ep.received.length, 1);
  const r = ep.received[0]!;
  t.equal(r.headers['webhook-id'], 'msg_1');
  t.match(r.headers['webhook-timestamp'], /^\d{10}$/);
  t.match(r.headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/);
  t.equal(r.headers['content-type'], 'application/json');
  t.equal(r.body, body, 'the body arrives byte for byte as signed');
  t.same(verify(s, r), JSON.parse(body), 'standardwebhooks verifies it');
  t.throws(() => verify(secret(), r), 'another secret does not verify it');
});

t.test('while a secret rotates, each of the two secrets verifies the same POST', async (t) => {
  const ep = await endpoint(t);
  const [current, previous] = [secret(), secret()];
  const setting = `${current} ${previous}`;
  t.same(parseSecrets(setting), [current, previous]);
  const out = await sendWebhook({ url: ep.url, id: 'msg_rot', body: '{"a":1}', secrets: parseSecrets(setting) }, LOCAL);
  t.ok(out.ok);
  const r = ep.received[0]!;
  t.equal(r.headers['webhook-signature']!.split(' ').length, 2, 'two signatures, space-separated');
  t.same(verify(current, r), { a: 1 }, 'the new secret verifies');
  t.same(verify(previous, r), { a: 1 }, 'the old secret verifies');
});

t.test('5xx and 429 are retried with backoff under the same webhook-id; every attempt verifies', async (t) => {
  const ep = await endpoint(t, (n, _req, res) => {
    res.statusCode = n === 1 ? 503 : n === 2 ? 429 : 200;
    res.end();
  });
  const s = secret();
  const started = Date.now();
  const out = await sendWebhook({ url: ep.url, id: 'msg_retry', body: '{}', secrets: [s] }, { ...LOCAL, attempts: 5, backoffMs: 100 });
  t.same(out, { ok: true, status: 200, attempts: 3, error: null });
  t.ok(Date.now() - started >= 150, 'it waited between attempts');
  t.same(
    ep.received.map((r) => r.headers['webhook-id']),
    ['msg_retry', 'msg_retry', 'msg_retry'],
  );
  for (const r of ep.received) t.same(verify(s, r), {});
});

t.test('a 4xx other than 429 is final; attempts run out on a steady 500', async (t) => {
  const gone = await endpoint(t, (_n, _req, res) => {
    res.statusCode = 410;
    res.end();
  });
  const a = await sendWebhook({ url: gone.url, id: 'x', body: '{}', secrets: [secret()] }, { ...LOCAL, attempts: 3, backoffMs: 10 });
  t.same(a, { ok: false, status: 410, attempts: 1, error: 'answered 410' });
  const down = await endpoint(t, (_n, _req, res) => {
    res.statusCode = 500;
    res.end();
  });
  const b = await sendWebhook({ url: down.url, id: 'y', body: '{}', secrets: [secret()] }, { ...LOCAL, attempts: 3, backoffMs: 10 });
  t.same(b, { ok: false, status: 500, attempts: 3, error: 'answered 500' });
  t.equal(down.received.length, 3);
});

t.test('a redirect is never followed: the body and its signature do not reach where it points', async (t) => {
  const elsewhere = await endpoint(t);
  const redirecting = await endpoint(t, (_n, _req, res) => {
    res.statusCode = 307;
    res.setHeader('location', elsewhere.url);
    res.end();
  });
  const out = await sendWebhook(
    { url: redirecting.url, id: 'r', body: '{}', secrets: [secret()] },
    { ...LOCAL, attempts: 2, backoffMs: 10 },
  );
  t.equal(out.ok, false);
  t.equal(out.status, 307);
  t.match(out.error, /redirects are not followed/);
  t.equal(elsewhere.received.length, 0, 'nothing reached the redirect target');
});

t.test('an endpoint that does not answer times out; a closed port is a network error; no error names the URL', async (t) => {
  const silent = await endpoint(t, () => {});
  const started = Date.now();
  const out = await sendWebhook(
    { url: `${silent.url}?token=s3cr3t`, id: 't', body: '{}' },
    { ...LOCAL, timeoutMs: 200, attempts: 2, backoffMs: 10 },
  );
  t.equal(out.ok, false);
  t.equal(out.status, null);
  t.match(out.error, /no answer within 200 ms/);
  t.ok(Date.now() - started < 5000);
  const closed = await sendWebhook({ url: 'http://127.0.0.1:9/hook?token=s3cr3t', id: 'c', body: '{}' }, { ...LOCAL, attempts: 1 });
  t.equal(closed.ok, false);
  t.match(closed.error, /network error/);
  t.notMatch(`${out.error} ${closed.error}`, /s3cr3t|127\.0\.0\.1/);
});

t.test('without secrets (a Slack-style URL) no signature header is sent; secrets are checked', async (t) => {
  const ep = await endpoint(t);
  t.ok((await sendWebhook({ url: ep.url, id: 's', body: '{"text":"hi"}' }, LOCAL)).ok);
  t.equal(ep.received[0]!.headers['webhook-signature'], undefined);
  t.ok(isSlackUrl('https://hooks.slack.com/services/T0/B0/xyz'));
  t.notOk(isSlackUrl(ep.url));
  t.ok(validSecret(secret()));
  t.notOk(validSecret('whsec_short'));
  t.notOk(validSecret(randomBytes(32).toString('base64')), 'the whsec_ prefix is required');
});

t.test("every block of IANA's special-purpose registries is judged by whether it is globally reachable", async (t) => {
  for (const { block, name, reachable } of SPECIAL_BLOCKS) {
    const [net, bits] = block.split('/') as [string, string];
    // The block's first address, and one further in where the block has room.
    const inside = net.includes(':') ? `${net.replace(/::$/, ':')}:1`.replace(/^:::1$/, '::1') : net.replace(/\.0$/, '.1');
    for (const ip of Number(bits) < (net.includes(':') ? 120 : 30) ? [net, inside] : [net])
      t.equal(internalAddress(ip), !reachable, `${ip} (${block}, ${name}) is ${reachable ? 'reachable' : 'refused'}`);
  }
  // The review's gaps: local-use NAT64, IPv4-translated, Teredo, discard-only and site-local.
  for (const ip of ['64:ff9b:1::a9fe:a9fe', '::ffff:0:a9fe:a9fe', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '100::1', 'fec0::1'])
    t.ok(internalAddress(ip), `${ip} is internal`);
  for (const ip of ['64:ff9b::5db8:d822', '2001:4860:4860::8888', '2001:1::1']) t.notOk(internalAddress(ip), `${ip} is globally reachable`);
  await t.rejects(checkDestination('http://[64:ff9b:1::a9fe:a9fe]/', []), /internal address/, 'refused when set');
});

t.test('internal addresses are refused in every spelling, before anything is sent, unless allowed by name', async (t) => {
  for (const ip of [
    '127.0.0.1',
    '127.1.2.3',
    '0.0.0.0',
    '10.1.2.3',
    '100.64.0.1',
    '169.254.169.254',
    '172.16.5.4',
    '192.168.1.1',
    '::1',
    '::',
    'fc00::1',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '64:ff9b::a9fe:a9fe',
    // IPv4-compatible (::/96) and 6to4 (2002::/16) are refused whole, whatever IPv4 address they carry.
    '::127.0.0.1',
    '::7f00:1',
    '::5db8:d822',
    '2002:7f00:1::1',
    '2002:a9fe:a9fe::',
    '2002:5db8:d822::1',
  ])
    t.ok(internalAddress(ip), `${ip} is internal`);
  for (const ip of ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '::ffff:5db8:d822'])
    t.notOk(internalAddress(ip), `${ip} is not`);
  const ep = await endpoint(t);
  const port = new URL(ep.url).port;
  // The URL parser's forms of loopback, and a name that resolves to it (checked where the connection is made).
  for (const host of [
    '127.0.0.1',
    '2130706433',
    '0x7f.1',
    '[::1]',
    '[::ffff:127.0.0.1]',
    '[::127.0.0.1]',
    '[2002:7f00:1::1]',
    'localhost',
  ]) {
    const out = await sendWebhook({ url: `http://${host}:${port}/hook`, id: 'i', body: '{}' }, { attempts: 3, backoffMs: 10 });
    t.equal(out.ok, false, `${host}: refused`);
    t.match(out.error, /internal address.*OUTBOUND_ALLOWED_HOSTS/, `${host}: says why and what to set`);
    t.equal(out.attempts, 1, `${host}: not retried`);
  }
  t.equal(ep.received.length, 0, 'nothing reached the endpoint');
  t.ok(
    (await sendWebhook({ url: ep.url, id: 'a', body: '{}' }, { allowHosts: parseAllowedHosts('localhost, 127.0.0.1') })).ok,
    'allowed by name',
  );
  t.ok(
    (await sendWebhook({ url: ep.url, id: 'p', body: '{}' }, { allowHosts: parseAllowedHosts(`127.0.0.1:${port}`) })).ok,
    'allowed with its port',
  );
  const otherPort = await sendWebhook(
    { url: ep.url, id: 'q', body: '{}' },
    { allowHosts: parseAllowedHosts(`127.0.0.1:${Number(port) + 1}`) },
  );
  t.match(otherPort.error, /internal address/, 'an entry with a port allows that port only');
  const byName = await sendWebhook({ url: `http://localhost:${port}/hook`, id: 'n', body: '{}' }, { allowHosts: ['localhost'] });
  t.ok(byName.ok, 'a name allowed reaches the address it resolves to');
  await t.rejects(checkDestination('http://169.254.169.254/latest/meta-data', []), /internal address/);
  await t.rejects(checkDestination('http://[::127.0.0.1]/', []), /internal address/, 'IPv4-compatible, when set');
  await t.rejects(checkDestination('http://[2002:7f00:1::1]/', []), /internal address/, '6to4, when set');
  await t.rejects(checkDestination(`http://localhost:${port}/`, []), /internal address/, 'a name is resolved when set');
  await checkDestination('http://127.0.0.1:9/', ['127.0.0.1']);
});
