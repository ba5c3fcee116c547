// The webhook_refusals store: events a connection's service refused to subscribe (migration 0080). The
// subscription sync (src/receiver/subscriptions.ts) decides when to ask again; this module only reads and writes.
import { type Selectable, sql } from 'kysely';
import type { Executor } from './index.ts';
import type { WebhookRefusalsTable } from './schema.ts';

export type WebhookRefusal = Selectable<WebhookRefusalsTable>;

/** Events refused for this connection at this service URL within the last `maxAgeSeconds`. */
export async function recentRefusals(db: Executor, connectionId: number, baseUrl: string, maxAgeSeconds: number): Promise<Set<string>> {
  const rows = await db
    .selectFrom('webhook_refusals')
    .select('event')
    .where('connection_id', '=', connectionId)
    .where('base_url', '=', baseUrl)
    .where('refused_at', '>', sql<Date>`now() - make_interval(secs => ${maxAgeSeconds})`)
    .execute();
  return new Set(rows.map((r) => r.event));
}

/** Records (or renews) refusals; each `refused_at` becomes now. */
export async function saveRefusals(
  db: Executor,
  connectionId: number,
  baseUrl: string,
  refused: Pick<WebhookRefusal, 'event' | 'reason'>[],
): Promise<void> {
  if (!refused.length) return;
  await db
    .insertInto('webhook_refusals')
    .values(refused.map((r) => ({ connection_id: connectionId, event: r.event, base_url: baseUrl, reason: r.reason })))
    .onConflict((oc) =>
      oc.columns(['connection_id', 'event']).doUpdateSet((eb) => ({
        base_url: eb.ref('excluded.base_url'),
        reason: eb.ref('excluded.reason'),
        refused_at: sql<Date>`now()`,
      })),
    )
    .execute();
}

/** Forgets refusals of events the service has now accepted (or that we no longer ask for). */
export async function forgetRefusals(db: Executor, connectionId: number, events: string[]): Promise<void> {
  if (!events.length) return;
  await db.deleteFrom('webhook_refusals').where('connection_id', '=', connectionId).where('event', 'in', events).execute();
}

/** Refusals within the last `maxAgeSeconds` at each connection's current service URL, per connection (the alerts). */
export async function refusalsByConnection(db: Executor, maxAgeSeconds: number): Promise<Map<number, WebhookRefusal[]>> {
  const rows = await db
    .selectFrom('webhook_refusals as r')
    .innerJoin('connections as c', (j) => j.onRef('c.id', '=', 'r.connection_id').onRef('c.base_url', '=', 'r.base_url'))
    .selectAll('r')
    .where('r.refused_at', '>', sql<Date>`now() - make_interval(secs => ${maxAgeSeconds})`)
    .orderBy('r.event')
    .execute();
  const out = new Map<number, WebhookRefusal[]>();
  for (const r of rows) out.set(r.connection_id, [...(out.get(r.connection_id) ?? []), r]);
  return out;
}

/** A connection's webhook address and the events its service refused (for whether its webhooks are in place). */
export async function webhookCoverage(
  db: Executor,
  connectionId: number,
): Promise<{ address: string | null; events: string[] } | undefined> {
  const { rows } = await sql<{ address: string | null; events: string[] }>`
    SELECT c.webhook_address AS address, coalesce(array_agg(r.event) FILTER (WHERE r.event IS NOT NULL), '{}') AS events
    FROM connections c LEFT JOIN webhook_refusals r ON r.connection_id = c.id
    WHERE c.id = ${connectionId} GROUP BY c.id`.execute(db);
  return rows[0];
}
