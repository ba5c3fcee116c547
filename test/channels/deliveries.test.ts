// Deliveries to channels' destinations (src/jobs/channel-delivery.ts): every POST verified with the
// `standardwebhooks` package from the registry. Three channels with different rules; the endpoint goes down while
// the stock moves, comes back, and receives every channel's final quantities, in order, none overtaken by an older
// one; a retry of the same range carries the same webhook-id; a destination failing too long is paused with its
// reason and resumed through the API without losing a change; a burst of changes makes a bounded number of POSTs
// and jobs, not one per change.
import { channelDeliveryHandler } from '../../src/channels/dispatch.ts';
import { randomBytes } from 'node:crypto';
import { listenLocal } from '../support/http.ts';
import { channelEndpoint } from '../support/channel-endpoint.ts';
import { sql } from 'kysely';
import t from 'tap';
import { announceChanges, requestDueDeliveries } from '../../src/channels/dispatch.ts';
import { createQueues } from '../../src/queue/queues.ts';
import { workQueues } from '../../src/worker/handlers.ts';
import { formatStatus } from '../../src/console/cli.ts';
import { connectionOverviews } from '../../src/console/overview.ts';
import { mountRoutes } from '../../src/channels/routes.ts';
import { addChannel, findChannel } from '../../src/channels/channels.ts';
import { setDestination } from '../../src/channels/destinations.ts';
import { testConfig } from '../support/config.ts';
import { addConnection, testDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { until } from '../support/processes.ts';
import { testRuntime } from '../support/runtime.ts';
import { mirror, variant } from './harness.ts';
import type { Teardown } from '../support/teardown.ts';

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;

interface Received {
  id: string;
  channel: string;
  cursor: number;
  changes: { id: number; variant_id: number; quantity: string | null }[];
}

/** An endpoint per channel path that verifies each POST with the channel's (old) secret; `down` answers 503 (after verifying). */
async function endpoint(t: Teardown, secrets: Record<string, string>) {
  const state = { down: false, received: [] as Received[], refused: [] as string[], failedIds: [] as string[], bad: [] as string[] };
  const { server, refused } = channelEndpoint(
    (channel) => secrets[channel]!,
    ({ payload, headers, path: channel }) => {
      if (state.down) {
        state.failedIds.push(String(headers['webhook-id']));
        return 503;
      }
      state.received.push({ id: String(headers['webhook-id']), channel, cursor: payload.data.cursor, changes: payload.data.changes });
    },
  );
  state.bad = refused;
  const base = await listenLocal(t, server);
  return { ...state, state, url: (channel: string) => `${base}/${channel}` };
}

async function world(t: Teardown, config: Parameters<typeof testConfig>[0] = {}) {
  const tdb = await testDatabase(t);
  const rt = await testRuntime(
    t,
    tdb,
    testConfig({ CHANNEL_LOCATIONS: '', CHANNEL_SAFETY_BUFFER: '0', ...config }),
    captureLogger('silent').log,
    {
      boss: { supervise: true, schedule: false, max: 4 },
    },
  );
  await createQueues(rt.boss, rt.config);
  rt.onStop.push(await workQueues(rt.workerDeps(), [channelDeliveryHandler], { pollingIntervalSeconds: 0.5 }));
  mountRoutes(rt, rt.router);
  await rt.listen(0);
  const c = await addConnection(tdb.db);
  const behind = async () =>
    (
      await sql<{
        n: number;
      }>`SELECT coalesce(sum((SELECT count(*) FROM channel_quantity_changes c WHERE c.channel_id = d.channel_id AND c.id > d.cursor)), 0)::int AS n
        FROM channel_destinations d`.execute(tdb.db)
    ).rows[0]!.n;
  return { tdb, db: tdb.db, rt, c, until, behind };
}

/** Stock moves of `variants` variants, `rounds` times, each announced as the worker announces them. */
async function moveStock(w: Awaited<ReturnType<typeof world>>, variants: number, rounds: number, start = 0) {
  for (let r = 0; r < rounds; r++) {
    const changes = await mirror(
      w.db,
      w.c.id,
      Array.from({ length: variants }, (_, i) => variant(i + 1, { 1: [String(20 + start + r + i)], 2: [String(7 + r)] })),
    );
    await announceChanges(w.rt.workerDeps(), changes);
  }
}

t.test('three channels; the endpoint is down while stock moves; once back, every final quantity arrives in order', async (t) => {
  const w = await world(t);
  await moveStock(w, 5, 1);
  await addChannel(w.db, w.c.id, { name: 'webshop', buffer_units: '1' });
  await addChannel(w.db, w.c.id, { name: 'marketplace', locations: [1], buffer_units: '5' });
  const secrets = { default: secret(), webshop: secret(), marketplace: secret() };
  // The marketplace's secret rotates: signed with the new and the old, verified here with the old.
  const rotated = `${secret()} ${secrets.marketplace}`;
  const ep = await endpoint(t, secrets);
  for (const name of Object.keys(secrets)) {
    const ch = await findChannel(w.db, name);
    await setDestinationOf(w, Number(ch.id), ep.url(name), name === 'marketplace' ? rotated : secrets[name as keyof typeof secrets]);
  }
  await announceChanges(w.rt.workerDeps(), (await w.db.selectFrom('channels').select('id as channel_id').execute()) as any);
  await w.until('the first quantities delivered', async () => (await w.behind()) === 0);

  ep.state.down = true;
  await moveStock(w, 5, 6, 100);
  await w.until('failed POSTs while down', async () => ep.state.failedIds.length >= 3);
  // The endpoint has answered; the sender records the outcome a moment later (under load, later still).
  const stuck = () =>
    w.db.selectFrom('channel_destinations').select(['channel_id', 'cursor', 'batch_through', 'next_attempt_at']).execute();
  // Times out (and fails) if a failed destination does not come to wait for its retry.
  await w.until('each failed destination waiting for its retry', async () => {
    const rows = await stuck();
    return rows.some((d) => d.next_attempt_at !== null) && rows.every((d) => d.next_attempt_at !== null || d.batch_through === null);
  });
  t.pass('a failed destination waits for its retry');
  t.ok((await w.behind()) > 0, 'changes wait behind the cursors');

  ep.state.down = false;
  // Ten minutes later, as far as the backoff is concerned: the retries are due now.
  await sql`UPDATE channel_destinations SET next_attempt_at = now()`.execute(w.db);
  await requestDueDeliveries(w.db, w.rt.boss);
  await w.until('every channel caught up', async () => (await w.behind()) === 0);

  t.same(ep.state.bad, [], 'every POST verified with the channel secret (the old one while it rotates)');
  const finals = await sql<{ channel: string; variant_id: number; quantity: string | null }>`
    SELECT ch.name AS channel, q.variant_id, q.quantity::text AS quantity FROM channel_quantities q JOIN channels ch ON ch.id = q.channel_id
     WHERE q.connection_id = ${w.c.id}`.execute(w.db);
  for (const name of Object.keys(secrets)) {
    const posts = ep.state.received.filter((r) => r.channel === name);
    const ids = posts.flatMap((p) => p.changes.map((c) => c.id));
    t.same(
      ids,
      [...ids].sort((a, b) => a - b),
      `${name}: changes arrive in id order across POSTs`,
    );
    const last = new Map<number, string | null>();
    for (const p of posts) for (const c of p.changes) last.set(c.variant_id, c.quantity);
    const want = new Map(finals.rows.filter((r) => r.channel === name).map((r) => [Number(r.variant_id), r.quantity]));
    t.same(Object.fromEntries(last), Object.fromEntries(want), `${name}: the endpoint holds every final quantity`);
  }
  const quantitiesOf1 = new Set(finals.rows.filter((r) => Number(r.variant_id) === 1).map((r) => r.quantity));
  t.equal(quantitiesOf1.size, 3, 'three channels, three different quantities of the same variant');
  const retried = ep.state.failedIds.filter((id) => ep.state.received.some((r) => r.id === id));
  t.ok(retried.length > 0, `a retry of the same range carries the same webhook-id (${retried.length} of ${ep.state.failedIds.length})`);
});

t.test('a destination failing too long is paused with its reason; resumed through the API, it loses nothing', async (t) => {
  const w = await world(t, { CHANNEL_DELIVERY_PAUSE_MINUTES: 30 });
  await moveStock(w, 3, 1);
  const secrets = { default: secret() };
  const ep = await endpoint(t, secrets);
  const ch = await findChannel(w.db, 'default');
  await setDestinationOf(w, Number(ch.id), ep.url('default'), secrets.default);
  ep.state.down = true;
  await announceChanges(w.rt.workerDeps(), [{ channel_id: Number(ch.id) }]);
  await w.until('a failed POST', async () => ep.state.failedIds.length >= 1);
  // It has been failing for an hour by now.
  await sql`UPDATE channel_destinations SET failing_since = now() - interval '1 hour'`.execute(w.db);
  await sql`UPDATE channel_destinations SET next_attempt_at = now()`.execute(w.db);
  await requestDueDeliveries(w.db, w.rt.boss);
  await w.until('paused', async () => {
    const d = await w.db.selectFrom('channel_destinations').select(['paused_at', 'paused_reason']).executeTakeFirst();
    return d?.paused_at != null;
  });
  const api = (method: string, path: string) =>
    fetch(`${w.rt.publicUrl}${path}`, { method }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
  const shown = await api('GET', '/api/channels/default/destination');
  t.match(shown.body.destination, { state: 'paused', paused_reason: /failing since .* POSTs in a row, last: answered 503/ });
  t.ok(shown.body.destination.behind > 0, 'its changes wait');
  t.match(
    formatStatus(await connectionOverviews(w.db), []).join('\n'),
    /channel {5}default -> 127\.0\.0\.1:\d+: paused, \d+ changes behind, lag \d+ s, failing since .*answered 503\); paused: failing since/,
    '`status` says so',
  );
  await moveStock(w, 3, 2, 50);
  ep.state.down = false;
  t.equal((await api('POST', '/api/channels/default/destination/resume')).status, 200);
  await w.until('caught up after resume', async () => (await w.behind()) === 0);
  t.same(ep.state.bad, []);
  const final = await sql<{
    variant_id: number;
    quantity: string;
  }>`SELECT variant_id, quantity::text AS quantity FROM channel_quantities WHERE channel_id = ${ch.id}`.execute(w.db);
  const last = new Map<number, string | null>();
  for (const p of ep.state.received) for (const c of p.changes) last.set(c.variant_id, c.quantity);
  t.same(Object.fromEntries(last), Object.fromEntries(final.rows.map((r) => [Number(r.variant_id), r.quantity])), 'nothing lost');
  t.match((await api('GET', '/api/channels/default/destination')).body.destination, { state: 'caught up', behind: 0, failures: 0 });
});

t.test('a burst of 2,000 changes makes a bounded number of POSTs and jobs, not one per change', async (t) => {
  const w = await world(t, { CHANNEL_DELIVERY_BATCH: 500 });
  const secrets = { default: secret() };
  const ep = await endpoint(t, secrets);
  await moveStock(w, 1, 1);
  const ch = await findChannel(w.db, 'default');
  await setDestinationOf(w, Number(ch.id), ep.url('default'), secrets.default);
  await announceChanges(w.rt.workerDeps(), [{ channel_id: Number(ch.id) }]);
  await w.until('caught up', async () => (await w.behind()) === 0);
  const before = ep.state.received.length;
  await moveStock(w, 400, 5, 1000);
  await w.until('caught up', async () => (await w.behind()) === 0);
  const posts = ep.state.received.length - before;
  t.ok(posts >= 4 && posts <= 10, `${posts} POSTs for 2,000 changes of 500 at most each`);
  const jobs = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'channel-delivery'`.execute(w.db);
  t.ok(jobs.rows[0]!.n < 30, `${jobs.rows[0]!.n} jobs in all`);
  t.same(ep.state.bad, []);
});

t.test(
  'changes of a channel with nowhere to send them make no delivery job; with a destination, or CHANNEL_WEBHOOK_URL, they do',
  async (t) => {
    const jobs = async (db: Awaited<ReturnType<typeof world>>['db']) =>
      (await sql<{ n: number }>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'channel-delivery'`.execute(db)).rows[0]!.n;
    const w = await world(t);
    await moveStock(w, 3, 2);
    t.equal(await jobs(w.db), 0, 'no destination: no job');
    const secrets = { default: secret() };
    const ep = await endpoint(t, secrets);
    const ch = await findChannel(w.db, 'default');
    await setDestinationOf(w, Number(ch.id), ep.url('default'), secrets.default);
    await moveStock(w, 3, 1, 100);
    t.ok((await jobs(w.db)) >= 1, 'a destination: a job');
    await w.until('delivered', async () => (await w.behind()) === 0);
    t.ok(ep.state.received.length >= 1, 'and its POST');

    const adopting = await world(t, { CHANNEL_WEBHOOK_URL: ep.url('default'), CHANNEL_WEBHOOK_SECRET: secrets.default });
    await moveStock(adopting, 2, 1);
    t.ok((await jobs(adopting.db)) >= 1, 'CHANNEL_WEBHOOK_URL set: the default channel is asked, to adopt it');
  },
);

