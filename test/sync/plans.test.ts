// How often a connection is swept (src/sync/schedules.ts, src/db/sweep-plans.ts), against a real database: quiet
// sweeps with webhooks in place double the interval up to the maximum; drift, missing webhooks or a refused event of a
// swept resource keep it at the base; deliveries that stop make the next sweep due at once; the due sweeps of every
// connection are asked for in one insert; subscription checks skip connections whose deliveries flow.
import t from 'tap';
import { sql } from 'kysely';
import { addConnection, testDatabase } from '../support/db.ts';
import { testConfig } from '../support/config.ts';
import { planAfterSweep, requestDueSweeps, webhooksInPlace } from '../../src/sync/schedules.ts';
import { takeDueSweeps, webhookChecksDue } from '../../src/db/sweep-plans.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { createQueues } from '../../src/queue/queues.ts';
import { captureLogger } from '../support/log.ts';

const config = testConfig({ RECONCILE_INTERVAL_MINUTES: 5, RECONCILE_MAX_INTERVAL_MINUTES: 60 });

const plan = async (db: any, id: number) =>
  (
    await sql<{ interval_minutes: number; due_in: number }>`SELECT interval_minutes,
      extract(epoch FROM due_at - now())::float8 / 60 AS due_in FROM sweep_plans WHERE connection_id = ${id}`.execute(db)
  ).rows[0]!;

/** A delivery received `minutesAgo` minutes ago. */
const delivery = (db: any, connectionId: number, id: string, minutesAgo: number) =>
  sql`INSERT INTO webhook_deliveries (connection_id, delivery_id, body, state, received_at)
    VALUES (${connectionId}, ${id}, '{}', 'processed', now() - make_interval(mins => ${minutesAgo}))`.execute(db);

t.test('quiet sweeps double the interval up to the maximum; drift sets it back', async (t) => {
  const { db } = await testDatabase(t);
  const shop = await addConnection(db, 'shop');
  await db.updateTable('connections').set({ webhook_address: 'https://example.test/webhooks/shop' }).where('id', '=', shop.id).execute();
  t.equal(await webhooksInPlace(db, shop.id), true);
  const intervals: number[] = [];
  for (let i = 0; i < 6; i++) intervals.push(await planAfterSweep(db, config, shop.id, 0));
  t.same(intervals, [5, 10, 20, 40, 60, 60], 'doubling from the base, capped at RECONCILE_MAX_INTERVAL_MINUTES');
  t.ok(Math.abs((await plan(db, shop.id)).due_in - 60) < 0.1, 'due one interval after the sweep');
  t.equal(await planAfterSweep(db, config, shop.id, 3), 5, 'drift: back to the base interval');
  t.equal(await planAfterSweep(db, config, shop.id, 0), 10, 'and doubling again from there');
  const fixed = testConfig({ RECONCILE_INTERVAL_MINUTES: 5, RECONCILE_MAX_INTERVAL_MINUTES: 5 });
  t.equal(await planAfterSweep(db, fixed, shop.id, 0), 5, 'a maximum equal to the base: a fixed interval');
});

t.test('without webhooks in place the interval stays at the base', async (t) => {
  const { db } = await testDatabase(t);
  const bare = await addConnection(db, 'bare');
  t.equal(await webhooksInPlace(db, bare.id), false, 'no subscriptions made (no webhook address)');
  t.equal(await planAfterSweep(db, config, bare.id, 0), 5);
  t.equal(await planAfterSweep(db, config, bare.id, 0), 5, 'a quiet sweep does not stretch it: sweeps are all it has');
  await db.updateTable('connections').set({ webhook_address: 'https://example.test/webhooks/bare' }).where('id', '=', bare.id).execute();
  await db
    .insertInto('webhook_refusals')
    .values({ connection_id: bare.id, event: 'variant.stock_level_update', base_url: 'http://127.0.0.1:1', reason: 'unknown event' })
    .execute();
  t.equal(await webhooksInPlace(db, bare.id), false, 'an event of a swept resource refused: only sweeps see those changes');
  await db.deleteFrom('webhook_refusals').execute();
  await db
    .insertInto('webhook_refusals')
    .values({ connection_id: bare.id, event: 'webhook_test.ping', base_url: 'http://127.0.0.1:1', reason: 'unknown event' })
    .execute();
  t.equal(await webhooksInPlace(db, bare.id), true, 'a refused event of no swept resource does not matter');
});

