// Retention (src/sync/retention.ts and the stores' prune statements): per table family, rows past their window go
// in batches, and recent rows and the rows that must stay (queued deliveries, unfinished operations, ...) stay.
// pg-boss's own retention is its queues' options (src/jobs/index.ts), checked at the end.
import { sql } from 'kysely';
import t from 'tap';
import { pruneChannelChanges, prunedThrough } from '../../src/db/channels.ts';
import type { Db } from '../../src/db/index.ts';
import { withRetentionLock } from '../../src/db/locks.ts';
import { pruneSyncLog } from '../../src/db/synclog.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { createQueues } from '../../src/queue/queues.ts';
import { deadLetterOf } from '../../src/queue/queue.ts';
import { createApp, listen } from '../../src/server.ts';
import type { Runtime } from '../../src/runtime.ts';
import { channelFeed } from '../../src/channels/feed.ts';
import { mountRoutes } from '../../src/channels/routes.ts';
import { enforceRetention } from '../../src/sync/retention.ts';
import { syncSchedules } from '../../src/sync/schedules.ts';
import { testConfig } from '../support/config.ts';
import { addConnection, testDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { maintenanceQueue } from '../../src/queue/contracts.ts';

const config = testConfig(); // the defaults: deliveries 7 days, dead letters 30, sync log 30, changes 30, operations 90, samples 7
const ago = (days: number) => sql<Date>`now() - make_interval(secs => ${days * 86_400})`;
const count = async (db: Db, table: string, where = sql`true`) =>
  (await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)} WHERE ${where}`.execute(db)).rows[0]!.n;

t.test('sync log: entries past SYNC_LOG_RETENTION_DAYS go a batch at a time, recent ones stay', async (t) => {
  const { db } = await testDatabase(t);
  await sql`INSERT INTO sync_log (at, action) SELECT ${ago(31)}, 'old' FROM generate_series(1, 25)`.execute(db);
  await sql`INSERT INTO sync_log (at, action) SELECT ${ago(29)}, 'recent' FROM generate_series(1, 5)`.execute(db);
  const batches: number[] = [];
  for (let n = 10; n === 10; ) batches.push((n = await pruneSyncLog(db, 30 * 86_400, 10)));
  t.same(batches, [10, 10, 5], 'each statement deletes at most its batch');
  t.equal(await count(db, 'sync_log', sql`action = 'old'`), 0);
  t.equal(await count(db, 'sync_log', sql`action = 'recent'`), 5);
});

t.test(
  'deliveries: settled ones go after DELIVERY_RETENTION_DAYS, failed ones after DEAD_LETTER_RETENTION_DAYS, queued ones stay',
  async (t) => {
    const { db } = await testDatabase(t);
    const c = await addConnection(db);
    const add = (key: string, state: string, receivedDays: number, processedDays: number | null) =>
      sql`INSERT INTO webhook_deliveries (connection_id, delivery_id, body, state, received_at, processed_at)
        VALUES (${c.id}, ${key}, '{}', ${state}, ${ago(receivedDays)}, ${processedDays === null ? null : ago(processedDays)})`.execute(db);
    for (let i = 0; i < 12; i++) await add(`processed-old-${i}`, 'processed', 8, 8);
    await add('unhandled-old', 'unhandled', 8, 8);
    await add('rejected-old', 'rejected', 8, null);
    await add('processed-recent', 'processed', 6, 6);
    await add('replayed-lately', 'processed', 20, 0.1); // received long ago, processed again an hour ago
    await add('queued-old', 'queued', 60, null); // never handled: stays whatever its age
    await add('failed-8-days', 'failed', 8, 8); // its dead letter may still be replayed
    await add('failed-31-days', 'failed', 31, 31);

    const run = await enforceRetention(db, config, { batch: 5 });
    t.ok(run?.done, 'one run got every family down to its window');
    t.equal(run!.deleted.webhook_deliveries, 14);
    t.equal(run!.deleted['webhook_deliveries (failed)'], 1);
    t.ok(run!.batches >= 4, 'the 14 settled deliveries went in batches of 5');
    const left = (await db.selectFrom('webhook_deliveries').select('delivery_id').orderBy('delivery_id').execute()).map(
      (r) => r.delivery_id,
    );
    t.same(left, ['failed-8-days', 'processed-recent', 'queued-old', 'replayed-lately']);
  },
);

t.test('operations: finished ones go after OPERATION_RETENTION_DAYS; unfinished and incomplete imports stay, mappings stay', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  const add = async (name: string, state: string, days: number, result: object | null = null) => {
    const finished = state === 'confirmed' || state === 'failed';
    const row = await sql<{ id: number }>`INSERT INTO push_operations
      (connection_id, kind, input, state, idempotency_key, order_key, result, created_at, updated_at, finished_at)
      VALUES (${c.id}, 'import-order', ${JSON.stringify({ name })}, ${state}, ${`key-${name}`}, ${`channel:${name}`},
              ${result === null ? null : JSON.stringify(result)}, ${ago(days)}, ${ago(days)}, ${finished ? ago(days) : null})
      RETURNING id`.execute(db);
    return Number(row.rows[0]!.id);
  };
  const confirmed = await add('confirmed-old', 'confirmed', 91, { order_id: 7 });
  await add('failed-old', 'failed', 91);
  await add('queued-old', 'queued', 200);
  await add('sent-old', 'sent', 200);
  await add('incomplete-old', 'failed', 200, { order_id: 8, incomplete: true });
  await add('confirmed-recent', 'confirmed', 89);
  await sql`INSERT INTO channel_orders (connection_id, channel, channel_order_id, order_id, operation_id)
            VALUES (${c.id}, 'web', 'W-1', 7, ${confirmed})`.execute(db);

  const run = await enforceRetention(db, config, { batch: 1 });
  t.equal(run!.deleted.push_operations, 2);
  const left = (await db.selectFrom('push_operations').select('input').execute()).map((r) => (r.input as { name: string }).name).sort();
  t.same(left, ['confirmed-recent', 'incomplete-old', 'queued-old', 'sent-old']);
  t.same(
    await db.selectFrom('channel_orders').select(['channel_order_id', 'order_id', 'operation_id']).execute(),
    [{ channel_order_id: 'W-1', order_id: 7, operation_id: null }],
    'the channel order stays mapped (an import of W-1 again still returns order 7)',
  );
});

t.test('channel changes: the oldest go up to the first recent one; the feed answers a cursor older than that with 410', async (t) => {
  const { db, pool } = await testDatabase(t);
  const c = await addConnection(db);
  const channel = (
    await sql<{ id: number }>`INSERT INTO channels (connection_id, name) VALUES (${c.id}, 'default') RETURNING id`.execute(db)
  ).rows[0]!;
  const add = async (days: number) =>
    Number(
      (
        await sql<{
          id: number;
        }>`INSERT INTO channel_quantity_changes (at, connection_id, channel_id, variant_id, quantity, tracked, backorderable, cause)
          VALUES (${ago(days)}, ${c.id}, ${channel.id}, 1, 5, true, false, 'sweep') RETURNING id`.execute(db)
      ).rows[0]!.id,
    );
  const ids: number[] = [];
  for (let i = 0; i < 7; i++) ids.push(await add(31));
  ids.push(await add(1)); // recent
  ids.push(await add(31)); // old, but after a recent one: waits, so only a prefix of ids is ever gone
  const page0 = await channelFeed(db, { since: 0, limit: 100 });
  t.notOk('expired' in page0, 'nothing pruned yet: since=0 is the whole history');

  t.equal(await pruneChannelChanges(db, 30 * 86_400, 3), 3);
  t.equal(await prunedThrough(db), ids[2], 'the mark is the newest id deleted');
  const run = await enforceRetention(db, config, { batch: 3 });
  t.equal(run!.deleted.channel_quantity_changes, 4);
  t.same(
    (await db.selectFrom('channel_quantity_changes').select('id').orderBy('id').execute()).map((r) => Number(r.id)),
    ids.slice(7),
  );
  t.equal(await prunedThrough(db), ids[6]);

  t.same(await channelFeed(db, { since: 0, limit: 100 }), { expired: true, since: 0, kept_after: ids[6] });
  t.same(await channelFeed(db, { since: ids[5]!, limit: 100 }), { expired: true, since: ids[5], kept_after: ids[6] });
  const page = await channelFeed(db, { since: ids[6]!, limit: 100 });
  t.same('changes' in page && page.changes.map((x) => x.id), ids.slice(7), 'from the mark on, every change kept');

  const { app, router } = createApp(pool, captureLogger().log);
  mountRoutes({ database: { db } } as unknown as Runtime, router);
  const server = await listen(app, 0, '127.0.0.1');
  t.teardown(() => server.close());
  const res = await fetch(`http://127.0.0.1:${server.port}/api/channel-stock?since=${ids[1]}`);
  t.equal(res.status, 410, 'an expired cursor is 410 Gone, never a page that skips changes');
  const body = (await res.json()) as { error: string; since: number; kept_after: number };
  t.match(body, { since: ids[1], kept_after: ids[6] });
  t.match(body.error, /CHANNEL_CHANGE_RETENTION_DAYS/);
  t.match(body.error, /since=kept_after/);
  t.equal((await fetch(`http://127.0.0.1:${server.port}/api/channel-stock?since=${ids[6]}`)).status, 200);
});

