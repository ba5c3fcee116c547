// The drain's coalescing window is paced by the rate budget: what is left is spread until the reset.
import t from 'tap';
import { sql } from 'kysely';
import { drainWindowSeconds } from '../../src/sync/jobs.ts';
import { markPending } from '../../src/sync/pending.ts';
import { logSync } from '../../src/db/synclog.ts';
import { testDatabase } from '../support/db.ts';

t.test('the window grows as the budget left per second shrinks, between 1 and 60 s', async (t) => {
  const { db } = await testDatabase(t);
  const { id } = await db.insertInto('connections').values({ name: 'paced', base_url: 'http://127.0.0.1:1', auth_kind: 'token' })
    .returning('id').executeTakeFirstOrThrow();
  await db.insertInto('api_budgets').values({ connection_id: id }).execute();
  const budget = (remaining: number, resetInSeconds: number, known = true) => sql`
    UPDATE api_budgets SET remaining = ${remaining}, reset_known = ${known},
      reset_at = now() + make_interval(secs => ${resetInSeconds}) WHERE connection_id = ${id}`.execute(db);

  await budget(300, 300, false);
  t.equal(await drainWindowSeconds(db, id), 1, 'no window known yet: read at once');

  await markPending(db, ['variant', 'order', 'fulfillment', 'purchase_order'].map((resource) => ({ connectionId: id, resource, id: 1 })));
  await budget(300, 300);
  t.equal(await drainWindowSeconds(db, id), 5, 'a full window of 300 for 300 s, 4 resources waiting, a fifth kept: each reads every 5 s');
  await budget(300, 30);
  t.equal(await drainWindowSeconds(db, id), 1, 'plenty left for the time to the reset: 1 s');
  await budget(100, 250);
  t.equal(await drainWindowSeconds(db, id), 13, '100 left for 250 s: 0.32 a second to use, 4 resources: every 13 s');
  await logSync(db, { connectionId: id, resource: 'product', action: 'fetch' });
  t.equal(await drainWindowSeconds(db, id), 20, 'a resource read in the last minutes shares the budget too (15.6 s: the 20 s step)');
  await budget(0, 200);
  t.equal(await drainWindowSeconds(db, id), 60, 'spent: the longest window, the reads wait for the reset anyway');
  await budget(0, -5);
  t.equal(await drainWindowSeconds(db, id), 1, 'the reset has passed: a fresh window, read at once');
});
