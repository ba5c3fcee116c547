// The webhook_refusals store: events a connection's service refused to subscribe (migration 0080). The
// subscription sync (src/receiver/subscriptions.ts) decides when to ask again; this module only reads and writes.
import { sql } from 'kysely';
import type { Executor } from './index.ts';

/** Events refused for this connection at this service URL within the last `maxAgeSeconds`. */
export async function recentRefusals(db: Executor, connectionId: number, baseUrl: string, maxAgeSeconds: number): Promise<Set<string>> {
  const { rows } = await sql<{ event: string }>`
    SELECT event FROM webhook_refusals
    WHERE connection_id = ${connectionId} AND base_url = ${baseUrl} AND refused_at > now() - make_interval(secs => ${maxAgeSeconds})`.execute(
    db,
  );
  return new Set(rows.map((r) => r.event));
}

/** Records (or renews) refusals; each `refused_at` becomes now. */
export async function saveRefusals(
  db: Executor,
  connectionId: number,
  baseUrl: string,
  refused: { event: string; reason: string }[],
): Promise<void> {
  if (!refused.length) return;
  await sql`
    INSERT INTO webhook_refusals (connection_id, event, base_url, reason)
    SELECT ${connectionId}, x.event, ${baseUrl}, x.reason FROM jsonb_to_recordset(${JSON.stringify(refused)}::jsonb) AS x(event text, reason text)
    ON CONFLICT (connection_id, event) DO UPDATE SET base_url = excluded.base_url, reason = excluded.reason, refused_at = now()`.execute(
    db,
  );
}

/** Forgets refusals of events the service has now accepted (or that we no longer ask for). */
export async function forgetRefusals(db: Executor, connectionId: number, events: string[]): Promise<void> {
  if (!events.length) return;
  await sql`DELETE FROM webhook_refusals WHERE connection_id = ${connectionId} AND event = ANY(${events}::text[])`.execute(db);
}