t.test('console samples: older than CONSOLE_SAMPLE_RETENTION_DAYS go', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  await sql`INSERT INTO console_samples (connection_id, at)
            SELECT ${c.id}, date_trunc('minute', now()) - make_interval(mins => m) FROM generate_series(0, 20 * 1440, 60) AS m`.execute(db);
  const before = await count(db, 'console_samples');
  const run = await enforceRetention(db, config, { batch: 100 });
  t.equal(run!.deleted.console_samples, before - (await count(db, 'console_samples')));
  t.equal(await count(db, 'console_samples', sql`at < now() - interval '7 days'`), 0);
  t.equal(await count(db, 'console_samples', sql`at >= now() - interval '7 days'`), 7 * 24, 'the last 7 days, one an hour');
});

t.test('a run stops at its time budget and the next goes on; one run at a time', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  await sql`INSERT INTO webhook_deliveries (connection_id, delivery_id, body, state, received_at, processed_at)
            SELECT ${c.id}, 'd' || i, '{}', 'processed', ${ago(8)}, ${ago(8)} FROM generate_series(1, 12) AS i`.execute(db);
  const first = await enforceRetention(db, config, { batch: 5, budgetMs: 0 });
  t.same([first!.batches, first!.deleted.webhook_deliveries, first!.done], [1, 5, false], 'budget spent: one batch, then stop');
  const held = await withRetentionLock(db, () => enforceRetention(db, config, { batch: 5 }));
  t.equal(held, undefined, 'a run while another holds the lock does nothing');
  const second = await enforceRetention(db, config, { batch: 5 });
  t.same([second!.deleted.webhook_deliveries, second!.done], [7, true]);
  t.equal(await count(db, 'webhook_deliveries'), 0);
});

