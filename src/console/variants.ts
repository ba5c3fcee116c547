// The variants index of the console: every mirrored variant of a connection with its channel quantity,
// available stock per location and its last channel-quantity change, searchable, filterable and sortable.
// Quantities stay decimal strings (PostgreSQL numeric); comparisons happen in SQL.
import type { Db } from '../db/index.ts';
import { type VariantFilterKey, type VariantIndexRow, type VariantRowsQuery, variantRows } from '../db/mirror-reads.ts';

export const variantFilters = {
  low: 'low stock',
  out: 'out of stock',
  untracked: 'untracked',
  backorderable: 'backorderable',
  bundles: 'bundles',
  'changed-1h': 'changed in the last hour',
  drift: 'corrected by the latest sweep',
} as const satisfies Record<VariantFilterKey, string>;
export type VariantFilter = keyof typeof variantFilters;
export const variantSorts = { sku: 'SKU', quantity: 'channel quantity', changed: 'last change' } as const satisfies Record<
  NonNullable<VariantRowsQuery['sort']>,
  string
>;
export type VariantSort = keyof typeof variantSorts;

export interface VariantQuery extends VariantRowsQuery {
  filter?: VariantFilter;
  sort?: VariantSort;
  page?: number;
  pageSize?: number;
}

/** An index row as the pages show it: the available list never null, the last change named in camel case. */
export type VariantListRow = Omit<VariantIndexRow, 'available' | 'last_at' | 'last_cause' | 'last_before'> & {
  /** Available (on hand - committed) per location, in location order. */
  available: { location: string; quantity: string }[];
  lastChangeAt: Date | null;
  lastChangeCause: string | null;
  lastChangeBefore: string | null;
};

export async function listVariants(db: Db, q: VariantQuery): Promise<{ rows: VariantListRow[]; total: number }> {
  const pageSize = Math.min(Math.max(q.pageSize ?? 50, 1), 500);
  const page = Math.max(q.page ?? 1, 1);
  const { rows, total } = await variantRows(db, q, pageSize, (page - 1) * pageSize);
  return {
    total,
    rows: rows.map((r) => ({
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
