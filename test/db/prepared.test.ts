// Repeated parameterised statements are prepared once per connection (src/db/prepared.ts): what PostgreSQL holds
// on the connection, what stays unnamed, and that errors leave the connection usable.
import t from 'tap';
import { MAX_NAMED, PreparingClient } from '../../src/db/prepared.ts';
import { testDatabase } from '../support/db.ts';
import type { Teardown } from '../support/teardown.ts';

async function client(t: Teardown): Promise<PreparingClient> {
  const { url } = await testDatabase(t);
  const c = new PreparingClient({ connectionString: url });
  await c.connect();
  t.teardown(() => c.end());
  return c;
}

/** The texts prepared on this connection (pg_prepared_statements is per session), but this query's own. */
const prepared = async (c: PreparingClient): Promise<string[]> =>
  (
    await c.query(
      `SELECT statement FROM pg_prepared_statements WHERE name LIKE 'cs\\_%' AND statement NOT LIKE '%pg_prepared_statements%' ORDER BY statement`,
    )
  ).rows.map((r: { statement: string }) => r.statement);

t.test('a parameterised text is prepared on its second run, with the same answers', async (t) => {
  const c = await client(t);
  const text = 'SELECT $1::int + 1 AS n';
  t.same((await c.query(text, [1])).rows, [{ n: 2 }]);
  t.same(await prepared(c), [], 'run once: not prepared');
  t.same((await c.query(text, [2])).rows, [{ n: 3 }]);
  t.same(await prepared(c), [text], 'run twice: prepared');
  t.same((await c.query(text, [41])).rows, [{ n: 42 }], 'later runs use it');
  // The callback form (pg-pool's query) takes the same path.
  const viaCallback = await new Promise((resolve, reject) =>
    c.query(text, [9], (err: Error | null, r: { rows: unknown[] }) => (err ? reject(err) : resolve(r.rows))),
  );
  t.same(viaCallback, [{ n: 10 }]);
  t.same(await prepared(c), [text], 'still one statement');
});

t.test('a text without parameters keeps the simple protocol: several statements in one text still run', async (t) => {
  const c = await client(t);
  for (let i = 0; i < 3; i++) await c.query('CREATE TEMP TABLE IF NOT EXISTS x (v int); INSERT INTO x VALUES (1)', []);
  t.same((await c.query('SELECT count(*)::int AS n FROM x')).rows, [{ n: 3 }]);
  t.same(await prepared(c), [], 'nothing prepared');
});

t.test('a text without parameters that is one plain statement is prepared too (pg-boss inlines its fetch)', async (t) => {
  const c = await client(t);
  const text = `WITH x AS (SELECT 41 AS v) SELECT v + 1 AS n FROM x`;
  t.same((await c.query(text)).rows, [{ n: 42 }]);
  t.same((await c.query(text, [])).rows, [{ n: 42 }], 'an empty list of values is the same text');
  const viaCallback = await new Promise((resolve, reject) =>
    c.query(text, undefined, (err: Error | null, r: { rows: unknown[] }) => (err ? reject(err) : resolve(r.rows))),
  );
  t.same(viaCallback, [{ n: 42 }], "pg-pool's form");
  t.same(await prepared(c), [text], 'prepared on its second run');
  for (let i = 0; i < 2; i++) {
    await c.query('SET application_name = $$x$$');
    await c.query('SELECT 1; SELECT 2');
  }
  t.same(await prepared(c), [text], 'SET and a text of two statements stay on the simple protocol');
});

t.test('a connection names at most MAX_NAMED texts; the rest run unnamed and answer the same', async (t) => {
  const c = await client(t);
  for (let i = 0; i < MAX_NAMED + 20; i++) {
    const text = `SELECT $1::int + ${i} AS n`;
    await c.query(text, [1]);
    t.equal((await c.query(text, [1])).rows[0].n, 1 + i);
  }
  t.equal((await prepared(c)).length, MAX_NAMED);
});

t.test('an error leaves the connection usable: a failed parse, a failed run, an aborted transaction', async (t) => {
  const c = await client(t);
  const bad = 'SELECT $1::int FROM no_such_table';
  for (let i = 0; i < 3; i++) await t.rejects(c.query(bad, [1]), /no_such_table/, `run ${i + 1}: the server's error, not pg's`);
  const text = 'SELECT 10 / $1::int AS n';
  t.same((await c.query(text, [5])).rows, [{ n: 2 }]);
  t.same((await c.query(text, [2])).rows, [{ n: 5 }]);
  await t.rejects(c.query(text, [0]), /division by zero/);
  t.same((await c.query(text, [10])).rows, [{ n: 1 }], 'the prepared statement still runs after its own error');
  await c.query('BEGIN');
  await t.rejects(c.query(text, [0]), /division by zero/);
  await t.rejects(c.query(text, [1]), /current transaction is aborted/);
  await c.query('ROLLBACK');
  t.same((await c.query(text, [1])).rows, [{ n: 10 }], 'after the rollback, as before');
  t.same(await prepared(c), [text]);
});

t.test("our pool's named statements keep one generic plan from their first run (plan_cache_mode)", async (t) => {
  const { pool } = await testDatabase(t);
  const c = await pool.connect();
  t.teardown(() => c.release());
  t.equal((await c.query('SHOW plan_cache_mode')).rows[0].plan_cache_mode, 'force_generic_plan');
  const text = 'SELECT count(*)::int AS n FROM pg_class WHERE relname = $1';
  for (const name of ['pg_class', 'pg_type', 'pg_proc', 'pg_attribute']) await c.query(text, [name]);
  const plans = await c.query('SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1', [text]);
  t.same(
    plans.rows,
    [{ generic_plans: '3', custom_plans: '0' }],
    'named on its second run; every run since on the generic plan, none planned afresh',
  );
});
