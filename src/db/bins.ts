// Time buckets for the console's charts: a window cut into steps aligned to the epoch, and a count of a
// table's rows per bucket. A query builder, not a store: each store calls countsPerBin on its own table.
import { sql, type RawBuilder } from 'kysely';
import type { Executor } from './index.ts';
import type { Database } from './schema.ts';

export interface BinWindow {
  start: Date;
  end: Date;
  stepMinutes: number;
}

const stepOf = (w: BinWindow) => sql`make_interval(mins => ${w.stepMinutes})`;

/** The bucket of a timestamp column (an SQL expression). */
export function binOf(w: BinWindow, column: string): RawBuilder<unknown> {
  return sql`date_bin(${stepOf(w)}, ${sql.ref(column)}, timestamptz '1970-01-01Z')`;
}

/** Rows of one connection per bucket of [start, end), by a timestamp column; every bucket present (0 when empty). */
export async function countsPerBin(
  db: Executor,
  table: keyof Database,
  column: string,
  connectionId: number,
  w: BinWindow,
): Promise<{ at: Date; n: number }[]> {
  const step = stepOf(w);
  return (
    await sql<{ at: Date; n: number }>`
    SELECT b.at, coalesce(n.n, 0)::int AS n
      FROM generate_series(${w.start}::timestamptz, ${w.end}::timestamptz - ${step}, ${step}) AS b(at)
      LEFT JOIN (SELECT ${binOf(w, column)} AS at, count(*) AS n FROM ${sql.table(table)}
                  WHERE connection_id = ${connectionId} AND ${sql.ref(column)} >= ${w.start} AND ${sql.ref(column)} < ${w.end}
                  GROUP BY 1) n USING (at)
     ORDER BY b.at`.execute(db)
  ).rows;
}
