// Reads of the mirror tables (variants, stock_levels, compositions, currencies, orders and their children):
// push's lookups, the channel recomputation's inputs, the console's pages, the `stock` command and what a sweep
// compares its reads with. The writers are mirror.ts; this module never writes.
import { type RawBuilder, type Selectable, sql } from 'kysely';
import type { Executor } from './index.ts';
import { among, type Ids } from './together.ts';
import type { VariantsTable } from './schema.ts';
import type { Fields } from '../catalog/records.ts';

/** Variants holding any of the SKUs, not gone, newest first (push resolves SKUs to ids from these). */
export function variantsBySku(db: Executor, connectionId: number, skus: string[]) {
  return db
    .selectFrom('variants')
    .select(['id', 'sku', 'status'])
    .where('connection_id', '=', connectionId)
    .where('sku', 'in', skus)
    .where((eb) => eb.or([eb('status', 'is', null), eb('status', '!=', 'gone')]))
    .orderBy('updated_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

/** Whether the mirror holds a currency with this ISO code (upper case), not archived. */
/** The mirror's live orders carrying this reference number (migration 0360 indexes it). */
export async function ordersByReference(db: Executor, connectionId: number, reference: string): Promise<number[]> {
  const rows = await db
    .selectFrom('orders')
    .select('id')
    .where('connection_id', '=', connectionId)
    .where(sql<boolean>`raw->>'reference_number' = ${reference}`)
    .where((eb) => eb.or([eb('status', 'is', null), eb('status', 'not in', ['void', 'deleted', 'gone'])]))
    .execute();
  return rows.map((r) => r.id);
}

export async function hasCurrency(db: Executor, connectionId: number, iso: string): Promise<boolean> {
  const row = await db
    .selectFrom('currencies')
    .select('id')
    .where('connection_id', '=', connectionId)
    .where(sql<boolean>`upper(iso) = ${iso}`)
    .where((eb) => eb.or([eb('status', 'is', null), eb('status', '!=', 'archived')]))
    .executeTakeFirst();
  return row !== undefined;
}

/** Every mirrored variant id of a connection. */
export async function variantIdsOf(db: Executor, connectionId: number): Promise<number[]> {
  return (await db.selectFrom('variants').select('id').where('connection_id', '=', connectionId).execute()).map((r) => r.id);
}

/** The ids of a mirror table's rows of a connection not marked gone (a full sweep's candidates for gone). */
export async function liveIds(db: Executor, table: string, connectionId: number): Promise<number[]> {
  const rows = await sql<{ id: number }>`SELECT id FROM ${sql.raw(table)}
    WHERE connection_id = ${connectionId} AND status IS DISTINCT FROM 'gone'`.execute(db);
  return rows.rows.map((r) => r.id);
}

/** The mirror's copy (raw) of each of these records it holds: what a sweep compares its read with before writing it. */
export async function mirroredRecords(db: Executor, table: string, connectionId: number, ids: number[]): Promise<Map<number, Fields>> {
  if (!ids.length) return new Map();
  const rows = await sql<{ id: number; raw: Fields }>`SELECT id, raw FROM ${sql.raw(table)}
    WHERE connection_id = ${connectionId} AND id = ANY(${ids}::bigint[])`.execute(db);
  return new Map(rows.rows.map((r) => [r.id, r.raw]));
}

/** The service's `updated_at` (as it wrote it) of each of the variants the mirror holds. */
export async function variantUpdatedAts(
  db: Executor,
  connectionId: number,
  ids: number[],
): Promise<{ id: number; updated_at: string | null; read_as_of: Date | null }[]> {
  const rows = await sql<{ id: number; updated_at: string | null; read_as_of: Date | null }>`SELECT id,
    raw->>'updated_at' AS updated_at, read_as_of FROM variants
    WHERE connection_id = ${connectionId} AND id = ANY(${ids}::bigint[])`.execute(db);
  return rows.rows.map((r) => ({ id: r.id, updated_at: r.updated_at, read_as_of: r.read_as_of }));
}

/** The variant of each mirrored order line (return lines name the order line, not the variant). */
export async function variantsOfOrderLines(db: Executor, connectionId: number, lineIds: number[]): Promise<Map<number, number>> {
  const rows = await sql<{ id: number; variant_id: number }>`SELECT id, variant_id FROM order_line_items
    WHERE connection_id = ${connectionId} AND id = ANY(${lineIds}::bigint[]) AND variant_id IS NOT NULL`.execute(db);
  return new Map(rows.rows.map((r) => [r.id, r.variant_id]));
}

/** What the channel quantity of a variant is computed from; max_online stays an exact decimal string. */
export type VariantStockRow = Pick<Selectable<VariantsTable>, 'sku' | 'status' | 'composite' | 'manage_stock' | 'keep_selling'> & {
  id: number;
  max_online: string | null;
};

export async function variantStockRows(db: Executor, connectionId: number, ids: number[]): Promise<VariantStockRow[]> {
  return (await variantStockQuery(connectionId, ids).execute(db)).rows;
}

export const variantStockQuery = (connectionId: number, ids: Ids) => sql<VariantStockRow>`
    SELECT id, sku, status, composite, manage_stock, keep_selling, max_online::text AS max_online
    FROM variants WHERE connection_id = ${connectionId} AND ${among('id', ids)}`;

export interface StockLevelRow {
  variant_id: number;
  location_id: number;
  on_hand: string;
  committed: string;
  incoming: string;
}

/** The per-location stock of the variants, by variant then location. */
export const stockLevelQuery = (connectionId: number, ids: Ids) => sql<StockLevelRow>`
    SELECT variant_id, location_id, on_hand::text AS on_hand, committed::text AS committed, incoming::text AS incoming
    FROM stock_levels WHERE connection_id = ${connectionId} AND ${among('variant_id', ids)} ORDER BY variant_id, location_id`;

/** The bundles any of the components is part of. */
export async function bundlesOf(db: Executor, connectionId: number, componentIds: number[]): Promise<number[]> {
  const rows = await sql<{ bundle_id: number }>`SELECT DISTINCT bundle_id FROM compositions
    WHERE connection_id = ${connectionId} AND component_id = ANY(${componentIds}::bigint[])`.execute(db);
  return rows.rows.map((r) => r.bundle_id);
}

/** Those of the bundles whose makeup the mirror holds. */
export async function bundlesWithMakeup(db: Executor, connectionId: number, bundleIds: number[]): Promise<Set<number>> {
  const rows = await sql<{ bundle_id: number }>`SELECT DISTINCT bundle_id FROM compositions
    WHERE connection_id = ${connectionId} AND bundle_id = ANY(${bundleIds}::bigint[])`.execute(db);
  return new Set(rows.rows.map((r) => r.bundle_id));
}

/** Every bundle of a connection: variants marked composite and bundles with a mirrored makeup. */
export async function allBundles(db: Executor, connectionId: number): Promise<number[]> {
  const rows = await sql<{ id: number }>`SELECT id FROM variants WHERE connection_id = ${connectionId} AND composite
    UNION SELECT DISTINCT bundle_id FROM compositions WHERE connection_id = ${connectionId}`.execute(db);
  return rows.rows.map((r) => r.id);
}

/** The makeup of the bundles: one row per component, quantity an exact decimal string. */
export async function compositionsOf(
  db: Executor,
  connectionId: number,
  bundleIds: number[],
): Promise<{ bundle_id: number; component_id: number; quantity: string }[]> {
  return (await compositionsQuery(connectionId, bundleIds).execute(db)).rows;
}

export const compositionsQuery = (connectionId: number, bundleIds: Ids) => sql<{
  bundle_id: number;
  component_id: number;
  quantity: string;
}>`
    SELECT bundle_id, component_id, quantity::text AS quantity FROM compositions
    WHERE connection_id = ${connectionId} AND ${among('bundle_id', bundleIds)}`;

/** Candidates for a key (connection, id, SKU): several connections may have the same SKU or id; at most 50. */
export async function variantsByKey(
  db: Executor,
  key: { connectionId?: number; id?: number; sku?: string },
): Promise<{ connectionId: number; connection: string; id: number; sku: string | null; name: string | null }[]> {
  let q = db
    .selectFrom('variants as v')
    .innerJoin('connections as c', 'c.id', 'v.connection_id')
    .select(['v.connection_id as connectionId', 'c.name as connection', 'v.id', 'v.sku', 'v.name']);
  if (key.connectionId !== undefined) q = q.where('v.connection_id', '=', key.connectionId);
  if (key.id !== undefined) q = q.where('v.id', '=', key.id);
  if (key.sku !== undefined) q = q.where('v.sku', '=', key.sku);
  return q.orderBy('c.name').orderBy('v.id').limit(50).execute();
}

/** One variant with its connection's name (the console's variant page). */
export function variantOf(db: Executor, connectionId: number, variantId: number) {
  return db
    .selectFrom('variants as v')
    .innerJoin('connections as c', 'c.id', 'v.connection_id')
    .select([
      'c.name as connection',
      'v.id',
      'v.sku',
      'v.name',
      'v.status',
      'v.product_id',
      'v.composite',
      'v.manage_stock',
      'v.keep_selling',
      'v.max_online',
      'v.updated_at',
      'v.synced_at',
    ])
    .where('v.connection_id', '=', connectionId)
    .where('v.id', '=', variantId)
    .executeTakeFirst();
}

/** A variant's stock per location, with the location's name and the available quantity, as exact decimals. */
export async function stockOfVariant(db: Executor, connectionId: number, variantId: number) {
  return (
    await sql<{
      location_id: number;
      location: string | null;
      on_hand: string;
      committed: string;
      incoming: string;
      available: string;
      updated_at: Date | null;
      synced_at: Date;
    }>`
    SELECT s.location_id, coalesce(l.name, l.raw->>'label', l.raw->>'name') AS location, s.on_hand::text, s.committed::text, s.incoming::text,
           (s.on_hand - s.committed)::text AS available, s.updated_at, s.synced_at
      FROM stock_levels s LEFT JOIN locations l ON l.connection_id = s.connection_id AND l.id = s.location_id
     WHERE s.connection_id = ${connectionId} AND s.variant_id = ${variantId}
     ORDER BY s.location_id`.execute(db)
  ).rows;
}

/** The per-location stock of variants of any connection, with the connection's name, by location. */
export async function stockLevelsByConnection(db: Executor, variantIds: number[]) {
  return (
    await sql<{
      connection_id: number;
      variant_id: number;
      location_id: number;
      on_hand: string;
      committed: string;
      incoming: string;
      name: string;
    }>`
    SELECT s.variant_id, s.location_id, s.on_hand::text, s.committed::text, s.incoming::text, n.name
    FROM stock_levels s JOIN connections n ON n.id = s.connection_id
    WHERE s.variant_id = ANY(${variantIds}::bigint[]) ORDER BY s.location_id`.execute(db)
  ).rows;
}

// ---- orders (the console's order list and order page) ----

/** An order row as the console lists it: the company name, the live line count and the channel import. */
export type OrderRowRaw = {
  id: number;
  order_number: string | null;
  status: string | null;
  raw: unknown;
  issued_at: string | null;
  total: string | null;
  currency_iso: string | null;
  company: string | null;
  lines: number;
  channel: string | null;
  channel_order_id: string | null;
  imported_at: Date | null;
  created_at: Date | null;
  updated_at: Date | null;
};

const orderSelect = sql`o.id, o.order_number, o.status, o.raw, o.issued_at, o.total::text AS total, o.currency_iso, co.name AS company,
  (SELECT count(*)::int FROM order_line_items li WHERE li.connection_id = o.connection_id AND li.order_id = o.id AND li.status IS DISTINCT FROM 'gone') AS lines,
  ch.channel, ch.channel_order_id, ch.created_at AS imported_at, o.created_at, o.updated_at
  FROM orders o
  LEFT JOIN companies co ON co.connection_id = o.connection_id AND co.id = o.company_id
  LEFT JOIN channel_orders ch ON ch.connection_id = o.connection_id AND ch.order_id = o.id`;

export interface OrderFilter {
  connectionId: number;
  /** Imported through commerce-sync: within the last hour, 24 hours, or ever. */
  imported?: '1h' | '24h' | 'any';
  status?: string;
  /** An order number (part of it), a channel order id or an order id. */
  search?: string;
}

/**
 * A page of orders, newest first: by when the service made them, then by id, so a page holds the same orders
 * however often they change (by last change they moved between pages). With the count of all that match.
 */
export async function orderRows(
  db: Executor,
  q: OrderFilter,
  pageSize: number,
  offset: number,
): Promise<{ rows: OrderRowRaw[]; total: number }> {
  const where = [sql<boolean>`o.connection_id = ${q.connectionId}`, sql<boolean>`o.status IS DISTINCT FROM 'gone'`];
  if (q.imported === 'any') where.push(sql<boolean>`ch.order_id IS NOT NULL`);
  else if (q.imported)
    where.push(sql<boolean>`ch.created_at > now() - ${q.imported === '1h' ? sql`interval '1 hour'` : sql`interval '24 hours'`}`);
  if (q.status) where.push(sql<boolean>`o.status = ${q.status}`);
  if (q.search)
    where.push(
      sql<boolean>`(o.order_number ILIKE ${`%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`} OR ch.channel_order_id = ${q.search} OR o.id::text = ${q.search})`,
    );
  const cond = sql.join(where, sql` AND `);
  const [rows, total] = await Promise.all([
    sql<OrderRowRaw>`SELECT ${orderSelect} WHERE ${cond} ORDER BY o.created_at DESC NULLS LAST, o.id DESC LIMIT ${pageSize} OFFSET ${offset}`.execute(
      db,
    ),
    sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM orders o LEFT JOIN channel_orders ch ON ch.connection_id = o.connection_id AND ch.order_id = o.id WHERE ${cond}`.execute(
      db,
    ),
  ]);
  return { rows: rows.rows, total: total.rows[0]?.n ?? 0 };
}

export async function orderRow(db: Executor, connectionId: number, orderId: number): Promise<OrderRowRaw | undefined> {
  return (await sql<OrderRowRaw>`SELECT ${orderSelect} WHERE o.connection_id = ${connectionId} AND o.id = ${orderId}`.execute(db)).rows[0];
}

export async function orderStatuses(db: Executor, connectionId: number): Promise<string[]> {
  const r = await sql<{
    status: string;
  }>`SELECT DISTINCT status FROM orders WHERE connection_id = ${connectionId} AND status IS NOT NULL AND status <> 'gone' ORDER BY 1`.execute(
    db,
  );
  return r.rows.map((x) => x.status);
}

/** An order's live lines (with their SKU), fulfilments and returns with their lines. */
export async function orderParts(db: Executor, connectionId: number, orderId: number) {
  // The order's fulfilments and returns: the same read of two tables.
  const ofOrder = (table: 'fulfillments' | 'fulfillment_returns') =>
    db
      .selectFrom(table)
      .selectAll()
      .where('connection_id', '=', connectionId)
      .where('order_id', '=', orderId)
      .where('status', 'is distinct from', 'gone')
      .orderBy('id')
      .execute();
  const [lines, fulfillments, fLines, returns, rLines] = await Promise.all([
    sql<{ id: number; sku: string | null; variant_id: number | null; quantity: string | null; price: string | null; label: string | null }>`
      SELECT li.id, v.sku, li.variant_id, li.quantity::text, li.price::text, li.raw->>'label' AS label FROM order_line_items li
        LEFT JOIN variants v ON v.connection_id = li.connection_id AND v.id = li.variant_id
       WHERE li.connection_id = ${connectionId} AND li.order_id = ${orderId} AND li.status IS DISTINCT FROM 'gone' ORDER BY li.id`.execute(
      db,
    ),
    ofOrder('fulfillments'),
    sql<{ fulfillment_id: number; variant_sku: string | null; quantity: string | null }>`
      SELECT fl.fulfillment_id, fl.variant_sku, fl.quantity::text FROM fulfillment_line_items fl JOIN fulfillments f ON f.connection_id = fl.connection_id AND f.id = fl.fulfillment_id
       WHERE f.connection_id = ${connectionId} AND f.order_id = ${orderId} ORDER BY fl.id`.execute(db),
    ofOrder('fulfillment_returns'),
    sql<{ fulfillment_return_id: number; order_line_item_id: number | null; quantity: string | null }>`
      SELECT rl.fulfillment_return_id, rl.order_line_item_id, rl.quantity::text FROM fulfillment_return_line_items rl JOIN fulfillment_returns r ON r.connection_id = rl.connection_id AND r.id = rl.fulfillment_return_id
       WHERE r.connection_id = ${connectionId} AND r.order_id = ${orderId} ORDER BY rl.id`.execute(db),
  ]);
  return { lines: lines.rows, fulfillments, fLines: fLines.rows, returns, rLines: rLines.rows };
}

// ---- variants (the console's variants index) ----

export type VariantFilterKey = 'low' | 'out' | 'untracked' | 'backorderable' | 'bundles' | 'changed-1h' | 'drift';

export interface VariantRowsQuery {
  connectionId: number;
  /**
   * The channel whose quantity, filters and last change the index shows (a connection has several): null when the
   * connection has none yet (every quantity "not computed").
   */
  channelId: number | null;
  /** Part of a SKU or name, case-insensitive. */
  search?: string;
  filter?: VariantFilterKey;
  /** Low stock: channel quantity at or below this (a decimal string). */
  threshold?: string;
  sort?: 'sku' | 'quantity' | 'changed';
  desc?: boolean;
}

/** A variant of the index with its channel quantity, available stock per location and last channel change. */
export interface VariantIndexRow {
  id: number;
  sku: string | null;
  name: string | null;
  status: string | null;
  composite: boolean;
  quantity: string | null;
  tracked: boolean | null;
  backorderable: boolean | null;
  available: { location: string; quantity: string }[] | null;
  last_at: Date | null;
  last_cause: string | null;
  last_before: string | null;
  /** The variant's quantity in every channel of the connection, oldest channel first. */
  channels: { channel: string; quantity: string | null; tracked: boolean; backorderable: boolean; listed: boolean }[] | null;
}

function variantFilterSql(f: VariantFilterKey, threshold: string, connectionId: number, channelId: number | null): RawBuilder<boolean> {
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
      return sql<boolean>`EXISTS (SELECT 1 FROM channel_quantity_changes c WHERE c.connection_id = v.connection_id AND c.variant_id = v.id
        AND c.channel_id = ${channelId} AND c.at > now() - interval '1 hour')`;
    // Channel quantities the latest (non-initial) sweep corrected: its changes carry its job id, or, for a
    // sweep run outside a job (the CLI), the sweep cause within its time span.
    case 'drift':
      return sql<boolean>`EXISTS (
      SELECT 1 FROM (SELECT job_id, at, at - make_interval(secs => coalesce(duration_ms, 0) / 1000.0) AS started FROM sync_log
                      WHERE connection_id = ${connectionId} AND action IN ('sweep', 'sweep.full') ORDER BY id DESC LIMIT 1) s
        JOIN channel_quantity_changes c ON c.connection_id = v.connection_id AND c.variant_id = v.id AND c.channel_id = ${channelId}
                                       AND c.cause IN ('sweep', 'full-sweep')
       WHERE CASE WHEN s.job_id IS NOT NULL THEN c.job_id = s.job_id ELSE c.job_id IS NULL AND c.at BETWEEN s.started AND s.at END)`;
  }
}

/** A page of the variants index and the count of all that match. */
export async function variantRows(
  db: Executor,
  q: VariantRowsQuery,
  pageSize: number,
  offset: number,
): Promise<{ rows: VariantIndexRow[]; total: number }> {
  const where: RawBuilder<boolean>[] = [sql<boolean>`v.connection_id = ${q.connectionId}`, sql<boolean>`v.status IS DISTINCT FROM 'gone'`];
  if (q.search) {
    const like = `%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    where.push(sql<boolean>`(v.sku ILIKE ${like} OR v.name ILIKE ${like})`);
  }
  if (q.filter) where.push(variantFilterSql(q.filter, q.threshold ?? '5', q.connectionId, q.channelId));
  const cond = sql.join(where, sql` AND `);
  // One row per variant: the selected channel's quantity only (the primary key is channel, variant).
  const channelQuantity = sql`LEFT JOIN channel_quantities cq ON cq.channel_id = ${q.channelId} AND cq.variant_id = v.id`;
  const dir = sql.raw(q.desc ? 'DESC' : 'ASC');
  const order =
    q.sort === 'quantity'
      ? sql`cq.quantity ${dir} NULLS LAST, v.sku`
      : q.sort === 'changed'
        ? sql`lc.at ${dir} NULLS LAST, v.sku`
        : sql`v.sku ${dir} NULLS LAST, v.id`;
  const [rows, total] = await Promise.all([
    sql<VariantIndexRow>`
      SELECT v.id, v.sku, v.name, v.status, v.composite, cq.quantity::text AS quantity, cq.tracked, cq.backorderable,
             (SELECT json_agg(json_build_object('location', coalesce(l.name, 'location ' || s.location_id), 'quantity', (s.on_hand - s.committed)::text) ORDER BY s.location_id)
                FROM stock_levels s LEFT JOIN locations l ON l.connection_id = s.connection_id AND l.id = s.location_id
               WHERE s.connection_id = v.connection_id AND s.variant_id = v.id) AS available,
             lc.at AS last_at, lc.cause AS last_cause, lc.before_quantity::text AS last_before,
             (SELECT json_agg(json_build_object('channel', ch.name, 'quantity', q.quantity::text, 'tracked', q.tracked,
                       'backorderable', q.backorderable, 'listed', q.listed) ORDER BY ch.id)
                FROM channel_quantities q JOIN channels ch ON ch.id = q.channel_id
               WHERE q.connection_id = v.connection_id AND q.variant_id = v.id) AS channels
        FROM variants v
        ${channelQuantity}
        LEFT JOIN LATERAL (SELECT at, cause, before_quantity FROM channel_quantity_changes c
                            WHERE c.connection_id = v.connection_id AND c.variant_id = v.id AND c.channel_id = ${q.channelId}
                            ORDER BY id DESC LIMIT 1) lc ON true
       WHERE ${cond}
       ORDER BY ${order}
       LIMIT ${pageSize} OFFSET ${offset}`.execute(db),
    sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM variants v ${channelQuantity} WHERE ${cond}`.execute(db),
  ]);
  return { rows: rows.rows, total: total.rows[0]?.n ?? 0 };
}

/** The names of a connection's locations (the name, else the service's label), by id: the console's channel rules. */
export async function locationNames(db: Executor, connectionId: number): Promise<Map<number, string>> {
  const rows = await sql<{ id: number; name: string | null }>`
    SELECT id, coalesce(name, raw->>'label', raw->>'name') AS name FROM locations WHERE connection_id = ${connectionId} ORDER BY id`.execute(
    db,
  );
  return new Map(rows.rows.map((r) => [r.id, r.name ?? `location ${r.id}`]));
}
