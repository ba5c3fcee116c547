// The sweep_plans store (migration 0160): per connection, when its next incremental sweep is due and how far apart
// its sweeps are now. The decisions (how the interval moves) are src/sync/schedules.ts.
import { sql } from 'kysely';
import type { Executor } from './index.ts';

export interface DueSweep {
  connectionId: number;
  /** Why now: its time came, or deliveries stopped after it was last asked for. */
  reason: 'due' | 'deliveries stopped';
}

/**
 * The active connections whose incremental sweep is due, marked asked for (their next one `interval` later, so a
 * sweep lost before it ran is asked for again then). Due: its time has come, or deliveries arrived after its last
 * sweep was asked for and none for `quietMinutes` since (the webhooks may have stopped: the sweep sees). Active
 * connections swept before but without a plan (an upgrade) get one, due an interval from now; a new connection's
 * comes with its first sweep (asked for apart, src/sync/schedules.ts). A
 * connection whose sweep last asked for has yet to run is left out, so a queue that falls behind is not flooded.
 * One statement for every connection.
 */
export async function takeDueSweeps(db: Executor, baseMinutes: number, maxMinutes: number, quietMinutes: number): Promise<DueSweep[]> {
  const { rows } = await sql<{ connection_id: number; stopped: boolean }>`
    WITH planned AS (
      INSERT INTO sweep_plans (connection_id, interval_minutes, due_at)
      SELECT c.id, ${baseMinutes}, now() + make_interval(mins => ${baseMinutes}) FROM connections c
      WHERE c.status = 'active' AND NOT EXISTS (SELECT 1 FROM sweep_plans p WHERE p.connection_id = c.id)
        -- Swept before (a version without plans): a new connection's plan comes with its first sweep.
        AND EXISTS (SELECT 1 FROM sync_cursors s WHERE s.connection_id = c.id)
      ON CONFLICT DO NOTHING
    ), due AS (
      SELECT p.connection_id, p.due_at > now() AS stopped,
        greatest(${baseMinutes}, least(${maxMinutes}, p.interval_minutes)) AS minutes
      FROM sweep_plans p JOIN connections c ON c.id = p.connection_id AND c.status = 'active'
      -- Not while the sweep last asked for has yet to run (workers behind: one per connection in the queue), unless
      -- it was asked for an hour ago (its job was lost).
      WHERE (p.swept_at >= p.requested_at OR p.requested_at < now() - interval '1 hour')
      AND (p.due_at <= now()
        OR (EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.connection_id = p.connection_id AND d.received_at > p.requested_at)
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.connection_id = p.connection_id
            AND d.received_at > now() - make_interval(mins => ${quietMinutes}))))
      FOR UPDATE OF p SKIP LOCKED
    )
    UPDATE sweep_plans p SET requested_at = now(), interval_minutes = due.minutes,
      due_at = now() + make_interval(mins => due.minutes)
    FROM due WHERE p.connection_id = due.connection_id
    RETURNING p.connection_id, due.stopped`.execute(db);
  return rows.map((r) => ({ connectionId: r.connection_id, reason: r.stopped ? 'deliveries stopped' : 'due' }));
}

/**
 * After a sweep: a quiet one (no drift, webhooks in place) doubles the interval up to `maxMinutes`; otherwise it
 * goes back to `baseMinutes`. The next sweep is due one interval after this one ended.
 */
export async function planNextSweep(
  db: Executor,
  connectionId: number,
  quiet: boolean,
  baseMinutes: number,
  maxMinutes: number,
): Promise<{ intervalMinutes: number }> {
  const { rows } = await sql<{ interval_minutes: number }>`
    INSERT INTO sweep_plans AS p (connection_id, interval_minutes, due_at, quiet_sweeps)
    VALUES (${connectionId}, ${baseMinutes}, now() + make_interval(mins => ${baseMinutes}), ${quiet ? 1 : 0})
    ON CONFLICT (connection_id) DO UPDATE SET swept_at = now(),
      interval_minutes = CASE WHEN ${quiet} THEN greatest(${baseMinutes}, least(${maxMinutes}, p.interval_minutes * 2)) ELSE ${baseMinutes} END,
      quiet_sweeps = CASE WHEN ${quiet} THEN p.quiet_sweeps + 1 ELSE 0 END,
      due_at = now() + make_interval(mins => CASE WHEN ${quiet}
        THEN greatest(${baseMinutes}, least(${maxMinutes}, p.interval_minutes * 2)) ELSE ${baseMinutes} END)
    RETURNING p.interval_minutes`.execute(db);
  return { intervalMinutes: Number(rows[0]!.interval_minutes) };
}

/**
 * Connections whose webhook subscriptions are due a check, marked checked: active, subscribed, no delivery within
 * `checkMinutes` (arriving deliveries show the subscriptions work), and not checked within `checkMinutes` or their
 * sweep interval, whichever is longer (an idle account whose sweeps come hourly is checked hourly).
 */
export async function webhookChecksDue(db: Executor, checkMinutes: number): Promise<number[]> {
  const { rows } = await sql<{ connection_id: number }>`
    UPDATE sweep_plans p SET webhooks_checked_at = now()
    FROM connections c
    WHERE c.id = p.connection_id AND c.status = 'active' AND c.webhook_address IS NOT NULL
      AND (p.webhooks_checked_at IS NULL
        OR p.webhooks_checked_at < now() - make_interval(mins => greatest(${checkMinutes}, p.interval_minutes)) + interval '30 seconds')
      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.connection_id = p.connection_id
        AND d.received_at > now() - make_interval(mins => ${checkMinutes}))
    RETURNING p.connection_id`.execute(db);
  return rows.map((r) => r.connection_id).sort((a, b) => a - b);
}
