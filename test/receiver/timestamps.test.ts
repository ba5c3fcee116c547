// Only the body of a delivery is signed, so anyone holding an old one (a log, a proxy, a leaked database) can
// send it again under a new X-Service-Delivery and have it stored and processed. The service retries for 3
// days: a timestamp older than that (plus a margin), or far ahead of our clock, is refused and counted.
import t from 'tap';
import { metrics } from '../../src/metrics.ts';
import { deliver, startReceiver } from './harness.ts';

const DAY = 86_400;
const now = () => Math.floor(Date.now() / 1000);
const body = (timestamp: number | undefined, objectId = 7) =>
  JSON.stringify({
    object_id: objectId,
    event: 'variants.update',
    timestamp,
    resource_url: `http://127.0.0.1:1/variants/${objectId}.json`,
  });

async function refusals(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metrics.deliveriesRejected.get()).values) out[String(v.labels.reason)] = v.value;
  return out;
}

t.test('a delivery older than the service retries, or far in the future, is refused and counted', async (t) => {
  const h = await startReceiver(t, { config: { WEBHOOK_MAX_FUTURE_SECONDS: 300 } });
  const before = await refusals();

  const fresh = body(now() - 60);
  t.equal((await deliver(h.url(), fresh, { 'x-service-delivery': 'first' })).status, 200, 'a delivery of a minute ago');
  const lastRetry = body(now() - 3 * DAY + 600, 8);
  t.equal((await deliver(h.url(), lastRetry, { 'x-service-delivery': 'late' })).status, 200, "the service's last retry, 3 days on");
  const slightlyAhead = body(now() + 60, 9);
  t.equal((await deliver(h.url(), slightlyAhead, { 'x-service-delivery': 'ahead' })).status, 200, 'a clock a minute ahead');
  const undated = body(undefined, 10);
  t.equal((await deliver(h.url(), undated, { 'x-service-delivery': 'undated' })).status, 200, 'no timestamp: nothing to judge');

  // An old delivery, captured and sent again under a new id.
  const old = body(now() - 4 * DAY, 11);
  const replay = await deliver(h.url(), old, { 'x-service-delivery': 'replayed-under-a-new-id' });
  t.equal(replay.status, 400, 'a 4-day-old delivery is refused');
  t.match(await replay.json(), { error: /older than/ });
  const future = await deliver(h.url(), body(now() + 3600, 12), { 'x-service-delivery': 'from-the-future' });
  t.equal(future.status, 400, 'an hour ahead is refused (the service retries it; by then it is not ahead)');
  t.match(await future.json(), { error: /ahead/ });

  const ids = (await h.rows()).map((r) => r.delivery_id);
  t.same(ids.sort(), ['ahead', 'first', 'late', 'undated'], 'only the four in time are stored');
  const after = await refusals();
  t.equal((after.stale ?? 0) - (before.stale ?? 0), 1, 'commerce_sync_deliveries_rejected_total{reason="stale"} counts one');
  t.equal((after.future ?? 0) - (before.future ?? 0), 1, '{reason="future"} counts one');
  t.match(h.logs.text(), /delivery refused: timestamp/, 'each refusal is logged');
});

t.test('WEBHOOK_MAX_FUTURE_SECONDS=0 checks no timestamp (a sandbox whose clock runs fast or is set by hand)', async (t) => {
  const h = await startReceiver(t, { config: { WEBHOOK_MAX_FUTURE_SECONDS: 0 } });
  t.equal((await deliver(h.url(), body(now() + 100 * DAY))).status, 200, 'far ahead');
  t.equal((await deliver(h.url(), body(1_700_000_000, 8))).status, 200, 'long ago');
});
