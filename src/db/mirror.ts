// Mirror writers: upsert records as the service answered them. Monotonic (a record never replaces a newer
// updated_at with an older one) and idempotent (an identical record writes nothing). A record without
// updated_at (older revisions send none for addresses, locations...) is written when it differs.
// At the same updated_at only the caller can tell which read is newer (stock may move without moving it):
// drains, whose reads of a record never overlap (src/db/pending.ts), write; sweeps, whose pages may have been
// read before a drain's newer read was written, leave such a record to a drain (`ties: 'leave'`). Tables whose
// resource keeps its reads' time (ResourceSpec.readTimes: products) keep, per row, the interval its read happened
// in on the service's clock (read_as_of .. read_by: the answer's Date, whole seconds, less the round trip and plus
// a second). At a tie a read provably earlier than the row's is not written, by anyone; a sweep's read provably
// later is written; where the two intervals overlap (reads within a second or so) the rule above decides.
import { sql } from 'kysely';
import type { Executor } from './index.ts';
import type { Part } from './together.ts';
import { resources, type ChildSpec, type ResourceSpec } from '../catalog/index.ts';
import { isFields, type Fields } from '../catalog/records.ts';

export interface UpsertResult {
  /** Ids whose row was inserted or changed. */
  applied: number[];
  inserted: number[];
  /** Ids in the input (valid ones). */
  seen: number[];
  /** With `ties: 'leave'`: ids that differ from their row at the same updated_at, left unwritten. */
  tied: number[];
}

/** What a write does with a record that differs from its row at the same updated_at: write it, or leave it. */
export type Ties = 'write' | 'leave';

const ident = (s: string) => {
  if (!/^[a-z_][a-z0-9_]*$/.test(s)) throw new Error(`bad identifier ${s}`);
  return s;
};

/** Keeps one record per id, the newest by updated_at (a page shift can return a record twice). */
function dedupe(records: readonly unknown[]): Fields[] {
  const byId = new Map<string, Fields>();
  for (const r of records) {
    if (!isFields(r) || r.id === null || r.id === undefined || !/^\d+$/.test(String(r.id))) continue;
    const prev = byId.get(String(r.id));
    if (!prev || String(r.updated_at ?? '') >= String(prev.updated_at ?? '')) byId.set(String(r.id), r);
  }
  return [...byId.values()];
}

interface TableWrite {
  table: string;
  columns: Record<string, string>;
  /** Extra constant columns (e.g. resource of other_records) as SQL literals. */
  constants?: Record<string, string>;
  conflict: string[];
  /** Only rows where this SQL (over r) holds are written. */
  filter?: string;
  /** The table keeps read_as_of and read_by: ties are decided by when the reads happened where that is known. */
  readTimes?: boolean;
}

/** How a write treats a record at its row's updated_at, and when the read that returned it happened. */
export interface WriteOptions {
  ties?: Ties;
  /** The service's clock no later than the read (epoch ms, Raw.asOf); for tables with `readTimes`. */
  readAsOf?: number | null;
  /** The service's clock no earlier than the read (Raw.readBy). */
  readBy?: number | null;
}

