// Comparing the mirror with the sandbox, and watching it for regressions, from outside the code under test.
import { sql } from 'kysely';
import type { Db } from '../../src/db/index.ts';

/** Sorted keys, so jsonb's key order does not count as a difference. */
export function canon(v: any): any {
  if (Array.isArray(v)) return v.map(canon);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canon(v[k])]),
    );
  return v;
}

export interface Diff {
  resource: string;
  snapshot: number;
  mirror: number;
  wrong: number[];
  missing: number[];
  extra: number[];
}

/** Resources whose mirror table holds the record as the API renders it (raw), keyed by the API's plural. */
export const MIRRORED = ['variants', 'products', 'orders', 'fulfillments', 'purchase_orders'] as const;

/**
 * Differences between the mirror of one connection and `snapshot` (the sandbox's GET /__sandbox/snapshot,
 * every record incl. archived): records missing, extra, or whose raw record or status differs.
 */
export async function mirrorDiff(db: Db, connectionId: number, resource: string, snapshot: any[]): Promise<Diff> {
  const rows = await sql<{ id: number; raw: any; status: string | null }>`
    SELECT id, raw, status FROM ${sql.table(resource)} WHERE connection_id = ${connectionId}`.execute(db);
  const mine = new Map(rows.rows.map((r) => [Number(r.id), r]));
  const wrong: number[] = [],
    missing: number[] = [];
  for (const rec of snapshot) {
    const m = mine.get(rec.id);
    if (!m) missing.push(rec.id);
    else if (JSON.stringify(canon(m.raw)) !== JSON.stringify(canon(rec)) || (rec.status !== undefined && m.status !== rec.status))
      wrong.push(rec.id);
  }
  const ids = new Set(snapshot.map((r) => r.id));
  return { resource, snapshot: snapshot.length, mirror: mine.size, wrong, missing, extra: [...mine.keys()].filter((id) => !ids.has(id)) };
}

export const clean = (d: Diff) => !d.wrong.length && !d.missing.length && !d.extra.length;
export const describeDiff = (d: Diff) =>
  `${d.resource}: ${d.snapshot} in the sandbox, ${d.mirror} mirrored; wrong ${d.wrong.slice(0, 10).join(',') || '-'}, ` +
  `missing ${d.missing.slice(0, 10).join(',') || '-'}, extra ${d.extra.slice(0, 10).join(',') || '-'}`;

/**
 * Installs a trigger on the mirror tables that records every update moving `updated_at` backwards (a
 * regression: an older version of a record replacing a newer one). Test databases only.
 */
export async function watchRegressions(
  db: Db,
  tables: readonly string[] = [...MIRRORED, 'stock_levels'],
): Promise<() => Promise<{ table: string; id: string; old_at: Date; new_at: Date }[]>> {
  await sql`CREATE TABLE IF NOT EXISTS test_mirror_regressions (tbl text, id text, old_at timestamptz, new_at timestamptz, at timestamptz DEFAULT now())`.execute(
    db,
  );
  await sql`CREATE OR REPLACE FUNCTION test_mirror_regression() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.updated_at < OLD.updated_at THEN
        INSERT INTO test_mirror_regressions (tbl, id, old_at, new_at)
          VALUES (TG_TABLE_NAME, COALESCE(to_jsonb(OLD)->>'id', (to_jsonb(OLD)->>'variant_id') || '@' || (to_jsonb(OLD)->>'location_id')), OLD.updated_at, NEW.updated_at);
      END IF;
      RETURN NEW;
    END $$`.execute(db);
  for (const table of tables) {
    await sql`DROP TRIGGER IF EXISTS test_mirror_regression ON ${sql.table(table)}`.execute(db);
    await sql`CREATE TRIGGER test_mirror_regression BEFORE UPDATE ON ${sql.table(table)} FOR EACH ROW EXECUTE FUNCTION test_mirror_regression()`.execute(
      db,
    );
  }
  return async () =>
    (
      await sql<{ table: string; id: string; old_at: Date; new_at: Date }>`
    SELECT tbl AS table, id, old_at, new_at FROM test_mirror_regressions ORDER BY at`.execute(db)
    ).rows;
}
