// The outbound_destinations store (migration 0120): per destination we POST to (a channel's, `channel:<id>`),
// the outcome of the latest POST and how many failed in a row. Written after every POST (src/channels/dispatch.ts);
// read by the alerts evaluator, the metrics and the console.
import { sql, type Selectable } from 'kysely';
import type { Executor } from './index.ts';
import type { OutboundDestinationsTable } from './schema.ts';

export type DestinationRow = Selectable<OutboundDestinationsTable>;

/** Records one POST's outcome: a success clears the failure count, a failure adds one (and starts failing_since). */
export async function recordDestinationOutcome(
  db: Executor,
  name: string,
  host: string,
  outcome: { ok: boolean; status: number | null; error: string | null },
): Promise<Pick<DestinationRow, 'failures' | 'failing_since'>> {
  const r = await sql<Pick<DestinationRow, 'failures' | 'failing_since'>>`
    INSERT INTO outbound_destinations AS d (name, host, failures, failing_since, last_attempt_at, last_status, last_error, last_success_at)
    VALUES (${name}, ${host}, ${outcome.ok ? 0 : 1}, ${outcome.ok ? null : sql`now()`}, now(), ${outcome.status},
            ${outcome.error}, ${outcome.ok ? sql`now()` : null})
    ON CONFLICT (name) DO UPDATE SET
      host = excluded.host,
      failures = CASE WHEN ${outcome.ok} THEN 0 ELSE d.failures + 1 END,
      failing_since = CASE WHEN ${outcome.ok} THEN NULL ELSE coalesce(d.failing_since, now()) END,
      last_attempt_at = now(), last_status = excluded.last_status, last_error = excluded.last_error,
      last_success_at = CASE WHEN ${outcome.ok} THEN now() ELSE d.last_success_at END
    RETURNING d.failures, d.failing_since`.execute(db);
  return r.rows[0]!;
}

/** Every destination; a channel's (`channel:<id>`) with its channel's and connection's names. */
export async function listDestinations(
  db: Executor,
): Promise<(DestinationRow & { channel: string | null; connection: string | null; connection_id: number | null })[]> {
  return (
    await sql<DestinationRow & { channel: string | null; connection: string | null; connection_id: number | null }>`
      SELECT o.*, ch.name AS channel, n.name AS connection, n.id AS connection_id
        FROM outbound_destinations o
        LEFT JOIN channels ch ON o.name = 'channel:' || ch.id
        LEFT JOIN connections n ON n.id = ch.connection_id
       ORDER BY o.name`.execute(db)
  ).rows;
}
