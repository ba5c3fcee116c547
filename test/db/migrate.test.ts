import t from 'tap';
import { createHash } from 'node:crypto';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { deliveryWithConnection } from '../../src/db/delivery-reads.ts';
import { requeueDelivery } from '../../src/db/deliveries.ts';
import { createDb, createPool } from '../../src/db/index.ts';
import { listMigrations, migrate, migrationsDir, MigrationError } from '../../src/db/migrate.ts';
import { addConnection, emptyDatabase } from '../support/db.ts';

async function tables(url: string): Promise<string[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`);
    return r.rows.map((x) => x.table_name);
  } finally {
    await c.end();
  }
}

t.test('applies every migration once; re-applying is a no-op', async (t) => {
  const { url } = await emptyDatabase(t);
  const all = await listMigrations();
  const first = await migrate(url);
  t.same(first.applied, all);
  const names = await tables(url);
  for (const table of [
    'connections',
    'webhook_deliveries',
    'variants',
    'stock_levels',
    'compositions',
    'orders',
    'order_line_items',
    'fulfillments',
    'fulfillment_line_items',
    'fulfillment_returns',
    'purchase_orders',
    'purchase_order_line_items',
    'companies',
    'addresses',
    'contacts',
    'currencies',
    'locations',
    'products',
    'sync_cursors',
    'sync_log',
    'api_budgets',
    'schema_migrations',
  ]) {
    t.ok(names.includes(table), `table ${table}`);
  }
  const second = await migrate(url);
  t.same(second.applied, []);
  t.same(second.skipped, all);
});

t.test('two processes migrating at once apply each migration once', async (t) => {
  const { url } = await emptyDatabase(t);
  const [a, b] = await Promise.all([migrate(url), migrate(url)]);
  t.equal(a.applied.length + b.applied.length, (await listMigrations()).length);
});

t.test('a broken migration rolls back and leaves the schema as it was', async (t) => {
  const { url } = await emptyDatabase(t);
  const dir = await mkdtemp(join(tmpdir(), 'migr-'));
  t.teardown(() => import('node:fs/promises').then((fs) => fs.rm(dir, { recursive: true, force: true })));
  await cp(migrationsDir, dir, { recursive: true });
  await migrate(url, dir);
  const before = await tables(url);
  await writeFile(join(dir, '9998_good_part.sql'), 'CREATE TABLE half_done (id int);');
  await writeFile(join(dir, '9999_broken.sql'), 'CREATE TABLE also_half (id int);\nSELECT * FROM no_such_table;');
  const err = await migrate(url, dir).catch((e) => e);
  t.ok(err instanceof MigrationError);
  t.equal(err.migration, '9999_broken.sql');
  t.match(err.message, /9999_broken\.sql failed and was rolled back: .*no_such_table/);
  const after = await tables(url);
  t.ok(after.includes('half_done'), 'the good migration before it stays applied');
  t.notOk(after.includes('also_half'), 'nothing of the broken one remains');
  t.same(
    after.filter((x) => x !== 'half_done'),
    before,
  );
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const applied = (await c.query('SELECT name FROM schema_migrations')).rows.map((r) => r.name);
  await c.end();
  t.notOk(applied.includes('9999_broken.sql'));
});

t.test('0370: the waiting rows get their body SHA-256 as bytes, a handled row gets them when it waits again', async (t) => {
  const { url } = await emptyDatabase(t);
  const dir = await mkdtemp(join(tmpdir(), 'migr-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await cp(migrationsDir, dir, { recursive: true });
  // The schema of release 0.2.0, and rows its receiver wrote: the body's digest as hex.
  for (const name of await listMigrations(dir)) if (name >= '0370') await rm(join(dir, name));
  await migrate(url, dir);
  const pool = createPool(url, 2);
  const db = createDb(pool);
  t.teardown(() => db.destroy());
  const { id: connectionId } = await addConnection(db);
  const hex = (body: string) => createHash('sha256').update(body).digest('hex');
  const row = (deliveryId: string, body: string, state: string) =>
    pool.query(
      `INSERT INTO webhook_deliveries (connection_id, delivery_id, body, state, body_digest) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
      [connectionId, deliveryId, body, state, hex(body)],
    );
  await row('waits', '{"object_id":1}', 'queued');
  const handled = Number((await row('handled', '{"object_id":2}', 'processed')).rows[0].id);

  t.same((await migrate(url)).applied.slice(0, 1), ['0370_body_sha256.sql'], '0370 runs first of what came after 0.2.0');
  const bytes = async (deliveryId: string) =>
    (await pool.query(`SELECT body_sha256 FROM webhook_deliveries WHERE delivery_id = $1`, [deliveryId])).rows[0].body_sha256;
  t.same(await bytes('waits'), Buffer.from(hex('{"object_id":1}'), 'hex'), 'a waiting row has its 32 bytes');
  t.equal(await bytes('handled'), null, 'a handled row is left as it was');
  const copy = await pool.query(
    `INSERT INTO webhook_deliveries (connection_id, delivery_id, body, state, body_sha256)
     VALUES ($1, 'copy', '{"object_id":1}', 'queued', decode($2, 'hex')) ON CONFLICT DO NOTHING`,
    [connectionId, hex('{"object_id":1}')],
  );
  t.equal(copy.rowCount, 0, "a copy of the waiting row's body is not stored");
  const indexes = (await pool.query(`SELECT indexname FROM pg_indexes WHERE tablename = 'webhook_deliveries'`)).rows.map(
    (r) => r.indexname,
  );
  t.ok(indexes.includes('webhook_deliveries_waiting_sha256'));
  t.notOk(indexes.includes('webhook_deliveries_waiting_digest'), 'the hex index is gone');

  t.match(await deliveryWithConnection(db, handled), { body_digest: hex('{"object_id":2}') }, 'the console shows the hex it has');
  t.ok(await db.transaction().execute((tx) => requeueDelivery(tx, handled, 'job-1')), 'a replay makes it wait');
  t.same(await bytes('handled'), Buffer.from(hex('{"object_id":2}'), 'hex'), 'and it has its bytes');
  await row('later', '{"object_id":2}', 'processed');
  const again = await db.transaction().execute(async (tx) => {
    const [later] = (await pool.query(`SELECT id FROM webhook_deliveries WHERE delivery_id = 'later'`)).rows;
    return requeueDelivery(tx, Number(later.id), 'job-2');
  });
  t.notOk(again, 'a replay of an old row whose body waits leaves it as it is');
});
