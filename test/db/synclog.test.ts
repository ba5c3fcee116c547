// logSync: the entries and the live tail's NOTIFY go in one statement; the NOTIFY carries the newest id, once per
// call, and only when the transaction commits.
import t from 'tap';
import { testDatabase } from '../support/db.ts';
import { logSync } from '../../src/db/synclog.ts';

t.test('entries in order, one NOTIFY with the newest id, at commit', async (t) => {
  const tdb = await testDatabase(t);
  const listener = await tdb.pool.connect();
  t.teardown(() => listener.release());
  const payloads: string[] = [];
  listener.on('notification', (n) => {
    if (n.channel === 'sync_log') payloads.push(n.payload ?? '');
  });
  await listener.query('LISTEN sync_log');
  const settle = () => new Promise((r) => setTimeout(r, 200));

  const ids = await logSync(tdb.db, [
    { resource: 'variant', action: 'a', outcome: 'ok' },
    { resource: 'variant', action: 'b', outcome: 'ok' },
    { resource: 'variant', action: 'c', outcome: 'ok' },
  ]);
  t.equal(ids.length, 3);
  t.same(
    ids,
    [...ids].sort((a, b) => Number(a) - Number(b)),
    'ids in the order written',
  );
  const stored = await tdb.db.selectFrom('sync_log').select(['id', 'action']).orderBy('id').execute();
  t.same(
    stored.map((r) => [Number(r.id), r.action]),
    ids.map((id, i) => [Number(id), ['a', 'b', 'c'][i]]),
  );
  await settle();
  t.same(payloads, [String(ids[2])], 'one NOTIFY, the newest id');

  payloads.length = 0;
  await t.rejects(
    tdb.db.transaction().execute(async (tx) => {
      await logSync(tx, { resource: 'variant', action: 'd', outcome: 'ok' });
      throw new Error('rolled back');
    }),
  );
  await settle();
  t.same(payloads, [], 'nothing notified for a rollback');
  t.same(await logSync(tdb.db, []), [], 'nothing to write: no statement');
});
