// Writes that need not see each other, sent as one statement: each is a data-modifying CTE (one round trip, one
// snapshot, executed to completion whether read or not), and what each answers is an expression of the final
// SELECT. So they must touch different rows, and none may need another's effects (PostgreSQL: "data-modifying
// statements in WITH"). A drain's last writes are the use (src/sync/drain.ts): what it read, cleared and logged.
import { type OperationNodeSource, type RawBuilder, sql } from 'kysely';
import type { Executor } from './index.ts';

export interface Part<R> {
  /** An INSERT, UPDATE or DELETE, with RETURNING when `answer` reads its rows. */
  write: OperationNodeSource;
  /** What the part answers, from its rows (the CTE named `rows`): a scalar expression. */
  answer?: (rows: RawBuilder<unknown>) => RawBuilder<R>;
}

/** Runs the parts (null: none) as one statement; answers each part's `answer` (undefined without one). */
export async function together(db: Executor, parts: (Part<unknown> | null)[]): Promise<unknown[]> {
  const live = parts.flatMap((p, i) => (p ? [{ p, cte: sql.raw(`w${i}`), as: sql.raw(`a${i}`) }] : []));
  if (!live.length) return parts.map(() => undefined);
  const ctes = sql.join(
    live.map(({ p, cte }) => sql`${cte} AS (${p.write})`),
    sql`, `,
  );
  const answers = sql.join(
    live.map(({ p, cte, as }) => sql`${p.answer ? p.answer(cte) : sql`NULL`} AS ${as}`),
    sql`, `,
  );
  const { rows } = await sql<Record<string, unknown>>`WITH ${ctes} SELECT ${answers}`.execute(db);
  return parts.map((_, i) => rows[0]?.[`a${i}`]);
}

/**
 * Reads that need not see each other's results, as one statement: each query's rows come back as a JSON array.
 * So a query reads numerics as text (exact decimals stay strings), and its timestamps come back as ISO strings.
 * The rows are as JSON gave them: the caller says what each query's rows are.
 */
export async function readTogether(db: Executor, queries: OperationNodeSource[]): Promise<unknown[][]> {
  if (!queries.length) return [];
  const columns = sql.join(
    queries.map((q, i) => sql`(SELECT coalesce(json_agg(r), '[]'::json) FROM (${q}) r) AS ${sql.raw(`r${i}`)}`),
    sql`, `,
  );
  const { rows } = await sql<Record<string, unknown[]>>`SELECT ${columns}`.execute(db);
  return queries.map((_, i) => rows[0]![`r${i}`]!);
}

/** Ids a query reads: a list, or a query of one column that names them (so the query can be read together with others). */
export type Ids = number[] | RawBuilder<unknown>;

/** `column` among `ids`. */
export const among = (column: string, ids: Ids): RawBuilder<unknown> =>
  Array.isArray(ids) ? sql`${sql.ref(column)} = ANY(${ids}::bigint[])` : sql`${sql.ref(column)} IN (${ids})`;
