// The samples store: every statement on console_samples (one row per connection and minute, which the
// console's charts draw). What a sample holds is console/gauges.ts; the charts are console/series.ts.
import { sql, type Insertable, type RawBuilder } from 'kysely';
import type { Executor } from './index.ts';
import type { ConsoleSamplesTable } from './schema.ts';

/** Writes samples; the first writer of a connection's minute wins. */
export async function saveSamples(db: Executor, rows: Insertable<ConsoleSamplesTable>[]): Promise<void> {
  if (!rows.length) return;
  await db
    .insertInto('console_samples')
    .values(rows)
    .onConflict((oc) => oc.columns(['connection_id', 'at']).doNothing())
    .execute();
}

/** Retention: deletes at most `limit` samples older than `olderThanSeconds`; returns how many went. */
export async function pruneSamples(db: Executor, olderThanSeconds: number, limit: number): Promise<number> {
  const r = await sql`DELETE FROM console_samples WHERE ctid = ANY(ARRAY(
    SELECT ctid FROM console_samples WHERE at < now() - make_interval(secs => ${olderThanSeconds}) LIMIT ${limit}))`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

export interface SampleBin {
  at: Date;
  lag: number;
  left: number | null;
  used: number | null;
  deliveries: number;
  jobs: number;
}

/** The samples of [start, end) binned by `bin` (an SQL expression over `at`): the worst of each bin. */
export async function binnedSamples(
  db: Executor,
  connectionId: number,
  w: { start: Date; end: Date },
  bin: RawBuilder<unknown>,
): Promise<SampleBin[]> {
  return (
    await sql<SampleBin>`
    SELECT ${bin} AS at, max(lag_seconds) AS lag, min(budget_remaining) AS left,
           max(budget_limit - budget_remaining) AS used, max(queued_deliveries) AS deliveries, max(queued_jobs) AS jobs
      FROM console_samples WHERE connection_id = ${connectionId} AND at >= ${w.start} AND at < ${w.end}
     GROUP BY 1 ORDER BY 1`.execute(db)
  ).rows;
}