t.test("a sender killed holding a channel's lease: its changes go when the lease ends, not at the maintenance minute", async (t) => {
  const w = await world(t);
  const secrets = { default: secret() };
  const ep = await endpoint(t, secrets);
  await moveStock(w, 2, 1);
  const ch = await findChannel(w.db, 'default');
  await setDestinationOf(w, Number(ch.id), ep.url('default'), secrets.default);
  // The killed sender's lease: nobody will release it, or ask again once it ends.
  await sql`UPDATE channel_destinations SET claimed_until = now() + interval '4 seconds' WHERE channel_id = ${ch.id}`.execute(w.db);
  const killedAt = Date.now();
  await announceChanges(w.rt.workerDeps(), [{ channel_id: Number(ch.id) }]);
  await new Promise((r) => setTimeout(r, 2000));
  t.equal(ep.state.received.length, 0, 'nothing sent while the lease holds');
  // No maintenance minute runs here (schedule: false): only the job the lease's end asked for can send.
  await w.until('delivered after the lease ended', async () => (await w.behind()) === 0, 20_000);
  t.ok(Date.now() - killedAt >= 4000, 'not before it ended');
  t.same(ep.state.bad, []);
});

async function setDestinationOf(w: Awaited<ReturnType<typeof world>>, channelId: number, url: string, secrets: string) {
  await setDestination(w.db, w.rt.clients.key(w.rt.config), channelId, { url, secret: secrets }, ['127.0.0.1']);
}