t.test('pg-boss: finished jobs go after JOB_RETENTION_HOURS, dead letters wait DEAD_LETTER_RETENTION_DAYS', async (t) => {
  const { url, db } = await testDatabase(t);
  const boss = await startBoss(url, captureLogger('warn').log, { supervise: false, schedule: false, max: 2 });
  t.teardown(() => stopBoss(boss, false));
  await createQueues(boss); // as a receiver does: pg-boss's defaults
  await createQueues(boss, testConfig({ JOB_RETENTION_HOURS: 2, DEAD_LETTER_RETENTION_DAYS: 3 }));
  const live = await boss.getQueue(maintenanceQueue.name);
  const dead = await boss.getQueue(deadLetterOf(maintenanceQueue.name));
  t.match(live, { deleteAfterSeconds: 7200, retryLimit: 2, deadLetter: deadLetterOf(maintenanceQueue.name) });
  t.match(dead, { deleteAfterSeconds: 7200, retentionSeconds: 3 * 86_400 });
  await createQueues(boss); // a process without settings leaves them as they are
  t.match(await boss.getQueue(maintenanceQueue.name), { deleteAfterSeconds: 7200 });

  const done = async () => {
    const id = (await boss.send(maintenanceQueue.name, { task: 'pending' }))!;
    const [job] = await boss.fetch(maintenanceQueue.name);
    t.equal(job?.id, id);
    await boss.complete(maintenanceQueue.name, id);
    return id;
  };
  const oldId = await done();
  const newId = await done();
  await sql`UPDATE pgboss.job SET completed_on = now() - interval '3 hours' WHERE id = ${oldId}::uuid`.execute(db);
  const letter = (await boss.send(deadLetterOf(maintenanceQueue.name), { task: 'pending' }))!;
  await boss.supervise(); // what a worker's pg-boss does every maintenanceIntervalSeconds
  const left = await sql<{ id: string }>`SELECT id::text FROM pgboss.job WHERE name IN ('maintenance', 'maintenance-dead')`.execute(db);
  t.same(left.rows.map((r) => r.id).sort(), [newId, letter].sort(), 'the job finished 3 hours ago is gone');
  const keep = await sql<{ days: number }>`SELECT round(extract(epoch FROM keep_until - created_on) / 86400)::int AS days
    FROM pgboss.job WHERE id = ${letter}::uuid`.execute(db);
  t.equal(keep.rows[0]!.days, 3, 'a dead letter is kept DEAD_LETTER_RETENTION_DAYS unless replayed');
});

t.test('the retention task runs every minute; a schedule of a task not in the list is removed', async (t) => {
  const { url, db } = await testDatabase(t);
  const boss = await startBoss(url, captureLogger('warn').log, { supervise: false, schedule: false, max: 2 });
  t.teardown(() => stopBoss(boss, false));
  await createQueues(boss);
  await boss.schedule(maintenanceQueue.name, '17 4 * * *', { task: 'no-such-task' }, { key: 'no-such-task', tz: 'UTC' });
  await syncSchedules(db, boss, config);
  const schedules = new Map((await boss.getSchedules(maintenanceQueue.name)).map((s) => [s.key, s.cron]));
  t.equal(schedules.get('retention'), '* * * * *');
  t.notOk(schedules.has('no-such-task'));
});
