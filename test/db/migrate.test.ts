import t from 'tap';
import { cp, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { listMigrations, migrate, migrationsDir, MigrationError } from '../../src/db/migrate.ts';
import { emptyDatabase } from '../support/db.ts';

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
