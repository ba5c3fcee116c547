// Hostile input at a real receiver process: random and mutated bodies, headers and signatures, huge and deeply
// nested bodies, invalid UTF-8, slow bodies. Nothing unsigned is ever accepted or enqueued, nothing makes it
// answer 5xx or exit, and its memory after garbage collection stays where it was.
import t from 'tap';
import { createHmac, randomBytes } from 'node:crypto';
import net from 'node:net';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { testDatabase } from '../support/db.ts';
import { memoryOf, memoryProbe, spawnCli, until } from '../support/processes.ts';
import type { Teardown } from '../support/teardown.ts';

const SECRET = 'fuzz-client-secret';
const sign = (body: Buffer | string, secret = SECRET) => createHmac('sha256', secret).update(body).digest('base64');

// A small seeded generator, so a failure can be replayed (the seed is printed).
const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
let state = seed;
const rand = () => {
  state = (state + 0x6d2b79f5) | 0;
  let x = Math.imul(state ^ (state >>> 15), 1 | state);
  x ^= x + Math.imul(x ^ (x >>> 7), 61 | x);
  return ((x ^ (x >>> 14)) >>> 0) / 2 ** 32;
};
const int = (n: number) => Math.floor(rand() * n);
const pick = <T>(a: T[]): T => a[int(a.length)]!;
const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => int(256)));

const valid = (objectId: number) =>
  JSON.stringify({
    object_id: objectId,
    event: 'variants.stock_level_update',
    timestamp: Math.floor(Date.now() / 1000), // now: the receiver refuses deliveries older than the service retries
    resource_url: `http://127.0.0.1:1/variants/${objectId}.json`,
  });

function mutateBody(b: Buffer): Buffer {
  const c = Buffer.from(b);
  switch (int(5)) {
    case 0: {
      const i = int(c.length);
      c[i] = c[i]! ^ (1 + int(255));
      return c;
    }
    case 1:
      return c.subarray(0, int(c.length));
    case 2:
      return Buffer.concat([c, bytes(1 + int(8))]);
    case 3: {
      const i = int(c.length);
      return Buffer.concat([c.subarray(0, i), c.subarray(i + 1)]);
    }
    default:
      return Buffer.from(
        c.toString('latin1').replace(/\d/, (d) => String((Number(d) + 1) % 10)),
        'latin1',
      );
  }
}

function mutateSignature(s: string): string {
  switch (int(7)) {
    case 0: {
      const i = int(s.length);
      return s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
    }
    case 1:
      return s.replace(/=+$/, '');
    case 2:
      return `${s}=`;
    case 3:
      return `sha256=${s}`;
    case 4:
      return s.toLowerCase() === s ? s.toUpperCase() : s.toLowerCase();
    case 5:
      return Buffer.from(s, 'base64').toString('hex');
    default:
      return s.slice(0, 43);
  }
}

async function post(url: string, body: Buffer | string, headers: Record<string, string>): Promise<number> {
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  await res.arrayBuffer();
  return res.status;
}

/** Raw HTTP over a socket: for what fetch will not send (duplicate headers, no length). Resolves with the status. */
function rawRequest(port: number, head: string, body: Buffer | string | (() => AsyncIterable<Buffer>)): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    s.on('data', (d) => {
      got += d.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
      if (m) {
        s.destroy();
        resolve(Number(m[1]));
      }
    });
    // The receiver may close while we still write (it refuses early): that is an answer, not an error.
    s.on('error', (e) => {
      if (!/EPIPE|ECONNRESET/.test(e.message) && !/^HTTP/.test(got)) reject(e);
    });
    s.on('close', () => {
      if (!/^HTTP/.test(got)) resolve(0);
    });
    s.write(head);
    if (typeof body === 'function')
      void (async () => {
        for await (const c of body()) {
          if (s.destroyed) break;
          s.write(c);
        }
      })();
    else if (body.length) s.end(body);
  });
}

