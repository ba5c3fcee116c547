// The receiver's commit slots learn how many commits at once store the most (src/receiver/slots.ts). A simulated
// database: where commits are CPU (a fast flush) one slot stores most; where a flush is slow, slots side by side
// overlap their flushes and the most slots win; with deliveries not waiting for a slot nothing is learnt.
import t from 'tap';
import { CommitSlots } from '../../src/receiver/slots.ts';

/**
 * Runs the slots against a model: `rate(limit)` deliveries per ms stored while saturated. Commits of 5 ms each;
 * returns the limits in use over the last `tail` periods.
 */
function run(slots: CommitSlots, rate: (limit: number) => number, periods: number, saturated = true): number[] {
  let now = 0;
  const seen: number[] = [];
  for (let p = 0; p < periods; p++) {
    slots.busy(saturated, now);
    for (let i = 0; i < 100; i++) {
      now += 5;
      slots.committed(rate(slots.limit) * 5, now);
    }
    seen.push(slots.limit);
  }
  return seen;
}

t.test('a fast flush: one slot stores most, and it stays there', async (t) => {
  const slots = new CommitSlots({ max: 4, initial: 2, periodMs: 500 }, 0);
  const seen = run(slots, (l) => [0, 5, 4.2, 3.8, 3.5][l]!, 200);
  const last = seen.slice(-60);
  t.equal(slots.limit, 1);
  t.ok(last.filter((l) => l === 1).length >= 45, `mostly one slot at the end (${last.join('')})`);
});

t.test('a slow flush: slots side by side store more, up to the most allowed', async (t) => {
  const slots = new CommitSlots({ max: 4, periodMs: 500 }, 0);
  t.equal(slots.limit, 1, 'starts from one');
  const seen = run(slots, (l) => [0, 1, 1.8, 2.5, 3.1][l]!, 300);
  t.equal(seen.at(-1) === 4 || seen.at(-2) === 4, true, `climbed to four (${seen.slice(-30).join('')})`);
});

t.test('an optimum between: two of four', async (t) => {
  const slots = new CommitSlots({ max: 4, periodMs: 500 }, 0);
  const seen = run(slots, (l) => [0, 3, 4, 3.6, 3][l]!, 300);
  t.ok(seen.slice(-60).filter((l) => l === 2).length >= 45, seen.slice(-60).join(''));
});

t.test('not saturated: no score, no change', async (t) => {
  const slots = new CommitSlots({ max: 4, initial: 3, periodMs: 500 }, 0);
  run(slots, () => 1, 50, false);
  t.equal(slots.limit, 3);
  t.same(slots.scores, {});
});

t.test('a fixed maximum of one never moves', async (t) => {
  const slots = new CommitSlots({ max: 1, periodMs: 500 }, 0);
  t.same(new Set(run(slots, () => 2, 50)), new Set([1]));
});