async function upsertRows(
  db: Executor,
  w: TableWrite,
  connectionId: number,
  records: readonly unknown[],
  params: WriteOptions & { parents?: Record<string, number> } = {},
): Promise<UpsertResult> {
  const list = dedupe(records);
  if (!list.length) return { applied: [], inserted: [], seen: [], tied: [] };
  const ties = params.ties ?? 'write';
  const from = params.readAsOf ? new Date(params.readAsOf) : null;
  const by = params.readBy ? new Date(params.readBy) : null;
  const read = w.readTimes
    ? { col: sql`, read_as_of, read_by`, value: sql`, ${from}::timestamptz, ${by}::timestamptz` }
    : { col: sql``, value: sql`` };
  // At the same updated_at. Unknown times decide nothing (the caller's rule holds).
  const earlier = w.readTimes
    ? sql`(t.read_as_of IS NOT NULL AND ${by}::timestamptz IS NOT NULL AND ${by}::timestamptz <= t.read_as_of)`
    : sql`false`;
  const later = w.readTimes
    ? sql`(t.read_by IS NOT NULL AND ${from}::timestamptz IS NOT NULL AND ${from}::timestamptz >= t.read_by)`
    : sql`false`;
  // 'write': unless provably earlier than the row's read; 'leave': only when provably later.
  const tie = ties === 'write' ? sql`NOT ${earlier}` : later;
  const cols = Object.keys(w.columns).map(ident);
  const consts = Object.keys(w.constants ?? {}).map(ident);
  const setCols = cols.filter((c) => c !== 'id');
  const parents = JSON.stringify(params.parents ?? {});
  const differs = cols.includes('status') ? 'OR t.status IS DISTINCT FROM excluded.status' : '';
  const query = sql<{ id: number; inserted: boolean }>`
    INSERT INTO ${sql.raw(ident(w.table))} AS t (connection_id, ${sql.raw([...consts, ...cols].join(', '))}, raw, synced_at${read.col})
    SELECT ${connectionId}::bigint, ${sql.raw([...consts.map((c) => w.constants![c]!), ...cols.map((c) => w.columns[c]!)].join(', '))}, r, now()${read.value}
    FROM jsonb_array_elements(${JSON.stringify(list)}::jsonb) AS x(r), (SELECT ${parents}::jsonb AS parents) p
    WHERE cs_bigint(r->>'id') IS NOT NULL ${sql.raw(w.filter ? `AND (${w.filter})` : '')}
    -- In key order: two writers of overlapping rows (a sweep's page, a drain's read) then lock them in the same
    -- order, where the order of their answers made them wait on each other (a deadlock, 40P01).
    ORDER BY cs_bigint(r->>'id')
    ON CONFLICT (${sql.raw(w.conflict.join(', '))}) DO UPDATE SET
      ${sql.raw([...setCols, 'raw', 'synced_at'].map((c) => `${c} = excluded.${c}`).join(', '))}${sql.raw(w.readTimes ? ', read_as_of = excluded.read_as_of, read_by = excluded.read_by' : '')}
    WHERE (t.updated_at IS NULL OR excluded.updated_at IS NULL OR excluded.updated_at > t.updated_at
      OR (excluded.updated_at = t.updated_at AND ${tie}))
      AND (t.raw IS DISTINCT FROM excluded.raw ${sql.raw(differs)})
    RETURNING t.id, (xmax = 0) AS inserted`;
  const rows = (await query.execute(db)).rows;
  const applied = rows.map((r) => r.id);
  const seen = list.map((r) => Number(r.id));
  let tied: number[] = [];
  if (ties === 'leave' && applied.length < seen.length) {
    const written = new Set(applied);
    const left = list.filter((r) => !written.has(Number(r.id)));
    // Same statement shape as the write's test: what the write would have written but for the tie (a read provably
    // earlier than the row's is not a tie: the row is newer).
    const found = await sql<{ id: number }>`
      SELECT t.id FROM ${sql.raw(ident(w.table))} t, jsonb_array_elements(${JSON.stringify(left)}::jsonb) AS x(r)
      WHERE t.connection_id = ${connectionId} AND t.id = cs_bigint(r->>'id') AND t.updated_at = cs_timestamptz(r->>'updated_at')
        AND (t.raw IS DISTINCT FROM r ${sql.raw(cols.includes('status') ? `OR t.status IS DISTINCT FROM (${w.columns.status})` : '')})
        AND NOT ${earlier}`.execute(db);
    tied = found.rows.map((r) => r.id);
  }
  return { applied, inserted: rows.filter((r) => r.inserted).map((r) => r.id), seen, tied };
}

/**
 * Of these records, those the mirror has at the same updated_at, so with the line items it read with them: a read
 * of such an order (its watch, mostly, finding nothing new) need not read its lines again.
 */
