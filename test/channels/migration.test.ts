// Migration 0130: today's rules become each connection's `default` channel, and the quantities and changes
// already stored become its own with their ids, so a feed cursor goes on without a gap. Migration 0340: a
// destination's POST outcomes move onto its row.
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import pg from 'pg';
import { sql } from 'kysely';
import { emptyDatabase } from '../support/db.ts';
import { createDb, createPool } from '../../src/db/index.ts';
import { listMigrations, migrate, migrationsDir } from '../../src/db/migrate.ts';
import { channelsOf } from '../../src/db/channels.ts';
import { destinationOutcomes } from '../../src/db/channel-destinations.ts';
import { channelFeed } from '../../src/channels/feed.ts';
import { applyRulesIfChanged } from '../../src/stock/recompute.ts';
import { mirror, variant } from './harness.ts';

t.test('existing rules, quantities and changes become the default channel; ids kept; settings adopted at first use', async (t) => {
  const { url } = await emptyDatabase(t);
  const before = await mkdtemp(join(tmpdir(), 'cs-migrations-'));
  t.teardown(() => rm(before, { recursive: true, force: true }));
  for (const f of (await listMigrations()).filter((f) => f < '0130')) await copyFile(join(migrationsDir, f), join(before, f));
  await migrate(url, before);

  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const one = async (q: string, params: unknown[] = []) => (await client.query(q, params)).rows[0];
  const ruled = (await one(`INSERT INTO connections (name, base_url, auth_kind) VALUES ('ruled', 'http://a', 'token') RETURNING id`)).id;
  const plain = (await one(`INSERT INTO connections (name, base_url, auth_kind) VALUES ('plain', 'http://b', 'token') RETURNING id`)).id;
  await client.query(`INSERT INTO channel_rules (connection_id, location_ids, safety_buffer) VALUES ($1, '{2}', 1.5)`, [ruled]);
  await client.query(`INSERT INTO channel_rules_applied (connection_id, fingerprint) VALUES ($1, 'x')`, [ruled]);
  for (const c of [ruled, plain])
    await client.query(
      `INSERT INTO channel_quantities (connection_id, variant_id, sku, status, quantity, tracked, backorderable, stock)
       VALUES ($1, 1, 'SKU-1', 'active', 7, true, false, '{"locations": [], "channel_quantity": "7"}')`,
      [c],
    );
  const ids: number[] = [];
  for (const c of [ruled, plain, ruled])
    ids.push(
      Number(
        (
          await one(
            `INSERT INTO channel_quantity_changes (connection_id, variant_id, sku, quantity, tracked, backorderable, cause)
             VALUES ($1, 1, 'SKU-1', 7, true, false, 'sweep') RETURNING id`,
            [c],
          )
        ).id,
      ),
    );
  await client.end();

  const r = await migrate(url);
  t.ok(r.applied.includes('0130_channels.sql'));
  const pool = createPool(url, 2);
  const db = createDb(pool);
  t.teardown(() => db.destroy());
  const [a] = await channelsOf(db, ruled);
  const [b] = await channelsOf(db, plain);
  t.match(a, { name: 'default', location_ids: [2], buffer_units: '1.5', buffer_percent: null, cap_max_online: true, adopt_settings: [] });
  t.match(b, { name: 'default', location_ids: null, buffer_units: '0', adopt_settings: ['locations', 'buffer'] }, 'waits for the settings');
  const q = await db.selectFrom('channel_quantities').select(['connection_id', 'channel_id']).orderBy('connection_id').execute();
  t.same(
    q.map((x) => x.channel_id),
    [a!.id, b!.id],
  );
  const page = await channelFeed(db, { since: 0, limit: 10 });
  t.notOk('expired' in page);
  if ('expired' in page) return;
  t.same(
    page.changes.map((c) => [c.id, c.connection, c.channel]),
    [
      [ids[0], 'ruled', 'default'],
      [ids[1], 'plain', 'default'],
      [ids[2], 'ruled', 'default'],
    ],
    "the same ids, each now the default channel's",
  );

  // The first process with settings fills in what the migration could not know, and recomputes.
  await db.insertInto('variants').values({ connection_id: plain, id: 1, sku: 'SKU-1', status: 'active', raw: '{}' }).execute();
  t.equal(await applyRulesIfChanged(db, { CHANNEL_LOCATIONS: '1', CHANNEL_SAFETY_BUFFER: '3' }, plain), 1);
  t.match((await channelsOf(db, plain))[0], { location_ids: [1], buffer_units: '3', adopt_settings: [] });
  const next = await channelFeed(db, { since: ids[2]!, limit: 10 });
  if ('expired' in next) return t.fail('expired');
  t.same(
    next.changes.map((c) => [c.connection, c.channel, c.before_quantity, c.quantity, c.cause]),
    [['plain', 'default', '7', '0', 'rules']],
    'the feed goes on from the old cursor',
  );
  t.ok(next.changes[0]!.id > ids[2]!);
  // A connection made after the migration gets its default channel from the settings at its first write.
  const fresh = Number(
    (
      await db
        .insertInto('connections')
        .values({ name: 'new', base_url: 'http://c', auth_kind: 'token' })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id,
  );
  await mirror(db, fresh, [variant(5, { 1: ['2'] })]);
  t.match(await channelsOf(db, fresh), [{ name: 'default', location_ids: null, buffer_units: '0', adopt_settings: [] }]);
});

t.test("migration 0340: a destination's POST outcomes move from outbound_destinations onto its row; the rest go", async (t) => {
  const { url } = await emptyDatabase(t);
  const before = await mkdtemp(join(tmpdir(), 'cs-migrations-'));
  t.teardown(() => rm(before, { recursive: true, force: true }));
  for (const f of (await listMigrations()).filter((f) => f < '0340')) await copyFile(join(migrationsDir, f), join(before, f));
  await migrate(url, before);

  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const one = async (q: string, params: unknown[] = []) => (await client.query(q, params)).rows[0];
  const shop = (await one(`INSERT INTO connections (name, base_url, auth_kind) VALUES ('shop', 'http://a', 'token') RETURNING id`)).id;
  const channel = async (name: string) =>
    Number((await one(`INSERT INTO channels (connection_id, name) VALUES ($1, $2) RETURNING id`, [shop, name])).id);
  const failing = await channel('failing');
  const fine = await channel('fine');
  const unsent = await channel('unsent');
  const gone = await channel('gone');
  for (const id of [failing, fine, unsent])
    await client.query(`INSERT INTO channel_destinations (channel_id, url, secrets) VALUES ($1, 'https://shop.example/hook', 'x')`, [id]);
  await client.query(
    `INSERT INTO outbound_destinations (name, host, failures, failing_since, last_attempt_at, last_status, last_error, last_success_at)
     VALUES ($1, 'shop.example', 4, '2026-01-01T10:00:00Z', '2026-01-01T11:00:00Z', 503, 'answered 503', '2026-01-01T09:00:00Z'),
            ($2, 'shop.example', 0, NULL, '2026-01-02T11:00:00Z', 200, NULL, '2026-01-02T11:00:00Z'),
            ($3, 'old.example', 9, '2025-12-01T10:00:00Z', '2025-12-01T11:00:00Z', NULL, 'refused', NULL),
            ('channel', 'older.example', 5, '2025-11-01T10:00:00Z', '2025-11-01T11:00:00Z', 500, 'answered 500', NULL)`,
    [`channel:${failing}`, `channel:${fine}`, `channel:${gone}`],
  );
  await client.end();

  const r = await migrate(url);
  t.equal(r.applied[0], '0340_destination_state.sql', 'from 0340 on');
  const pool = createPool(url, 2);
  const db = createDb(pool);
  t.teardown(() => db.destroy());
  const rows = await db
    .selectFrom('channel_destinations')
    .select(['channel_id', 'host', 'failures', 'failing_since', 'last_attempt_at', 'last_status', 'last_error', 'last_success_at'])
    .orderBy('channel_id')
    .execute();
  t.same(
    rows.map((d) => ({ ...d, channel_id: Number(d.channel_id) })),
    [
      {
        channel_id: failing,
        host: 'shop.example',
        failures: 4,
        failing_since: new Date('2026-01-01T10:00:00Z'),
        last_attempt_at: new Date('2026-01-01T11:00:00Z'),
        last_status: 503,
        last_error: 'answered 503',
        last_success_at: new Date('2026-01-01T09:00:00Z'),
      },
      {
        channel_id: fine,
        host: 'shop.example',
        failures: 0,
        failing_since: null,
        last_attempt_at: new Date('2026-01-02T11:00:00Z'),
        last_status: 200,
        last_error: null,
        last_success_at: new Date('2026-01-02T11:00:00Z'),
      },
      {
        channel_id: unsent,
        host: null,
        failures: 0,
        failing_since: null,
        last_attempt_at: null,
        last_status: null,
        last_error: null,
        last_success_at: null,
      },
    ],
    "each destination's outcomes copied; one never POSTed to has none",
  );
  t.same(
    (await destinationOutcomes(db)).map((d) => [d.name, d.channel, d.failures]),
    [
      [`channel:${failing}`, 'failing', 4],
      [`channel:${fine}`, 'fine', 0],
    ],
    'what the destination alert reads: the destinations POSTed to, under their old names',
  );
  const left = await sql<{ t: string | null }>`SELECT to_regclass('outbound_destinations')::text AS t`.execute(db);
  t.equal(left.rows[0]!.t, null, 'outbound_destinations is gone');
});