/** A receiver process for connection `shop`, with its memory probe. */
async function startReceiver(t: Teardown) {
  const tdb = await testDatabase(t);
  await tdb.db.insertInto('connections').values({ name: 'shop', base_url: 'http://127.0.0.1:1', auth_kind: 'token' }).execute();
  const receiver = await spawnCli(
    t,
    'receiver',
    ['receiver'],
    {
      DATABASE_URL: tdb.url,
      DATA_DIR: await mkdtemp(join(tmpdir(), 'cs-fuzz-')),
      COMMERCE_CLIENT_SECRET: SECRET,
      SANDBOX: 'off',
      HOST: '127.0.0.1',
      PORT: 0,
      LOG_LEVEL: 'error',
      TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64'),
    },
    { nodeArgs: memoryProbe },
  );
  return { tdb, receiver };
}

t.test('fuzzing the receiver: no forged delivery accepted, no crash, no 5xx, memory bounded', async (t) => {
  t.comment(`FUZZ_SEED=${seed}`);
  const { tdb, receiver } = await startReceiver(t);
  const url = `${receiver.url}/webhooks/shop`;
  const port = Number(new URL(receiver.url).port);
  const statuses = new Map<number, number>();
  const seen = (s: number) => statuses.set(s, (statuses.get(s) ?? 0) + 1);
  const accepted: string[] = [];
  let objectId = 1;
  const sendValid = async () => {
    const id = `valid-${objectId}`;
    const body = valid(objectId++);
    const s = await post(url, body, { 'x-service-signature': sign(body), 'x-service-delivery': id });
    if (s === 200) accepted.push(id);
    return s;
  };

  // Warm up, then the baseline.
  for (let i = 0; i < 30; i++) t.equal(await sendValid(), 200, 'a genuine delivery is accepted');
  const before = await memoryOf(receiver);

  const forgedAccepted: string[] = [];
  const forged = async (label: string, body: Buffer | string, headers: Record<string, string>) => {
    const s = await post(url, body, headers);
    seen(s);
    if (s >= 200 && s < 300) forgedAccepted.push(`${label}: ${s}`);
    return s;
  };
  for (let round = 0; round < 6; round++) {
    // Random bodies with random, missing or other-secret signatures.
    for (let i = 0; i < 40; i++) {
      const body = int(2) ? bytes(int(4096)) : valid(1 + int(1e6));
      const sig = pick([
        randomBytes(32).toString('base64'),
        '',
        sign(body, 'wrong-secret'),
        sign(`${body} `),
        randomBytes(int(80))
          .toString('latin1')
          .replace(/[^\x20-\x7e]/g, 'x'),
      ]);
      const headers: Record<string, string> = { 'x-service-delivery': `forged-${round}-${i}` };
      if (sig || int(2)) headers['x-service-signature'] = sig;
      await forged('random', body, headers);
    }
    // A valid delivery with its body or its signature mutated.
    for (let i = 0; i < 40; i++) {
      const body = Buffer.from(valid(1 + int(1e6)));
      const sig = sign(body);
      const mutated = int(2) ? { body: mutateBody(body), sig } : { body, sig: mutateSignature(sig) };
      if (mutated.body.equals(body) && mutated.sig.trim() === sig) continue;
      await forged('mutated', mutated.body, { 'x-service-signature': mutated.sig, 'x-service-delivery': `mutated-${round}-${i}` });
    }
    // Headers: odd content types, huge delivery ids, junk in every header.
    for (let i = 0; i < 10; i++) {
      const body = valid(1 + int(1e6));
      await forged('headers', body, {
        'content-type': pick([
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/json; charset=utf-16',
          '',
        ]),
        'x-service-signature': mutateSignature(sign(body)),
        'x-service-delivery': 'x'.repeat(int(6000)),
        'x-forwarded-for': '<script>',
      });
    }
    for (let i = 0; i < 3; i++) t.equal(await sendValid(), 200, 'valid deliveries still accepted between rounds');
  }

  // Signed with the right secret but not a delivery: deep nesting, invalid UTF-8, wrong shapes. Refused with 400, never 5xx.
  const signedJunk: Buffer[] = [
    Buffer.from('['.repeat(200_000) + ']'.repeat(200_000)),
    Buffer.from(`${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`),
    Buffer.concat([
      Buffer.from('{"object_id": 1, "event": "variants.update", "x": "'),
      Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0x00, 0xed, 0xa0, 0x80]),
      Buffer.from('"}'),
    ]),
    Buffer.from([0xc0, 0xaf, 0xe0, 0x80, 0xaf]),
    Buffer.from('{"object_id": "1; DROP TABLE webhook_deliveries; --", "event": "variants.update"}'),
    Buffer.from('{"object_id": 1e400, "event": "variants.update"}'),
    Buffer.from('{"object_id": -1, "event": "\\u0000"}'),
    Buffer.from('null'),
    Buffer.from('[]'),
    Buffer.from(''),
    Buffer.from('"string"'),
  ];
  for (const body of signedJunk) {
    const s = await post(url, body, { 'x-service-signature': sign(body), 'x-service-delivery': `junk-${randomBytes(4).toString('hex')}` });
    seen(s);
    t.ok(s < 500, `signed junk of ${body.length} bytes answered ${s}, not a 5xx`);
    if (s === 200) accepted.push('junk');
  }

  // Huge bodies: refused by the declared length, or while streaming without one.
  t.equal(
    await rawRequest(
      port,
      `POST /webhooks/shop HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${64 * 1024 * 1024}\r\nX-Service-Signature: ${sign('x')}\r\n\r\n`,
      '',
    ),
    413,
    '64 MB declared: 413 before any byte of the body',
  );
  const chunked = await rawRequest(
    port,
    'POST /webhooks/shop HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nX-Service-Signature: abc\r\n\r\n',
    async function* () {
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      for (let i = 0; i < 160; i++) yield Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
    },
  );
  t.ok(chunked === 413 || chunked === 0, `10 MB chunked without a length: refused (${chunked || 'connection closed'})`);
  // Duplicate signature headers (one right, one wrong) are not a way in.
  const dupBody = valid(424242);
  const dup = await rawRequest(
    port,
    `POST /webhooks/shop HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${dupBody.length}\r\nX-Service-Signature: ${sign(dupBody, 'wrong')}\r\nX-Service-Signature: ${sign(dupBody)}\r\nX-Service-Delivery: dup-headers\r\nConnection: close\r\n\r\n`,
    dupBody,
  );
  t.ok(dup === 401 || dup === 400, `two signature headers: refused (${dup})`);
  if (dup === 200) forgedAccepted.push('duplicate signature headers');

  t.same(forgedAccepted, [], 'no forged delivery answered 2xx');
  t.notOk(
    [...statuses.keys()].some((s) => s >= 500),
    `no 5xx answer (answers: ${JSON.stringify(Object.fromEntries(statuses))})`,
  );
  t.equal(receiver.child.exitCode, null, 'the receiver is still running');

  // Only the genuine deliveries are stored as work and enqueued.
  const rows = await sql<{ state: string; n: number }>`SELECT state, count(*)::int AS n FROM webhook_deliveries GROUP BY state`.execute(
    tdb.db,
  );
  const byState = Object.fromEntries(rows.rows.map((r) => [r.state, r.n]));
  t.equal(
    (byState.queued ?? 0) + (byState.processed ?? 0),
    accepted.filter((a) => a !== 'junk').length,
    `queued deliveries are exactly the valid ones (${JSON.stringify(byState)})`,
  );
  // A delivery joins its connection's waiting job, so there are at most as many jobs as valid deliveries.
  const jobs = await sql<{ jobs: number; owned: number; other: number }>`SELECT
      (SELECT count(*)::int FROM pgboss.job WHERE name = 'deliveries') AS jobs,
      (SELECT count(*)::int FROM webhook_deliveries w WHERE state IN ('queued', 'processed')
        AND EXISTS (SELECT 1 FROM pgboss.job j WHERE j.name = 'deliveries' AND j.data->>'jobId' = w.job_id)) AS owned,
      (SELECT count(*)::int FROM webhook_deliveries WHERE state NOT IN ('queued', 'processed') AND job_id IS NOT NULL) AS other`.execute(
    tdb.db,
  );
  const genuine = accepted.filter((a) => a !== 'junk').length;
  t.equal(jobs.rows[0]!.owned, genuine, 'every valid delivery is in a job');
  t.equal(jobs.rows[0]!.other, 0, 'nothing else is');
  t.ok(jobs.rows[0]!.jobs >= 1 && jobs.rows[0]!.jobs <= genuine, `${jobs.rows[0]!.jobs} jobs for ${genuine} valid deliveries`);
  const forgedRows = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE delivery_id LIKE 'forged-%' OR delivery_id LIKE 'mutated-%' OR delivery_id = 'dup-headers'`.execute(
    tdb.db,
  );
  t.equal(forgedRows.rows[0]!.n, 0, 'no forged delivery stored at all');

  const after = await memoryOf(receiver);
  const mb = (n: number) => Math.round(n / 1e5) / 10;
  t.comment(
    `receiver memory before: heap ${mb(before.heapUsed)} MB, rss ${mb(before.rss)} MB; after ${[...statuses.values()].reduce((a, b) => a + b, 0)} hostile requests: heap ${mb(after.heapUsed)} MB, rss ${mb(after.rss)} MB`,
  );
  t.ok(after.heapUsed - before.heapUsed < 16e6, `heap after GC grew by less than 16 MB (${mb(after.heapUsed - before.heapUsed)} MB)`);
  t.ok(after.rss - before.rss < 96e6, `RSS grew by less than 96 MB (${mb(after.rss - before.rss)} MB)`);
  await receiver.stop();
});

t.test('a slow body is cut by a timeout, and slow clients do not stop other deliveries', async (t) => {
  const { receiver } = await startReceiver(t);
  const port = Number(new URL(receiver.url).port);
  const before = await memoryOf(receiver);
  // 200 clients that send headers and a byte of body, then nothing.
  const started = Date.now();
  const closedAt: number[] = [];
  const sockets = Array.from({ length: 200 }, () => {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    // Read what the server sends (its 408): an unread socket never reaches 'close'.
    s.resume();
    s.on('close', () => closedAt.push(Date.now() - started));
    s.write(
      `POST /webhooks/shop HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nX-Service-Signature: ${sign('{}')}\r\n\r\n{`,
    );
    return s;
  });
  t.teardown(() => {
    for (const s of sockets) s.destroy();
  });
  await new Promise((r) => setTimeout(r, 500));
  const body = valid(7);
  t.equal(
    await post(`${receiver.url}/webhooks/shop`, body, { 'x-service-signature': sign(body), 'x-service-delivery': 'while-slow' }),
    200,
    'a genuine delivery is answered while 200 slow bodies hang',
  );
  const during = await memoryOf(receiver);
  t.ok(
    during.heapUsed - before.heapUsed < 16e6,
    `200 hanging requests hold less than 16 MB of heap (${Math.round((during.heapUsed - before.heapUsed) / 1e5) / 10} MB)`,
  );
  // The service gives up after 10 s; a receiver should not hold a stalled body much longer than that.
  const cut = await until('the receiver to cut the stalled bodies', () => closedAt.length === sockets.length, 15_000, 200).then(
    () => true,
    () => false,
  );
  t.ok(cut, `stalled bodies cut by the receiver within 15 s (${closedAt.length} of ${sockets.length} closed)`);
  t.equal(receiver.child.exitCode, null, 'the receiver is still running');
  await receiver.stop(5000);
});