export async function unchangedRecords(
  db: Executor,
  spec: ResourceSpec,
  connectionId: number,
  records: readonly Fields[],
): Promise<Set<number>> {
  const stamped = dedupe(records).filter((r) => typeof r.updated_at === 'string');
  if (!stamped.length || !spec.table || spec.table === 'other_records') return new Set();
  const { rows } = await sql<{ id: number }>`
    SELECT t.id FROM ${sql.raw(ident(spec.table))} t
      JOIN unnest(${stamped.map((r) => Number(r.id))}::bigint[], ${stamped.map((r) => String(r.updated_at))}::text[]) AS x(id, updated_at)
        ON t.id = x.id AND t.updated_at = cs_timestamptz(x.updated_at)
     WHERE t.connection_id = ${connectionId}`.execute(db);
  return new Set(rows.map((r) => r.id));
}

/**
 * Notes when a drain's read of these variants reached the service (its Date less the round trip): a part of the
 * drain's last statement (src/db/together.ts). Null: nothing to note.
 */
export function variantsRead(connectionId: number, ids: number[], asOf: number): Part<never> | null {
  if (!ids.length) return null;
  return {
    write: sql`UPDATE variants SET read_as_of = ${new Date(asOf)} WHERE connection_id = ${connectionId} AND id = ANY(${ids}::bigint[])
    AND (read_as_of IS NULL OR read_as_of < ${new Date(asOf)})`,
  };
}

/**
 * Notes that a drain's read (asOf .. readBy) returned these rows of a `readTimes` table: a read that changed nothing
 * still dates the row, or an earlier sweep page with another value could be written over it. A part of the drain's
 * last statement; null: nothing to note.
 */
export function rowsRead(spec: ResourceSpec, connectionId: number, ids: number[], asOf: number, readBy: number): Part<never> | null {
  if (!ids.length || !spec.readTimes) return null;
  return {
    write: sql`UPDATE ${sql.raw(ident(spec.table))} SET read_as_of = ${new Date(asOf)}, read_by = ${new Date(readBy)}
    WHERE connection_id = ${connectionId} AND id = ANY(${ids}::bigint[]) AND (read_as_of IS NULL OR read_as_of < ${new Date(asOf)})`,
  };
}

/** Upserts records of a mirrored resource (and, for variants, their per-location stock rows). */
export async function upsertRecords(
  db: Executor,
  spec: ResourceSpec,
  connectionId: number,
  records: readonly unknown[],
  options: WriteOptions = {},
): Promise<UpsertResult> {
  const result = await upsertRows(
    db,
    { table: spec.table, columns: spec.columns, conflict: ['connection_id', 'id'], readTimes: spec.readTimes },
    connectionId,
    records,
    options,
  );
  if (spec.name === 'variant' && result.applied.length) await writeStockLevels(db, connectionId, result.applied);
  return result;
}

/**
 * Upserts sideloaded or listed line items. The parent id comes from the item (order_id...) or, when the
 * item lacks it, from the parents' *_ids lists. With `replaceFor`, items of those parents that the answer
 * no longer lists are removed.
 */
export async function upsertChildren(
  db: Executor,
  child: ChildSpec,
  connectionId: number,
  items: readonly unknown[],
  parents: readonly Fields[] = [],
  replaceFor: number[] = [],
): Promise<UpsertResult> {
  const table = child.table;
  if (!table) throw new Error(`${child.key} are not mirrored`);
  const map: Record<string, number> = {};
  for (const p of parents) {
    for (const f of child.parentIdFields) {
      const childIds = p?.[f];
      if (Array.isArray(childIds)) for (const cid of childIds) map[String(cid)] = Number(p.id);
    }
  }
  const parentExpr = `COALESCE(cs_bigint(r->>'${child.parentColumn}'), cs_bigint(p.parents->>(r->>'id')))`;
  const result = await upsertRows(
    db,
    {
      table,
      columns: { ...child.columns, [child.parentColumn]: parentExpr },
      conflict: ['connection_id', 'id'],
      filter: `${parentExpr} IS NOT NULL`,
    },
    connectionId,
    items,
    { parents: map },
  );
  if (replaceFor.length) {
    await sql`DELETE FROM ${sql.raw(ident(table))} WHERE connection_id = ${connectionId}
      AND ${sql.raw(ident(child.parentColumn))} = ANY(${replaceFor}::bigint[]) AND NOT (id = ANY(${result.seen}::bigint[]))`.execute(db);
  }
  return result;
}

