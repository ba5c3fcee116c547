// "Common list behaviour": ids in both forms, time bounds, order, limit/page, status, name[]= repetition,
// comma-separated integer filters, AND, most recent first, X-Pagination, include sideloading.
import { ApiFail, type Row, type Store } from './store.ts';
import type { FieldType, ResourceDef } from './resources/shared.ts';

export const MAX_LIMIT = 250;
export const DEFAULT_LIMIT = 50;

export interface Pagination {
  total_records: number;
  total_pages: number;
  first_page: boolean;
  last_page: boolean;
  out_of_bounds: boolean;
  offset: number;
}

/** Every value of a parameter, from `name=a,b` (when split), `name=a&name=b` and `name[]=a&name[]=b`. */
export function values(q: URLSearchParams, name: string, split: boolean): string[] {
  const raw = [...q.getAll(name), ...q.getAll(`${name}[]`)];
  return split
    ? raw
        .flatMap((v) => v.split(','))
        .map((v) => v.trim())
        .filter((v) => v !== '')
    : raw;
}

function ints(q: URLSearchParams, name: string): number[] | null {
  if (!q.has(name) && !q.has(`${name}[]`)) return null;
  const out: number[] = [];
  for (const v of values(q, name, true)) {
    if (!/^\d+$/.test(v)) throw new ApiFail(400, `${name} must be integers, got "${v}"`);
    out.push(Number(v));
  }
  return out;
}

function bound(q: URLSearchParams, name: string): string | null {
  const v = q.get(name);
  if (v === null || v === '') return null;
  const d = new Date(v);
  if (Number.isNaN(d.getTime()) || !/^\d{4}-\d{2}-\d{2}/.test(v))
    throw new ApiFail(400, `${name} must be an ISO 8601 timestamp, got "${v}"`);
  return d.toISOString();
}

function positive(q: URLSearchParams, name: string, dflt: number): number {
  const v = q.get(name);
  if (v === null || v === '') return dflt;
  if (!/^\d+$/.test(v) || Number(v) < 1) throw new ApiFail(400, `${name} must be a positive integer, got "${v}"`);
  return Number(v);
}

function matcher(type: FieldType, raw: string[]): (v: unknown) => boolean {
  if (type === 'int') {
    const set = new Set<number>();
    for (const r of raw) {
      if (!/^\d+$/.test(r)) throw new ApiFail(400, `integer filter got "${r}"`);
      set.add(Number(r));
    }
    return (v) => typeof v === 'number' && set.has(v);
  }
  if (type === 'bool') {
    const want = new Set(raw.map((r) => r === 'true' || r === '1'));
    return (v) => want.has(v === true);
  }
  const set = new Set(raw);
  return (v) => v != null && set.has(String(v));
}

/**
 * What "most recent first" means when a list names no `order=`: by creation, or by update. The documentation
 * does not say (real-service-notes section 7); under update order a record changed while a client pages moves to
 * a page already read.
 */
export const LIST_ORDERS = ['created', 'updated'] as const;
export type ListOrder = (typeof LIST_ORDERS)[number];

export interface ListResult {
  records: Row[];
  pagination: Pagination;
}

