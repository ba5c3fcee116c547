// A service that sends a delivery twice at once (real-service-notes: at-least-once), many of them: copies of the
// same deliveries land in two commits, in opposite orders, and two inserts of the same keys in opposite orders
// deadlock in PostgreSQL. The commit PostgreSQL ends runs again: every copy is answered 200, every delivery stored once.
import t from 'tap';
import { deliver, payload, startReceiver } from './harness.ts';

t.test('copies of the same deliveries in opposite orders, at once: all answered 200, each stored once', async (t) => {
  const h = await startReceiver(t);
  const statuses: number[] = [];
  for (let round = 0; round < 15; round++) {
    const ids = Array.from({ length: 30 }, (_, i) => `r${round}-d${i}`);
    const send = (list: string[]) =>
      Promise.all(list.map((id, i) => deliver(h.url(), payload(i + 1), { 'x-service-delivery': id }).then((r) => r.status)));
    statuses.push(...(await Promise.all([send(ids), send([...ids].reverse())])).flat());
  }
  t.same(
    statuses.filter((s) => s !== 200),
    [],
    `${statuses.length} POSTs, every one answered 200`,
  );
  const rows = await h.rows();
  t.equal(rows.length, 15 * 30, 'each delivery stored once');
  t.same(await h.jobbed(), await h.queued(), 'each in exactly one job');
});