/** Upserts records of a resource we keep whole only (invoices, users, ...). */
export async function upsertOther(
  db: Executor,
  resource: string,
  connectionId: number,
  records: readonly unknown[],
): Promise<UpsertResult> {
  return upsertRows(
    db,
    {
      table: 'other_records',
      columns: {
        id: `cs_bigint(r->>'id')`,
        status: `r->>'status'`,
        created_at: `cs_timestamptz(r->>'created_at')`,
        updated_at: `cs_timestamptz(r->>'updated_at')`,
      },
      constants: { resource: `'${ident(resource)}'` },
      conflict: ['connection_id', 'resource', 'id'],
    },
    connectionId,
    records,
  );
}

/**
 * Brings the per-location stock rows of variants in line with their stored raw record: `locations` (current
 * revision) or the older `stock_levels` / `committed_stock_levels` / `incoming_stock_levels` maps.
 * Missing quantities (committed: null, no incoming) count as 0. One statement: a row whose location is still
 * there is updated in place (no key changes: a HOT update, no index entries, where its page has room), a location
 * gone is deleted. Deleting every row and inserting them again cost two row versions and two index entries per
 * location. Rows go in key order, so two writers of the same variants lock them in the same order.
 */
export async function writeStockLevels(db: Executor, connectionId: number, variantIds: number[]): Promise<void> {
  await sql`
    WITH s AS (
      SELECT DISTINCT ON (variant_id, location_id) variant_id, location_id,
        COALESCE(on_hand, 0) AS on_hand, COALESCE(committed, 0) AS committed, COALESCE(incoming, 0) AS incoming,
        bin_location, reorder_point, raw, updated_at
      FROM (
        SELECT v.id AS variant_id, cs_bigint(l->>'location_id') AS location_id, cs_numeric(l->>'stock_on_hand') AS on_hand,
          cs_numeric(l->>'committed') AS committed, cs_numeric(l->>'incoming') AS incoming, l->>'bin_location' AS bin_location,
          cs_numeric(l->>'reorder_point') AS reorder_point, l AS raw, v.updated_at
        FROM variants v, jsonb_array_elements(v.raw->'locations') l
        WHERE v.connection_id = ${connectionId} AND v.id = ANY(${variantIds}::bigint[]) AND jsonb_typeof(v.raw->'locations') = 'array'
        UNION ALL
        SELECT v.id, cs_bigint(s.key), cs_numeric(s.value), cs_numeric(v.raw->'committed_stock_levels'->>s.key),
          cs_numeric(v.raw->'incoming_stock_levels'->>s.key), NULL, NULL,
          jsonb_build_object('location_id', s.key, 'stock_on_hand', s.value), v.updated_at
        FROM variants v, jsonb_each_text(v.raw->'stock_levels') s
        WHERE v.connection_id = ${connectionId} AND v.id = ANY(${variantIds}::bigint[])
          AND jsonb_typeof(v.raw->'locations') IS DISTINCT FROM 'array' AND jsonb_typeof(v.raw->'stock_levels') = 'object'
      ) s
      WHERE location_id IS NOT NULL
      ORDER BY variant_id, location_id
    ), gone AS (
      DELETE FROM stock_levels t WHERE t.connection_id = ${connectionId} AND t.variant_id = ANY(${variantIds}::bigint[])
        AND NOT EXISTS (SELECT 1 FROM s WHERE s.variant_id = t.variant_id AND s.location_id = t.location_id)
    )
    INSERT INTO stock_levels AS t (connection_id, variant_id, location_id, on_hand, committed, incoming, bin_location, reorder_point, raw, updated_at)
    SELECT ${connectionId}::bigint, variant_id, location_id, on_hand, committed, incoming, bin_location, reorder_point, raw, updated_at FROM s
    ON CONFLICT (connection_id, variant_id, location_id) DO UPDATE SET on_hand = excluded.on_hand, committed = excluded.committed,
      incoming = excluded.incoming, bin_location = excluded.bin_location, reorder_point = excluded.reorder_point, raw = excluded.raw,
      updated_at = excluded.updated_at, synced_at = now()`.execute(db);
}

