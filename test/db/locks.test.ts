// The sweep lease (src/db/locks.ts withSweepLock): one sweep per connection at a time across processes, a lease
// whose holder died is taken over once it runs out, and a sweep holds no pooled connection while it works.
import { sql } from 'kysely';
import t from 'tap';
import { takeSweepLease, withSweepLock } from '../../src/db/locks.ts';
import { addConnection, testDatabase } from '../support/db.ts';

/** A promise and the function that settles it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

t.test('one sweep per connection: a second returns at once, or with wait runs after the first', async (t) => {
  const { db } = await testDatabase(t);
  const shop = await addConnection(db, 'shop');
  const other = await addConnection(db, 'other');
  const first = gate();
  const order: string[] = [];
  const running = withSweepLock(db, shop.id, false, async () => {
    order.push('first started');
    await first.opened;
    order.push('first done');
    return 'first';
  });
  while (!order.length) await new Promise((r) => setTimeout(r, 10));

  t.equal(await withSweepLock(db, shop.id, false, async () => 'second'), undefined, 'held: without wait it does not run');
  t.equal(await withSweepLock(db, other.id, false, async () => 'other'), 'other', 'another connection sweeps meanwhile');
  const waiting = withSweepLock(db, shop.id, true, async () => {
    order.push('waiter ran');
    return 'waiter';
  });
  await new Promise((r) => setTimeout(r, 300));
  t.same(order, ['first started'], 'the waiter waits while the first holds the lease');
  first.open();
  t.equal(await running, 'first');
  t.equal(await waiting, 'waiter');
  t.same(order, ['first started', 'first done', 'waiter ran']);
  const left = await sql<{ n: number }>`SELECT count(*)::int AS n FROM sweep_leases`.execute(db);
  t.equal(left.rows[0]!.n, 0, 'released: no lease left behind');

  // A sweep that throws releases the lease too.
  await t.rejects(
    withSweepLock(db, shop.id, false, async () => {
      throw new Error('API away');
    }),
    /API away/,
  );
  t.equal(await withSweepLock(db, shop.id, false, async () => 'again'), 'again');
});

t.test("a dead holder's lease is taken over once it has run out, not before", async (t) => {
  const { db } = await testDatabase(t);
  const shop = await addConnection(db, 'shop');
  await sql`INSERT INTO sweep_leases (connection_id, holder, until) VALUES (${shop.id}, 'a killed worker', now() + interval '1 minute')`.execute(
    db,
  );
  t.notOk(await takeSweepLease(db, shop.id, 'me'), 'a lease still running is not taken');
  t.equal(await withSweepLock(db, shop.id, false, async () => 'ran'), undefined);
  await sql`UPDATE sweep_leases SET until = now() - interval '1 second'`.execute(db);
  t.equal(await withSweepLock(db, shop.id, false, async () => 'ran'), 'ran', 'a lease that ran out is taken over');
});

t.test('sweeps waiting on the API hold no pooled connection', async (t) => {
  // Two connections in the pool and three sweeps at once: with a session lock each sweep kept one connection for
  // its whole run, so the third could not start and nothing else could query.
  const { db } = await testDatabase(t, { poolSize: 2 });
  const ids = await Promise.all(['a', 'b', 'c'].map(async (n) => (await addConnection(db, n)).id));
  const api = gate();
  let started = 0;
  const sweeps = ids.map((id) =>
    withSweepLock(db, id, false, async () => {
      started++;
      await api.opened;
      return id;
    }),
  );
  for (const end = Date.now() + 5000; started < 3 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
  t.equal(started, 3, 'all three sweeps run at once on a pool of two');
  const r = await sql<{ one: number }>`SELECT 1 AS one`.execute(db);
  t.equal(r.rows[0]!.one, 1, 'the pool still answers while three sweeps run');
  api.open();
  t.same(await Promise.all(sweeps), ids);
});
