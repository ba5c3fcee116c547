// Queue depths and dead letters, read with SQL from pg-boss's own tables so the CLI (which starts no
// pg-boss) and the console see the same live numbers. pgboss.job is partitioned by queue name.
import { sql } from 'kysely';
import type { Db } from '../db/index.ts';
import { deadLetterOf, isDeadLetter, liveQueueOf } from './queue.ts';
import { queues } from './queues.ts';

export interface QueueDepth {
  queue: string;
  /** created or retry: waiting for a worker (dead-letter queues: letters waiting for an operator). */
  queued: number;
  active: number;
  /** failed jobs still retained (recent failures). */
  failed: number;
}

export async function queueDepths(db: Db): Promise<QueueDepth[]> {
  const known = queues.flatMap((q) => [q.name, deadLetterOf(q.name)]);
  const { rows } = await sql<{ name: string; queued: number; active: number; failed: number }>`
    SELECT name,
           count(*) FILTER (WHERE state IN ('created', 'retry'))::int AS queued,
           count(*) FILTER (WHERE state = 'active')::int AS active,
           count(*) FILTER (WHERE state = 'failed')::int AS failed
      FROM pgboss.job
     WHERE state IN ('created', 'retry', 'active', 'failed')
     GROUP BY name`.execute(db);
  const byName = new Map(rows.map((r) => [r.name, r]));
  const names = [...new Set([...known, ...byName.keys()])];
  return names.map((queue) => {
    const r = byName.get(queue);
    return { queue, queued: r?.queued ?? 0, active: r?.active ?? 0, failed: r?.failed ?? 0 };
  });
}

export interface DeadLetter {
  id: string;
  queue: string;
  liveQueue: string;
  data: unknown;
  /** The last error of the job that failed, as pg-boss kept it. */
  error: unknown;
  retries: number | null;
  failedAt: Date;
  firstQueuedAt: Date | null;
}

/** Letters waiting in the dead-letter queues, newest first. connectionId filters on data.connectionId. */
export async function listDeadLetters(db: Db, opts: { queue?: string; connectionId?: number; limit?: number } = {}): Promise<DeadLetter[]> {
  const limit = Math.min(Math.max(opts.limit ?? 100, 1), 1000);
  const deadQueues = opts.queue
    ? [isDeadLetter(opts.queue) ? opts.queue : deadLetterOf(opts.queue)]
    : queues.map((q) => deadLetterOf(q.name));
  const { rows } = await sql<{
    id: string;
    name: string;
    data: unknown;
    source_output: unknown;
    output: unknown;
    source_retry_count: number | null;
    created_on: Date;
    source_created_on: Date | null;
  }>`
    SELECT id, name, data, source_output, output, source_retry_count, created_on, source_created_on
      FROM pgboss.job
     WHERE name = ANY(${deadQueues}) AND state IN ('created', 'retry')
       ${opts.connectionId !== undefined ? sql`AND data->>'connectionId' = ${String(opts.connectionId)}` : sql``}
     ORDER BY created_on DESC
     LIMIT ${limit}`.execute(db);
  return rows.map((r) => ({
    id: r.id,
    queue: r.name,
    liveQueue: liveQueueOf(r.name),
    data: r.data,
    error: r.source_output ?? r.output,
    retries: r.source_retry_count,
    failedAt: r.created_on,
    firstQueuedAt: r.source_created_on,
  }));
}