t.test('due sweeps: every connection in one statement, at their time or when deliveries stop', async (t) => {
  const tdb = await testDatabase(t);
  const { db } = tdb;
  const [a, b, c] = [await addConnection(db, 'a'), await addConnection(db, 'b'), await addConnection(db, 'c')];
  await db
    .insertInto('connections')
    .values({ name: 'off', base_url: 'http://127.0.0.1:1', auth_kind: 'token', status: 'lapsed' })
    .execute();
  const fresh = await addConnection(db, 'fresh');
  // a, b and c were swept by a version without plans; fresh never was (its first full sweep makes its plan).
  await db
    .insertInto('sync_cursors')
    .values([a, b, c].map((x) => ({ connection_id: x.id, resource: 'variant' })))
    .execute();
  t.same(await takeDueSweeps(db, 5, 60, 5), [], 'first look: plans made, the first sweep an interval away');
  t.same(
    (await db.selectFrom('sweep_plans').select('connection_id').orderBy('connection_id').execute()).map((p) => Number(p.connection_id)),
    [a.id, b.id, c.id],
    `a plan per active connection swept before; none for the lapsed one or one never swept (${fresh.name})`,
  );

  await db.updateTable('sweep_plans').set({ due_at: sql`now() - interval '1 second'` }).where('connection_id', '=', a.id).execute();
  // b: deliveries arrived after its last sweep was asked for, the newest 6 minutes ago: they stopped.
  await db.updateTable('sweep_plans').set({ requested_at: sql`now() - interval '30 minutes'` }).where('connection_id', '=', b.id).execute();
  await delivery(db, b.id, 'b1', 20);
  await delivery(db, b.id, 'b2', 6);
  // c: deliveries still flowing (the newest a minute ago): not due.
  await db.updateTable('sweep_plans').set({ requested_at: sql`now() - interval '30 minutes'` }).where('connection_id', '=', c.id).execute();
  await delivery(db, c.id, 'c1', 1);
  const due = await takeDueSweeps(db, 5, 60, 5);
  t.same(
    due.sort((x, y) => x.connectionId - y.connectionId),
    [
      { connectionId: a.id, reason: 'due' },
      { connectionId: b.id, reason: 'deliveries stopped' },
    ],
  );
  t.same(await takeDueSweeps(db, 5, 60, 5), [], 'asked for once: the next look finds nothing due');
  t.ok(Math.abs((await plan(db, a.id)).due_in - 5) < 0.1, 'the next one is an interval later');
  // Workers behind: a's time comes again before its sweep ran. It is not asked for twice (the queue would grow
  // without end), unless the request is an hour old (a lost job).
  await db.updateTable('sweep_plans').set({ due_at: sql`now() - interval '1 second'` }).where('connection_id', '=', a.id).execute();
  t.same(await takeDueSweeps(db, 5, 60, 5), [], 'not again while the sweep asked for has not run');
  await db
    .updateTable('sweep_plans')
    .set({ requested_at: sql`now() - interval '61 minutes'`, due_at: sql`now() - interval '1 second'` })
    .where('connection_id', '=', a.id)
    .execute();
  t.same(await takeDueSweeps(db, 5, 60, 5), [{ connectionId: a.id, reason: 'due' }], 'asked for an hour ago: asked again');
  await planAfterSweep(db, config, a.id, 0);
  await db.updateTable('sweep_plans').set({ due_at: sql`now() - interval '1 second'` }).where('connection_id', '=', a.id).execute();
  t.same(await takeDueSweeps(db, 5, 60, 5), [{ connectionId: a.id, reason: 'due' }], 'once swept, due again at its time');

  // requestDueSweeps puts the due ones in the queue in one insert, each in its connection's group.
  const boss = await startBoss(tdb.url, captureLogger('warn').log, { supervise: false, schedule: false, max: 2 });
  t.teardown(() => stopBoss(boss, false));
  await createQueues(boss);
  await db.updateTable('sweep_plans').set({ due_at: sql`now() - interval '1 second'`, swept_at: sql`now()` }).execute();
  t.equal(await requestDueSweeps(db, boss, config), 3);
  const jobs = await sql<{ data: { connectionId: number; full: boolean }; group_id: string }>`
    SELECT data, group_id FROM pgboss.job WHERE name = 'reconcile' ORDER BY (data->>'connectionId')::int`.execute(db);
  t.same(
    jobs.rows.map((j) => [j.data, j.group_id]),
    [a, b, c].map((x) => [{ connectionId: x.id, full: false }, String(x.id)]),
  );
});

t.test('subscription checks: not while deliveries flow, an idle connection at its sweep interval', async (t) => {
  const { db } = await testDatabase(t);
  const flowing = await addConnection(db, 'flowing');
  const idle = await addConnection(db, 'idle');
  const unsubscribed = await addConnection(db, 'unsubscribed');
  for (const c of [flowing, idle])
    await db
      .updateTable('connections')
      .set({ webhook_address: `https://example.test/webhooks/${c.name}` })
      .where('id', '=', c.id)
      .execute();
  for (const c of [flowing, idle, unsubscribed]) await planAfterSweep(db, config, c.id, 0);
  await delivery(db, flowing.id, 'f1', 2);
  t.same(await webhookChecksDue(db, 15), [idle.id], 'only the subscribed connection without deliveries');
  t.same(await webhookChecksDue(db, 15), [], 'checked: not again at once');
  await db
    .updateTable('sweep_plans')
    .set({ interval_minutes: 60, webhooks_checked_at: sql`now() - interval '20 minutes'` })
    .where('connection_id', '=', idle.id)
    .execute();
  t.same(await webhookChecksDue(db, 15), [], 'an idle connection swept hourly is checked hourly');
  await db
    .updateTable('sweep_plans')
    .set({ webhooks_checked_at: sql`now() - interval '61 minutes'` })
    .where('connection_id', '=', idle.id)
    .execute();
  t.same(await webhookChecksDue(db, 15), [idle.id]);
  t.notOk((await webhookChecksDue(db, 15)).includes(unsubscribed.id));
});
