import t from 'tap';
import { createBatcher, BatcherClosed, BatcherOverloaded, BatcherTimeout } from '../../src/receiver/batcher.ts';

const opts = { maxBatch: 4, maxWaitMs: 5, concurrency: 2, maxPending: 100, maxAgeMs: 60_000 };

t.test('items arriving together share one commit; each gets its own result', async (t) => {
  const calls: number[][] = [];
  const b = createBatcher(
    async (items: number[]) => {
      calls.push(items);
      return items.map((i) => i * 10);
    },
    { ...opts, maxBatch: 50, concurrency: 1 },
  );
  const results = await Promise.all([1, 2, 3, 4, 5].map((i) => b.submit(i)));
  t.same(results, [10, 20, 30, 40, 50]);
  t.same(calls, [[1, 2, 3, 4, 5]]);
});

t.test('what waits is shared among the free commit slots, and a busy slot takes no share', async (t) => {
  const calls: number[][] = [];
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const b = createBatcher(
    async (items: number[]) => {
      calls.push(items);
      if (items.includes(0)) await held;
      return items;
    },
    { ...opts, maxBatch: 50 },
  );
  const together = Promise.all([1, 2, 3, 4, 5].map((i) => b.submit(i)));
  t.same(await together, [1, 2, 3, 4, 5]);
  t.same(
    calls,
    [
      [1, 2, 3],
      [4, 5],
    ],
    'two slots free: two commits side by side',
  );
  calls.length = 0;
  const blocker = b.submit(0);
  await new Promise((r) => setTimeout(r, 20));
  const rest = Promise.all([6, 7, 8, 9].map((i) => b.submit(i)));
  t.same(await rest, [6, 7, 8, 9]);
  t.same(calls, [[0], [6, 7, 8, 9]], 'one slot busy: the free one takes everything');
  release();
  await blocker;
});

t.test('batches are capped, and no more than `concurrency` commits run at once', async (t) => {
  let running = 0,
    most = 0;
  const sizes: number[] = [];
  const b = createBatcher(async (items: number[]) => {
    running++;
    most = Math.max(most, running);
    sizes.push(items.length);
    await new Promise((r) => setTimeout(r, 10));
    running--;
    return items;
  }, opts);
  const all = await Promise.all(Array.from({ length: 30 }, (_, i) => b.submit(i)));
  t.same(
    all,
    Array.from({ length: 30 }, (_, i) => i),
  );
  t.ok(
    sizes.every((s) => s <= 4),
    `batch sizes ${sizes}`,
  );
  t.equal(most, 2);
});

t.test('a failed commit fails every item of that batch, and only those', async (t) => {
  const b = createBatcher(
    async (items: number[]) => {
      if (items.includes(0)) throw new Error('boom');
      return items;
    },
    { ...opts, maxBatch: 1 },
  );
  const [a, c] = await Promise.allSettled([b.submit(0), b.submit(1)]);
  t.match(a, { status: 'rejected', reason: { message: 'boom' } });
  t.match(c, { status: 'fulfilled', value: 1 });
});

t.test('close commits what waits, then refuses new items', async (t) => {
  const committed: number[] = [];
  const b = createBatcher(
    async (items: number[]) => {
      committed.push(...items);
      return items;
    },
    { ...opts, maxWaitMs: 1000 },
  );
  const pending = [b.submit(1), b.submit(2)];
  await b.close();
  t.same(await Promise.all(pending), [1, 2], 'waiting items were committed without waiting out maxWaitMs');
  t.same(committed, [1, 2]);
  t.ok(
    await b.submit(3).then(
      () => false,
      (e) => e instanceof BatcherClosed,
    ),
    'refused: shutting down',
  );
});

t.test('beyond maxPending waiting items, new ones are refused at once', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const b = createBatcher(
    async (items: number[]) => {
      await gate;
      return items;
    },
    { ...opts, maxBatch: 1, maxWaitMs: 0, concurrency: 1, maxPending: 2 },
  );
  const first = b.submit(1); // in flight
  const waiting = [b.submit(2), b.submit(3)];
  t.ok(
    await b.submit(4).then(
      () => false,
      (e) => e instanceof BatcherOverloaded,
    ),
    'refused: overloaded',
  );
  t.equal(b.pending, 3);
  release();
  t.same(await Promise.all([first, ...waiting]), [1, 2, 3]);
});

t.test('an item not committed within maxAgeMs is refused; the commit, when it comes, answers only the others', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const committed: number[] = [];
  const b = createBatcher(
    async (items: number[]) => {
      if (items.includes(1)) await gate; // a stuck database, for the first commit only
      committed.push(...items);
      return items;
    },
    { ...opts, maxBatch: 1, maxWaitMs: 0, concurrency: 1, maxAgeMs: 50 },
  );
  const stuck = b.submit(1);
  const waiting = b.submit(2);
  t.ok(
    await stuck.then(
      () => false,
      (e) => e instanceof BatcherTimeout,
    ),
    'in a commit: refused when its time is up',
  );
  t.ok(
    await waiting.then(
      () => false,
      (e) => e instanceof BatcherTimeout,
    ),
    'waiting for a slot: refused too',
  );
  release();
  t.same(await b.submit(3), 3, 'a later item is answered by its own commit');
  t.same(committed, [1, 2, 3], 'the timed-out items were still committed (their retries are duplicates)');
});
