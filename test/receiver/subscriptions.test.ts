// Refused subscriptions are remembered per connection in the database (webhook_refusals): a service that knows
// only the spec's events is asked once for the documented others, not by every new process at its first check;
// a day later, or with `webhooks sync` (retryRefused), it is asked again.
import t from 'tap';
import { sql } from 'kysely';
import { checkAllWebhooks, listWebhooks, syncWebhooks } from '../../src/receiver/subscriptions.ts';
import { SUBSCRIBED_EVENTS } from '../../src/receiver/events.ts';
import { eventsIn } from '../../src/catalog/index.ts';
import { sandboxWorld } from './harness.ts';

async function world(t: Parameters<typeof sandboxWorld>[0]) {
  const w = await sandboxWorld(t);
  // Subscription attempts the service saw (created or refused).
  const posts = async () => {
    const res = await fetch(`${w.sb.url}/__sandbox/stats`, { headers: { authorization: `Bearer ${w.sb.adminToken}` } });
    const stats = (await res.json()) as { requests: { by_route: Record<string, number> } };
    return Object.entries(stats.requests.by_route)
      .filter(([route]) => /^POST .*\/webhooks$/.test(route))
      .reduce((n, [, c]) => n + c, 0);
  };
  return { ...w, posts };
}

const refusedCount = SUBSCRIBED_EVENTS.length - eventsIn('spec').length;

t.test('a refusal is stored per connection and not asked again by a fresh check, nor by a new process', async (t) => {
  const { h, deps, connection, posts } = await world(t);
  t.ok(refusedCount > 0, 'the spec profile refuses some of the events we subscribe');
  const first = await syncWebhooks(deps, connection, h.base);
  t.equal(first.refused.length, refusedCount, 'refused the first time');
  t.equal(first.created.length, eventsIn('spec').length);
  const stored = await sql<{
    event: string;
    base_url: string;
  }>`SELECT event, base_url FROM webhook_refusals WHERE connection_id = ${connection.id}`.execute(h.tdb.db);
  t.same(stored.rows.map((r) => r.event).sort(), first.refused.map((r) => r.event).sort(), 'the refusals are in the database');
  t.ok(stored.rows.every((r) => r.base_url === connection.base_url));

  // The scheduled check (a worker process: nothing in its memory) asks for nothing.
  const before = await posts();
  const [check] = await checkAllWebhooks(deps);
  t.equal(await posts(), before, 'no subscription request at the next check');
  t.equal(check!.refused.length, 0);
  t.equal(check!.remembered.length, refusedCount, 'the refused events are reported as remembered');
  t.equal(check!.kept.length, eventsIn('spec').length);
});

t.test('a refusal a day old, or retryRefused (webhooks sync), is asked again; an accepted event is forgotten', async (t) => {
  const { h, deps, connection, posts } = await world(t);
  await syncWebhooks(deps, connection, h.base);

  let before = await posts();
  const retried = await syncWebhooks(deps, connection, undefined, { retryRefused: true });
  t.equal((await posts()) - before, refusedCount, 'webhooks sync asks the service again for every refused event');
  t.equal(retried.refused.length, refusedCount, 'still refused');

  await sql`UPDATE webhook_refusals SET refused_at = now() - interval '25 hours' WHERE connection_id = ${connection.id}`.execute(h.tdb.db);
  before = await posts();
  const [check] = await checkAllWebhooks(deps);
  t.equal((await posts()) - before, refusedCount, 'a day later the scheduled check asks again');
  t.equal(check!.refused.length, refusedCount);
  const fresh = await sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_refusals
    WHERE connection_id = ${connection.id} AND refused_at > now() - interval '1 minute'`.execute(h.tdb.db);
  t.equal(fresh.rows[0]!.n, refusedCount, 'and the refusals are renewed');

  // A service that learned an event: pretend one accepted event was refused earlier and its subscription is gone.
  const victim = eventsIn('spec')[0]!;
  await sql`INSERT INTO webhook_refusals (connection_id, event, base_url, refused_at) VALUES (${connection.id}, ${victim}, ${connection.base_url}, now() - interval '2 days')`.execute(
    h.tdb.db,
  );
  const { clientFor } = await import('../../src/api/connections.ts');
  const client = await clientFor(deps, connection);
  const mine = (await listWebhooks(deps, connection, h.base)).find((w) => w.event === victim)!;
  await client.deleteWebhook(mine.id);
  const [repair] = await checkAllWebhooks(deps);
  t.same(
    repair!.created.map((w) => w.event),
    [victim],
    'the stale refusal is asked again and the service accepts',
  );
  const left = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM webhook_refusals WHERE connection_id = ${connection.id} AND event = ${victim}`.execute(h.tdb.db);
  t.equal(left.rows[0]!.n, 0, 'an accepted event is no longer refused');
});

t.test('a connection moved to another service URL asks again', async (t) => {
  const { h, deps, connection, posts } = await world(t);
  await syncWebhooks(deps, connection, h.base);
  await sql`UPDATE webhook_refusals SET base_url = 'http://old-service.example' WHERE connection_id = ${connection.id}`.execute(h.tdb.db);
  const before = await posts();
  await checkAllWebhooks(deps);
  t.equal((await posts()) - before, refusedCount, 'refusals from another service URL do not count');
});
