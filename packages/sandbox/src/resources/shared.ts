// What every resource definition (resources/*.ts) is made of: the shape of a definition, the sideloads (related
// records by id), the line-item order and the default status filters.
import type { Row, Store } from '../store.ts';

export type FieldType = 'int' | 'string' | 'bool' | 'decimal' | 'strings' | 'date' | 'any';

export interface ResourceDef {
  plural: string;
  singular: string;
  /** Fields a create or update may set; anything else in the body is ignored (read-only or unknown). */
  writable: Record<string, FieldType>;
  required?: string[];
  /** Resource-specific list filters (field name -> type). */
  filters: Record<string, FieldType>;
  /** Sideload name -> [plural key, related records of a list of records]. */
  includes?: Record<string, (store: Store, rows: Row[]) => [string, Row[]]>;
  /** Statuses listed when `status` is absent; null: this resource has no status filter. */
  defaultStatuses: string[] | null;
  /** DELETE: 'archive' (soft), 'permanent', or absent (404). */
  deletion?: 'archive' | 'permanent';
  /** Filters on a value derived from related records (string match), e.g. a line item's order status. */
  computedFilters?: Record<string, (store: Store, row: Row) => unknown>;
  /** Order of a list without `order=`; absent: most recent first. */
  defaultOrder?: (a: Row, b: Row) => number;
}

/** Line items: by parent, then `position` (real-service-notes §6), then id. */
export const byPosition =
  (parent: string) =>
  (a: Row, b: Row): number =>
    a[parent] - b[parent] || (a.position ?? 0) - (b.position ?? 0) || a.id - b.id;

const byIds = (store: Store, plural: string, ids: Iterable<unknown>): Row[] => {
  const t = store.table(plural)!;
  const out: Row[] = [];
  const seen = new Set<number>();
  for (const id of ids) {
    if (typeof id !== 'number' || seen.has(id)) continue;
    seen.add(id);
    const r = t.get(id);
    if (r) out.push(r);
  }
  return out;
};
export const children =
  (plural: string, field: string) =>
  (store: Store, rows: Row[]): [string, Row[]] => [
    plural,
    byIds(
      store,
      plural,
      rows.flatMap((r) => (r[field] as number[] | undefined) ?? []),
    ),
  ];
export const parent =
  (plural: string, field: string) =>
  (store: Store, rows: Row[]): [string, Row[]] => [
    plural,
    byIds(
      store,
      plural,
      rows.map((r) => r[field]),
    ),
  ];
export const parents =
  (plural: string, fields: string[]) =>
  (store: Store, rows: Row[]): [string, Row[]] => [
    plural,
    byIds(
      store,
      plural,
      rows.flatMap((r) => fields.map((f) => r[f])),
    ),
  ];

export const ACTIVE = ['active'];
export const NOT_DELETED = ['packed', 'fulfilled', 'void', 'returning', 'received', 'draft', 'active', 'finalized'];
