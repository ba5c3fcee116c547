// The in-process queue in front of the shared budget: every request runs once and every caller gets its answer,
// whatever order priorities arrive in.
import t from 'tap';
import { BudgetGate } from '../../src/api/gate.ts';
import { release } from '../../src/api/budget.ts';
import { testDatabase } from '../support/db.ts';

t.test('a better-ranked request arriving while the head reserves is neither lost nor run twice', async (t) => {
  const { db } = await testDatabase(t);
  const conn = await db
    .insertInto('connections')
    .values({ name: 'gate', base_url: 'http://127.0.0.1:1', auth_kind: 'token' })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db.insertInto('api_budgets').values({ connection_id: conn.id }).execute();
  const gate = new BudgetGate({
    db,
    connectionId: conn.id,
    concurrency: 2,
    settings: { reserve: 0, leaseMs: 30_000 },
    stopped: (status) => new Error(status),
  });
  const runs = new Map<string, number>();
  const call = (name: string, rank: number) =>
    gate.run(rank, async (lease) => {
      runs.set(name, (runs.get(name) ?? 0) + 1);
      await release(db, conn.id, lease, 200, null);
      return name;
    });
  // Low-priority work first; better-ranked requests join while the pump is inside reserve().
  const calls: Promise<string>[] = [];
  for (let i = 0; i < 20; i++) {
    calls.push(call(`sweep-${i}`, 3));
    await new Promise((r) => setImmediate(r));
    calls.push(call(`hook-${i}`, 2));
  }
  const settled = await Promise.race([Promise.all(calls), new Promise<'hung'>((r) => setTimeout(() => r('hung'), 20_000).unref())]);
  t.not(settled, 'hung', 'every caller got its answer');
  t.equal(runs.size, 40, 'every request ran');
  t.same(
    [...runs.values()].filter((n) => n !== 1),
    [],
    'none ran twice',
  );
});