/**
 * Replaces the composition of the given bundles with what the service answered (bundles absent from
 * the answer have none). Returns the bundles whose makeup changed.
 */
export async function replaceCompositions(
  db: Executor,
  connectionId: number,
  bundleIds: number[],
  rows: readonly unknown[],
): Promise<number[]> {
  if (!bundleIds.length) return [];
  const wanted = new Set(bundleIds.map(Number));
  const list = rows.filter((r) => isFields(r) && wanted.has(Number(r.bundle_id)) && r.component_id != null);
  const before = await sql<{ bundle_id: number; sig: string }>`
    SELECT bundle_id, string_agg(component_id || ':' || quantity::text, ',' ORDER BY component_id) AS sig
    FROM compositions WHERE connection_id = ${connectionId} AND bundle_id = ANY(${bundleIds}::bigint[]) GROUP BY bundle_id`.execute(db);
  await sql`DELETE FROM compositions WHERE connection_id = ${connectionId} AND bundle_id = ANY(${bundleIds}::bigint[])`.execute(db);
  if (list.length) {
    await sql`
      INSERT INTO compositions (connection_id, bundle_id, component_id, bundle_sku, component_sku, quantity, raw)
      SELECT DISTINCT ON (cs_bigint(r->>'bundle_id'), cs_bigint(r->>'component_id'))
        ${connectionId}::bigint, cs_bigint(r->>'bundle_id'), cs_bigint(r->>'component_id'), r->>'bundle_sku', r->>'component_sku',
        COALESCE(cs_numeric(r->>'quantity'), 0), r
      FROM jsonb_array_elements(${JSON.stringify(list)}::jsonb) r
      WHERE cs_bigint(r->>'bundle_id') IS NOT NULL AND cs_bigint(r->>'component_id') IS NOT NULL`.execute(db);
  }
  const after = await sql<{ bundle_id: number; sig: string }>`
    SELECT bundle_id, string_agg(component_id || ':' || quantity::text, ',' ORDER BY component_id) AS sig
    FROM compositions WHERE connection_id = ${connectionId} AND bundle_id = ANY(${bundleIds}::bigint[]) GROUP BY bundle_id`.execute(db);
  const b = new Map(before.rows.map((r) => [r.bundle_id, r.sig]));
  const a = new Map(after.rows.map((r) => [r.bundle_id, r.sig]));
  return bundleIds.map(Number).filter((id) => b.get(id) !== a.get(id));
}

/**
 * Marks mirror rows that the service no longer returns, neither active nor archived: status 'gone'.
 * Returns the ids whose status changed.
 */
export async function markGone(db: Executor, spec: ResourceSpec, connectionId: number, ids: number[]): Promise<number[]> {
  if (!ids.length) return [];
  const rows = await sql<{ id: number }>`
    UPDATE ${sql.raw(ident(spec.table))} SET status = 'gone', synced_at = now()
    WHERE connection_id = ${connectionId} AND id = ANY(${ids}::bigint[]) AND status IS DISTINCT FROM 'gone'
    RETURNING id`.execute(db);
  return rows.rows.map((r) => r.id);
}

export function specOf(name: string): ResourceSpec {
  const spec = resources[name];
  if (!spec) throw new Error(`not a mirrored resource: ${name}`);
  return spec;
}