/** Filters, sorts and pages `rows` (in creation order) by the query. */
export function list(
  def: ResourceDef,
  rows: readonly Row[],
  q: URLSearchParams,
  extra: ((r: Row) => boolean)[] = [],
  lookup?: (id: number) => Row | undefined,
  store?: Store,
  recentBy: ListOrder = 'created',
): ListResult {
  const tests: ((r: Row) => boolean)[] = [...extra];
  const ids = ints(q, 'ids');
  if (ids) {
    const set = new Set(ids);
    tests.push((r) => set.has(r.id));
  }
  const cmin = bound(q, 'created_at_min'),
    cmax = bound(q, 'created_at_max');
  const umin = bound(q, 'updated_at_min'),
    umax = bound(q, 'updated_at_max');
  if (cmin) tests.push((r) => r.created_at >= cmin);
  if (cmax) tests.push((r) => r.created_at <= cmax);
  if (umin) tests.push((r) => r.updated_at >= umin);
  if (umax) tests.push((r) => r.updated_at <= umax);
  if (def.defaultStatuses) {
    const wanted = values(q, 'status', true);
    const set = new Set(wanted.length ? wanted : def.defaultStatuses);
    tests.push((r) => set.has(r.status));
  }
  for (const [name, type] of Object.entries(def.filters)) {
    if (!q.has(name) && !q.has(`${name}[]`)) continue;
    const m = matcher(type, values(q, name, type === 'int'));
    tests.push((r) => m(r[name]));
  }
  for (const [name, derive] of Object.entries(def.computedFilters ?? {})) {
    if (!store || (!q.has(name) && !q.has(`${name}[]`))) continue;
    const m = matcher('string', values(q, name, false));
    tests.push((r) => m(derive(store, r)));
  }
  const limit = positive(q, 'limit', DEFAULT_LIMIT);
  // Announced in 2019 (tradegecko/smaug: source/changes.html.md): a larger page is refused, not clamped.
  if (limit > MAX_LIMIT) throw new ApiFail(400, `limit must be at most ${MAX_LIMIT}, got ${limit}`);
  const page = positive(q, 'page', 1);

  // With ids and a by-id lookup, only those records are tested (the common "these ids" read stays fast).
  const candidates: readonly Row[] =
    ids && lookup
      ? [...new Set(ids)]
          .map(lookup)
          .filter((r): r is Row => !!r)
          .sort((a, b) => a.id - b.id)
      : rows;
  const order = q.get('order');
  const offset = (page - 1) * limit;
  let total = 0;
  let records: Row[];
  if (!order && !def.defaultOrder && recentBy === 'created') {
    // Most recent first (creation order is id order): walk backwards, keep only the requested page.
    records = [];
    outer: for (let i = candidates.length - 1; i >= 0; i--) {
      const r = candidates[i]!;
      for (const t of tests) if (!t(r)) continue outer;
      if (total >= offset && total < offset + limit) records.push(r);
      total++;
    }
  } else {
    const matched: Row[] = [];
    outer: for (const r of candidates) {
      for (const t of tests) if (!t(r)) continue outer;
      matched.push(r);
    }
    if (order) sortBy(matched, order);
    else if (def.defaultOrder) matched.sort(def.defaultOrder);
    else sortBy(matched, 'updated_at desc');
    total = matched.length;
    records = matched.slice(offset, offset + limit);
  }
  const pages = Math.ceil(total / limit);
  return {
    records,
    pagination: {
      total_records: total,
      total_pages: pages,
      first_page: page === 1,
      last_page: page >= pages,
      out_of_bounds: page > Math.max(pages, 1),
      offset,
    },
  };
}

/** `order=<field> [asc|desc]`: numeric strings compare as numbers, ties by id. */
function sortBy(matched: Row[], order: string): void {
  const m = /^\s*([a-z_][a-z0-9_]*)(?:\s+(asc|desc))?\s*$/i.exec(order);
  if (!m) throw new ApiFail(400, `order must be "<field> asc|desc", got "${order}"`);
  const field = m[1]!;
  const dir = (m[2] ?? 'asc').toLowerCase() === 'desc' ? -1 : 1;
  matched.sort((a, b) => {
    const x = a[field],
      y = b[field];
    if (x === y) return (a.id - b.id) * dir;
    if (x == null) return -dir;
    if (y == null) return dir;
    const nx = typeof x === 'string' && /^-?\d+(\.\d+)?$/.test(x) ? Number(x) : x;
    const ny = typeof y === 'string' && /^-?\d+(\.\d+)?$/.test(y) ? Number(y) : y;
    return (nx < ny ? -1 : nx > ny ? 1 : 0) * dir;
  });
}

/** `include=a,b` (or include[]=): sideloaded arrays keyed by plural, merged and de-duplicated. */
export function sideloads(store: Store, def: ResourceDef, rows: Row[], q: URLSearchParams): Map<string, Row[]> {
  const out = new Map<string, Row[]>();
  for (const name of values(q, 'include', true)) {
    const fn = def.includes?.[name];
    if (!fn) continue;
    const [key, related] = fn(store, rows);
    const have = out.get(key) ?? [];
    const seen = new Set(have.map((r) => r.id));
    for (const r of related)
      if (!seen.has(r.id)) {
        seen.add(r.id);
        have.push(r);
      }
    out.set(key, have);
  }
  return out;
}
