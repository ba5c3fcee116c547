// The delivery_rejections store (migration 0120): deliveries the receiver refused, counted per connection name (as
// the delivery's URL named it), reason and minute. The receiver adds them up in memory (src/receiver/rejections.ts)
// and writes each flush with one statement; the alerts evaluator reads them per connection over a window.
import { sql } from 'kysely';
import type { Executor } from './index.ts';

export interface RejectionCount {
  connectionName: string;
  reason: string;
  minute: Date;
  count: number;
  lastAt: Date;
}

/** Adds counts (one statement, whatever their number). */
export async function addRejections(db: Executor, counts: RejectionCount[]): Promise<void> {
  if (!counts.length) return;
  const rows = JSON.stringify(
    counts.map((c) => ({ n: c.connectionName, r: c.reason, m: c.minute.toISOString(), c: c.count, l: c.lastAt.toISOString() })),
  );
  await sql`
    INSERT INTO delivery_rejections AS d (connection_name, reason, minute, count, last_at)
    SELECT n, r, m, c, l FROM jsonb_to_recordset(${rows}::jsonb) AS x(n text, r text, m timestamptz, c bigint, l timestamptz)
    ORDER BY n, r, m
    ON CONFLICT (connection_name, reason, minute) DO UPDATE SET
      count = d.count + excluded.count, last_at = greatest(d.last_at, excluded.last_at)`.execute(db);
}

/** Per existing connection: deliveries refused for `reason` within the last `minutes`, and the latest refusal. */
export async function rejectionsByConnection(
  db: Executor,
  reason: string,
  minutes: number,
): Promise<{ connectionId: number; name: string; count: number; lastAt: Date }[]> {
  const r = await sql<{ id: number; name: string; n: number; last_at: Date }>`
    SELECT c.id, c.name, sum(d.count)::bigint AS n, max(d.last_at) AS last_at
    FROM delivery_rejections d JOIN connections c ON c.name = d.connection_name
    WHERE d.reason = ${reason} AND d.minute > date_trunc('minute', now()) - make_interval(mins => ${minutes})
    GROUP BY c.id, c.name`.execute(db);
  return r.rows.map((x) => ({ connectionId: x.id, name: x.name, count: Number(x.n), lastAt: new Date(x.last_at) }));
}

/** Deletes counts older than `hours`. */
export async function pruneRejections(db: Executor, hours: number): Promise<number> {
  const r = await sql`DELETE FROM delivery_rejections WHERE minute < now() - make_interval(hours => ${hours})`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}
