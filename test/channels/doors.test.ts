// One operation, one function (src/channels/operations.ts), whichever door: the JSON API, the console's form and the
// CLI's verb set the same rows, write the same audit entry (named by the operation, the door in `from`), tell the
// channel the same way (at once: the endpoint, verifying with the `standardwebhooks` package, gets the POST with
// nothing else moving, no maintenance minute running) and refuse the same bad input. Covered so far: a SKU's
// override (set, remove) and a destination's pause and resume; the other operations still have a function per door.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import t from 'tap';
import { channelDeliveryHandler } from '../../src/channels/dispatch.ts';
import { setDestination } from '../../src/channels/destinations.ts';
import { workQueues } from '../../src/worker/handlers.ts';
import { channelEndpoint, type VerifiedPost } from '../support/channel-endpoint.ts';
import { addConnection } from '../support/db.ts';
import { listenLocal } from '../support/http.ts';
import { until } from '../support/processes.ts';
import type { Teardown } from '../support/teardown.ts';
import { consoleServer } from '../console/harness.ts';
import { channelsCommand, mirror, variant } from './harness.ts';

const TOKEN = 'operator-token-of-the-doors-test';
const auth = { authorization: `Bearer ${TOKEN}` };

async function world(t: Teardown) {
  const server = await consoleServer(t, { token: TOKEN, config: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } });
  const { db, rt, base } = server;
  const c = await addConnection(db);
  await mirror(db, c.id, [variant(1, { 1: ['10'] }), variant(2, { 1: ['7'] })]);
  const channel = await db
    .selectFrom('channels')
    .selectAll()
    .where('connection_id', '=', c.id)
    .where('name', '=', 'default')
    .executeTakeFirstOrThrow();
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const posts: VerifiedPost[] = [];
  const ep = channelEndpoint(secret, (p) => {
    posts.push(p);
  });
  const url = await listenLocal(t, ep.server);
  await setDestination(db, rt.clients.key(rt.config), channel.id, { url, secret, from: 'now' }, ['127.0.0.1']);
  rt.onStop.push(await workQueues(rt.workerDeps(), [channelDeliveryHandler], { pollingIntervalSeconds: 0.5 }));
  const run = channelsCommand(server.tdb.url);
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { ...auth, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const form = async (path: string, fields: Record<string, string>) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
      redirect: 'manual',
    });
  /** The quantities the endpoint was told of a SKU, in order. */
  const told = (sku: string) =>
    posts
      .flatMap((p) => (p.payload.data.changes ?? []) as { sku: string; quantity: string }[])
      .filter((c) => c.sku === sku)
      .map((c) => c.quantity);
  const lastAudit = () =>
    db
      .selectFrom('audit_log')
      .select(['action', 'source', 'target', 'connection', 'after'])
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirstOrThrow();
  return { db, channel, run, api, form, told, lastAudit, posts };
}

t.test('an override set by the CLI reaches the channel at once, with nothing else moving', async (t) => {
  const w = await world(t);
  const set = await w.run('override', 'set', 'default', 'SKU-1', 'fixed', '--quantity', '4');
  t.equal(set.code, 0, set.err);
  await until('the channel is told SKU-1 is 4', async () => w.told('SKU-1').includes('4'), 15_000, 100);
  t.match(await w.lastAudit(), { action: 'channels.override.set', source: 'cli', target: 'channel default sku SKU-1', connection: 'shop' });
  const removed = await w.run('override', 'remove', 'default', 'SKU-1');
  t.equal(removed.code, 0, removed.err);
  await until('the channel is told SKU-1 is 10 again', async () => w.told('SKU-1').at(-1) === '10', 15_000, 100);
  t.match(await w.lastAudit(), { action: 'channels.override.remove', source: 'cli' });

  // The API's door: the same operation, the same entry but its door.
  t.equal((await w.api('PUT', '/api/channels/default/overrides/SKU-2', { mode: 'zero' })).status, 200);
  await until('the channel is told SKU-2 is 0', async () => w.told('SKU-2').includes('0'), 15_000, 100);
  t.match(await w.lastAudit(), { action: 'channels.override.set', source: 'api', target: 'channel default sku SKU-2' });
  // The same refusal: no override to remove is a 404 / exit 1 with the same words.
  const none = await w.api('DELETE', '/api/channels/default/overrides/SKU-9');
  const cliNone = await w.run('override', 'remove', 'default', 'SKU-9');
  t.equal(none.status, 404);
  t.equal(cliNone.code, 1);
  t.match(cliNone.err, none.body.error, 'the same message');
});

t.test('pause and resume through the API, the console and the CLI: the same rows, entry, channel effect and refusal', async (t) => {
  const w = await world(t);
  const reasonOf = async () =>
    (await sql<{ r: string | null }>`SELECT paused_reason AS r FROM channel_destinations WHERE channel_id = ${w.channel.id}`.execute(w.db))
      .rows[0]!.r;
  const doors: [string, () => Promise<unknown>, () => Promise<unknown>, (reason: string) => Promise<number>][] = [
    [
      'api',
      () => w.api('POST', '/api/channels/default/destination/pause', {}),
      () => w.api('POST', '/api/channels/default/destination/resume', {}),
      async (reason) => (await w.api('POST', '/api/channels/default/destination/pause', { reason })).status,
    ],
    [
      'console',
      () => w.form(`/channels/${w.channel.id}/destination/pause`, { reason: '' }),
      () => w.form(`/channels/${w.channel.id}/destination/resume`, {}),
      async (reason) => (await w.form(`/channels/${w.channel.id}/destination/pause`, { reason })).status,
    ],
    [
      'cli',
      () => w.run('destination', 'pause', 'default'),
      () => w.run('destination', 'resume', 'default'),
      async (reason) => (await w.run('destination', 'pause', 'default', '--reason', reason)).code,
    ],
  ];
  let sku = 1;
  for (const [door, pause, resume, pauseWith] of doors) {
    await pause();
    t.equal(await reasonOf(), 'paused by an operator', `${door}: the same default reason`);
    t.match(await w.lastAudit(), { action: 'channels.destination.pause', source: door, connection: 'shop', target: 'channel default' });
    // A change made while paused waits; the resume sends it at once.
    const before = w.posts.length;
    await w.api('PUT', `/api/channels/default/overrides/SKU-${sku}`, { mode: 'fixed', quantity: String(20 + sku) });
    await new Promise((r) => setTimeout(r, 1500));
    t.equal(w.posts.length, before, `${door}: nothing sent while paused`);
    await resume();
    t.equal(await reasonOf(), null, `${door}: resumed`);
    t.match(await w.lastAudit(), { action: 'channels.destination.resume', source: door });
    await until(`${door}: the waiting change is sent on resume`, async () => w.told(`SKU-${sku}`).includes(String(20 + sku)), 15_000, 100);
    const refused = await pauseWith('x'.repeat(201));
    t.equal(refused, door === 'cli' ? 2 : 400, `${door}: a reason of 201 characters is refused`);
    t.equal(await reasonOf(), null, `${door}: and nothing is paused`);
    sku = sku === 1 ? 2 : 1;
  }
});
