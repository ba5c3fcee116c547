// A service that sends a delivery twice at once (real-service-notes: at-least-once), many of them: copies of the
// same deliveries land in two commits, in opposite orders, and two inserts of the same keys in opposite orders
// deadlock in PostgreSQL. The commit PostgreSQL ends runs again: every copy is answered 200, every delivery stored once.
// The same event resent under a new delivery id is a copy too.
import t from 'tap';
import { deliver, payload, startReceiver } from './harness.ts';

t.test('copies of the same deliveries in opposite orders, at once: all answered 200, each stored once', async (t) => {
  const h = await startReceiver(t);
  const statuses: number[] = [];
  for (let round = 0; round < 15; round++) {
    // A copy is the same delivery: the same id and the same body (the service's retries resend both).
    const deliveries = Array.from({ length: 30 }, (_, i) => ({ id: `r${round}-d${i}`, body: payload(round * 100 + i + 1) }));
    const send = (list: typeof deliveries) =>
      Promise.all(list.map((d) => deliver(h.url(), d.body, { 'x-service-delivery': d.id }).then((r) => r.status)));
    statuses.push(...(await Promise.all([send(deliveries), send([...deliveries].reverse())])).flat());
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

t.test('the same event sent again under a new delivery id (a resend within the retry window) is stored and processed once', async (t) => {
  const h = await startReceiver(t);
  const body = payload(7);
  const first = await deliver(h.url(), body, { 'x-service-delivery': 'first-id' });
  t.equal(first.status, 200);
  const again = await deliver(h.url(), body, { 'x-service-delivery': 'resent-under-a-new-id' });
  t.equal(again.status, 200, 'acknowledged: the service must not retry it');
  t.match(await again.json(), { duplicate: true });
  t.equal((await h.rows()).length, 1, 'stored once');
  t.same(await h.jobbed(), await h.queued(), 'in one job');
  const other = await deliver(h.url(), payload(8), { 'x-service-delivery': 'another-event' });
  t.equal(other.status, 200);
  t.equal((await h.rows()).length, 2, 'another event is stored');
});
