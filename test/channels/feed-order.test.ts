// The feed's ids become visible in the order their transactions commit, so a reader following ids never skips a
// change; and a transaction that made changes does not hold up other writers until it commits (migration 0190:
// the feed's lock is taken at commit, not when the change is made).
import t from 'tap';
import { sql } from 'kysely';
import { addConnection, testDatabase } from '../support/db.ts';
import { catalog } from '../../src/catalog/index.ts';
import { changesAfter } from '../../src/db/channels.ts';
import { upsertRecords } from '../../src/db/mirror.ts';
import type { Executor } from '../../src/db/index.ts';
import { recomputeChannel } from '../../src/stock/recompute.ts';
import { rulesFrom } from '../../src/stock/rules.ts';
import { mirror, settings, variant } from './harness.ts';

const write = async (tx: Executor, connectionId: number, record: any) =>
  recomputeChannel(tx, rulesFrom(settings), connectionId, (await upsertRecords(tx, catalog.variant!, connectionId, [record])).applied, {
    kind: 'sweep',
  });

t.test('a writer still open holds up no other, and its change comes after theirs in the feed', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  await mirror(db, c.id, [variant(1, { 1: ['10'] }), variant(2, { 1: ['4'] })]);
  const start = Number((await changesAfter(db, { since: 0, limit: 100 })).at(-1)!.id);

  // A changes variant 1 and stays open; B changes variant 2 and commits meanwhile.
  let finish!: () => void;
  const held = new Promise<void>((r) => (finish = r));
  let wrote!: () => void;
  const written = new Promise<void>((r) => (wrote = r));
  const a = db.transaction().execute(async (tx) => {
    const made = await write(tx, c.id, variant(1, { 1: ['7'] }));
    wrote();
    await held;
    return made;
  });
  await written;
  let b: unknown[] = [];
  let seen: Awaited<ReturnType<typeof changesAfter>> = [];
  try {
    b = await db.transaction().execute(async (tx) => {
      // Before, B waited here for A's commit: the lock was taken where A made its change.
      await sql`SET LOCAL lock_timeout = '3s'`.execute(tx);
      return write(tx, c.id, variant(2, { 1: ['9'] }));
    });
    seen = await changesAfter(db, { since: start, limit: 100 });
  } finally {
    finish(); // A commits now, whatever B met
  }
  t.equal(b.length, 1, "B's change made");
  t.same(
    seen.map((x) => [x.variant_id, x.quantity]),
    [[2, '9']],
    "a reader sees B's committed change, not A's open one",
  );
  t.equal((await a).length, 1, "A's change made");
  const next = await changesAfter(db, { since: Number(seen[0]!.id), limit: 100 });
  t.same(
    next.map((x) => [x.variant_id, x.quantity]),
    [[1, '7']],
    "A's change comes after the cursor the reader holds: nothing skipped",
  );
  const last = await sql<{ variant_id: number; last_change_id: number }>`
    SELECT variant_id::int AS variant_id, last_change_id::int AS last_change_id FROM channel_quantities ORDER BY variant_id`.execute(db);
  t.same(
    last.rows,
    [
      { variant_id: 1, last_change_id: Number(next[0]!.id) },
      { variant_id: 2, last_change_id: Number(seen[0]!.id) },
    ],
    'each quantity names its latest change',
  );
  const staged = await sql<{ n: number }>`SELECT count(*)::int AS n FROM channel_changes_staged`.execute(db);
  t.equal(staged.rows[0]!.n, 0, 'nothing left staged');
});

t.test('a rolled-back transaction leaves nothing in the feed', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  await mirror(db, c.id, [variant(1, { 1: ['10'] })]);
  const before = await changesAfter(db, { since: 0, limit: 100 });
  await t.rejects(
    db.transaction().execute(async (tx) => {
      await write(tx, c.id, variant(1, { 1: ['3'] }));
      throw new Error('rolled back');
    }),
    /rolled back/,
  );
  t.same(await changesAfter(db, { since: 0, limit: 100 }), before, 'the feed is as it was');
  const staged = await sql<{ n: number }>`SELECT count(*)::int AS n FROM channel_changes_staged`.execute(db);
  t.equal(staged.rows[0]!.n, 0, 'nothing staged');
});
