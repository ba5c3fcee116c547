// The variants index of the console: every mirrored variant of a connection with its channel quantity,
// available stock per location and its last channel-quantity change, searchable, filterable and sortable.
// Quantities stay decimal strings (PostgreSQL numeric); comparisons happen in SQL.
import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/index.ts';

export const variantFilters = {
  low: 'low stock',
  out: 'out of stock',
  untracked: 'untracked',
  backorderable: 'backorderable',
  bundles: 'bundles',
  'changed-1h': 'changed in the last hour',
  drift: 'corrected by the latest sweep',
} as const;
export type VariantFilter = keyof typeof variantFilters;
export const variantSorts = { sku: 'SKU', quantity: 'channel quantity', changed: 'last change' } as const;
export type VariantSort = keyof typeof variantSorts;

export interface VariantQuery {
  connectionId: number;
  /** Part of a SKU or name, case-insensitive. */
  search?: string;
  filter?: VariantFilter;
  /** Low stock: channel quantity at or below this (a decimal string). */
  threshold?: string;
  sort?: VariantSort;
  desc?: boolean;
  page?: number;
  pageSize?: number;
}

export interface VariantListRow {
  id: number;
  sku: string | null;
  name: string | null;
  status: string | null;
  composite: boolean;
  quantity: string | null;
  tracked: boolean | null;
  backorderable: boolean | null;
  /** Available (on hand - committed) per location, in location order. */
  available: { location: string; quantity: string }[];
  lastChangeAt: Date | null;
  lastChangeCause: string | null;
  lastChangeBefore: string | null;
}

function filterSql(f: VariantFilter, threshold: string, connectionId: number): RawBuilder<boolean> {
  switch (f) {
    case 'low':
      return sql<boolean>`cq.tracked AND cq.quantity <= ${threshold}::numeric`;
    case 'out':
      return sql<boolean>`cq.tracked AND cq.quantity <= 0`;
    case 'untracked':
      return sql<boolean>`cq.tracked IS FALSE`;
    case 'backorderable':
      return sql<boolean>`cq.backorderable`;
    case 'bundles':
      return sql<boolean>`v.composite`;
    case 'changed-1h':
      return sql<boolean>`EXISTS (SELECT 1 FROM channel_quantity_changes c WHERE c.connection_id = v.connection_id AND c.variant_id = v.id AND c.at > now() - interval '1 hour')`;
    // Channel quantities the latest (non-initial) sweep corrected: its changes carry its job id, or, for a
    // sweep run outside a job (the CLI), the sweep cause within its time span.
    case 'drift':
      return sql<boolean>`EXISTS (
      SELECT 1 FROM (SELECT job_id, at, at - make_interval(secs => coalesce(duration_ms, 0) / 1000.0) AS started FROM sync_log
                      WHERE connection_id = ${connectionId} AND action IN ('sweep', 'sweep.full') ORDER BY id DESC LIMIT 1) s
        JOIN channel_quantity_changes c ON c.connection_id = v.connection_id AND c.variant_id = v.id AND c.cause IN ('sweep', 'full-sweep')
       WHERE CASE WHEN s.job_id IS NOT NULL THEN c.job_id = s.job_id ELSE c.job_id IS NULL AND c.at BETWEEN s.started AND s.at END)`;
  }
}

export async function listVariants(db: Db, q: VariantQuery): Promise<{ rows: VariantListRow[]; total: number }> {
  const pageSize = Math.min(Math.max(q.pageSize ?? 50, 1), 500);
  const page = Math.max(q.page ?? 1, 1);
  const where: RawBuilder<boolean>[] = [sql<boolean>`v.connection_id = ${q.connectionId}`, sql<boolean>`v.status IS DISTINCT FROM 'gone'`];
  if (q.search) {
    const like = `%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    where.push(sql<boolean>`(v.sku ILIKE ${like} OR v.name ILIKE ${like})`);
  }
  if (q.filter) where.push(filterSql(q.filter, q.threshold ?? '5', q.connectionId));
  const cond = sql.join(where, sql` AND `);
  const dir = sql.raw(q.desc ? 'DESC' : 'ASC');
  const order =
    q.sort === 'quantity'
      ? sql`cq.quantity ${dir} NULLS LAST, v.sku`
      : q.sort === 'changed'
        ? sql`lc.at ${dir} NULLS LAST, v.sku`
        : sql`v.sku ${dir} NULLS LAST, v.id`;
  const [rows, total] = await Promise.all([
    sql<
      Omit<VariantListRow, 'available' | 'lastChangeAt' | 'lastChangeCause' | 'lastChangeBefore'> & {
        available: VariantListRow['available'] | null;
        last_at: Date | null;
        last_cause: string | null;
        last_before: string | null;
      }
    >`
      SELECT v.id, v.sku, v.name, v.status, v.composite, cq.quantity::text AS quantity, cq.tracked, cq.backorderable,
             (SELECT json_agg(json_build_object('location', coalesce(l.name, 'location ' || s.location_id), 'quantity', (s.on_hand - s.committed)::text) ORDER BY s.location_id)
                FROM stock_levels s LEFT JOIN locations l ON l.connection_id = s.connection_id AND l.id = s.location_id
               WHERE s.connection_id = v.connection_id AND s.variant_id = v.id) AS available,
             lc.at AS last_at, lc.cause AS last_cause, lc.before_quantity::text AS last_before
        FROM variants v
        LEFT JOIN channel_quantities cq ON cq.connection_id = v.connection_id AND cq.variant_id = v.id
        LEFT JOIN LATERAL (SELECT at, cause, before_quantity FROM channel_quantity_changes c
                            WHERE c.connection_id = v.connection_id AND c.variant_id = v.id ORDER BY id DESC LIMIT 1) lc ON true
       WHERE ${cond}
       ORDER BY ${order}
       LIMIT ${pageSize} OFFSET ${(page - 1) * pageSize}`.execute(db),
    sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM variants v LEFT JOIN channel_quantities cq ON cq.connection_id = v.connection_id AND cq.variant_id = v.id WHERE ${cond}`.execute(
      db,
    ),
  ]);
  return {
    total: total.rows[0]?.n ?? 0,
    rows: rows.rows.map((r) => ({
      id: r.id,
      sku: r.sku,
      name: r.name,
      status: r.status,
      composite: r.composite,
      quantity: r.quantity,
      tracked: r.tracked,
      backorderable: r.backorderable,
      available: r.available ?? [],
      lastChangeAt: r.last_at,
      lastChangeCause: r.last_cause,
      lastChangeBefore: r.last_before,
    })),
  };
}
