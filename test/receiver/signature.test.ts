import t from 'tap';
import { createHmac } from 'node:crypto';
import { deliver, payload, sign, startReceiver, PREVIOUS } from './harness.ts';
import { verifySignature } from '../../src/receiver/verify.ts';

// A fixed vector computed outside Node: printf '%s' BODY | openssl dgst -sha256 -hmac vector-secret -binary | base64
const VECTOR_BODY =
  '{"object_id":42,"event":"variants.stock_level_update","timestamp":1700000000,"resource_url":"https://api.example.test/variants/42.json"}';
const VECTOR_SIG = 'QQejfLCoxX81t21JzImD3ctRCmNrmvreX9HnswTlqRU=';

t.test('a fixed vector computed with openssl verifies; any change does not', async (t) => {
  t.equal(createHmac('sha256', 'vector-secret').update(VECTOR_BODY).digest('base64'), VECTOR_SIG, 'the vector itself');
  const raw = Buffer.from(VECTOR_BODY);
  t.ok(verifySignature(raw, VECTOR_SIG, ['vector-secret']));
  t.ok(verifySignature(raw, ` \t${VECTOR_SIG}\n`, ['vector-secret']), 'surrounding whitespace is removed');
  t.ok(verifySignature(raw, VECTOR_SIG, ['new-secret', 'vector-secret']), 'the previous secret is accepted');
  t.notOk(verifySignature(raw, VECTOR_SIG, ['other']), 'wrong secret');
  t.notOk(verifySignature(Buffer.from(VECTOR_BODY.replace('42', '43')), VECTOR_SIG, ['vector-secret']), 'tampered body');
  t.notOk(verifySignature(raw, VECTOR_SIG.slice(0, -1), ['vector-secret']), 'truncated');
  t.notOk(verifySignature(raw, VECTOR_SIG.slice(0, -4), ['vector-secret']), 'truncated by a Base64 group');
  t.notOk(verifySignature(raw, `${VECTOR_SIG}=`, ['vector-secret']), 'padded');
  t.notOk(verifySignature(raw, `${VECTOR_SIG}AAAA`, ['vector-secret']), 'extended');
  t.notOk(verifySignature(raw, Buffer.from(VECTOR_SIG, 'base64').toString('hex'), ['vector-secret']), 'hex instead of Base64');
  t.notOk(verifySignature(raw, '', ['vector-secret']), 'empty');
  t.notOk(verifySignature(raw, undefined, ['vector-secret']), 'missing');
  t.notOk(verifySignature(raw, VECTOR_SIG, []), 'no secret configured accepts nothing');
});

t.test('over HTTP: good signatures are stored, bad ones get 401 and store nothing', async (t) => {
  const h = await startReceiver(t);
  const body = payload(7);
  const marker = 'body-marker-never-logged';
  const bad = JSON.stringify({ object_id: 8, event: 'variants.create', note: marker });
  const cases: [string, string | Buffer, Record<string, string | null>, number][] = [
    ['valid', body, {}, 200],
    ['whitespace around a valid signature', payload(9), { 'x-service-signature': `  ${sign(payload(9))} \t` }, 200],
    ['previous secret', payload(10), { 'x-service-signature': sign(payload(10), PREVIOUS) }, 200],
    ['tampered body', bad, { 'x-service-signature': sign(bad.replace('8', '9')) }, 401],
    ['wrong secret', bad, { 'x-service-signature': sign(bad, 'not-the-secret') }, 401],
    ['truncated signature', bad, { 'x-service-signature': sign(bad).slice(0, 40) }, 401],
    ['padded signature', bad, { 'x-service-signature': `${sign(bad)}==` }, 401],
    ['missing signature', bad, { 'x-service-signature': null }, 401],
  ];
  for (const [name, b, headers, status] of cases) {
    const res = await deliver(h.url(), b, headers);
    t.equal(res.status, status, name);
    await res.arrayBuffer();
  }
  const rows = await h.rows();
  t.same(
    rows.map((r) => r.object_id).sort((a, b) => a! - b!),
    [7, 9, 10],
    'only the verified deliveries are stored',
  );
  t.equal((await h.jobbed()).length, 3);
  t.notOk(h.logs.text().includes(marker), 'refused bodies never reach the log');
  t.match(h.logs.text(), /signature does not verify/);
});

t.test('the signature covers the exact bytes, not a re-serialisation', async (t) => {
  const h = await startReceiver(t);
  // Same JSON value, unusual spacing and key order: the signature of these bytes must verify.
  const body = '{ "event" : "orders.create",\n  "object_id":5 , "timestamp":1700000001 }';
  const res = await deliver(h.url(), body);
  t.equal(res.status, 200);
  const [row] = await h.rows();
  t.equal(row!.body, body, 'stored as received');
  t.equal(row!.resource, 'order');
});

t.test('no signing secret configured: every delivery 401, and /readyz says why', async (t) => {
  const h = await startReceiver(t, { config: { COMMERCE_CLIENT_SECRET: '', COMMERCE_CLIENT_SECRET_PREVIOUS: '' } });
  const body = payload(1);
  t.equal(
    (await deliver(h.url(), body, { 'x-service-signature': sign(body, '') })).status,
    401,
    'not even an HMAC keyed with the empty string',
  );
  const ready = await fetch(`${h.base}/readyz`);
  t.equal(ready.status, 503);
  t.match(await ready.json(), { reasons: [/COMMERCE_CLIENT_SECRET is empty/] });
  t.equal((await h.rows()).length, 0);
});
