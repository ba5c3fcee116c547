// Mirrored orders for the console: the list (with the channel and channel order id of orders imported
// through commerce-sync) and an order's page data: lines, fulfilments, returns, its sync-log history and
// the push operations that touched it.
import { sql } from 'kysely';
import type { Db } from '../db/index.ts';
import { getConnection } from '../db/connections.ts';
import { operationsOfOrder } from '../db/operations.ts';
import type { PushOperation } from '../db/schema.ts';
import { querySyncLog, type LogRow } from './synclog.ts';

export const importedWithin = {
  '1h': 'imported in the last hour',
  '24h': 'imported in the last 24 hours',
  any: 'imported through commerce-sync',
} as const;
export type ImportedWithin = keyof typeof importedWithin;

export interface OrderQuery {
  connectionId: number;
  imported?: ImportedWithin;
  status?: string;
  search?: string;
  page?: number;
  pageSize?: number;
}

export interface OrderRow {
  id: number;
  orderNumber: string | null;
  status: string | null;
  subStatuses: Record<string, string>;
  issuedAt: string | null;
  total: string | null;
  currency: string | null;
  company: string | null;
  lines: number;
  channel: string | null;
  channelOrderId: string | null;
  importedAt: Date | null;
  updatedAt: Date | null;
}

const SUB_STATUSES = ['packed_status', 'fulfillment_status', 'invoice_status', 'payment_status'] as const;
const subStatuses = (raw: unknown) =>
  Object.fromEntries(
    SUB_STATUSES.flatMap((k) => {
      const v = (raw as Record<string, unknown> | null)?.[k];
      return typeof v === 'string' ? [[k.replace('_status', ''), v]] : [];
    }),
  );

type Raw = {
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
  updated_at: Date | null;
};

const present = (r: Raw): OrderRow => ({
  id: r.id,
  orderNumber: r.order_number,
  status: r.status,
  subStatuses: subStatuses(r.raw),
  issuedAt: r.issued_at,
  total: r.total,
  currency: r.currency_iso,
  company: r.company,
  lines: r.lines,
  channel: r.channel,
  channelOrderId: r.channel_order_id,
  importedAt: r.imported_at,
  updatedAt: r.updated_at,
});

const select = sql`o.id, o.order_number, o.status, o.raw, o.issued_at, o.total::text AS total, o.currency_iso, co.name AS company,
  (SELECT count(*)::int FROM order_line_items li WHERE li.connection_id = o.connection_id AND li.order_id = o.id AND li.status IS DISTINCT FROM 'gone') AS lines,
  ch.channel, ch.channel_order_id, ch.created_at AS imported_at, o.updated_at
  FROM orders o
  LEFT JOIN companies co ON co.connection_id = o.connection_id AND co.id = o.company_id
  LEFT JOIN channel_orders ch ON ch.connection_id = o.connection_id AND ch.order_id = o.id`;

export async function listOrders(db: Db, q: OrderQuery): Promise<{ rows: OrderRow[]; total: number }> {
  const pageSize = Math.min(Math.max(q.pageSize ?? 50, 1), 500);
  const page = Math.max(q.page ?? 1, 1);
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
    sql<Raw>`SELECT ${select} WHERE ${cond} ORDER BY ch.created_at DESC NULLS LAST, o.updated_at DESC NULLS LAST, o.id DESC LIMIT ${pageSize} OFFSET ${(page - 1) * pageSize}`.execute(
      db,
    ),
    sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM orders o LEFT JOIN channel_orders ch ON ch.connection_id = o.connection_id AND ch.order_id = o.id WHERE ${cond}`.execute(
      db,
    ),
  ]);
  return { rows: rows.rows.map(present), total: total.rows[0]?.n ?? 0 };
}

export async function orderStatuses(db: Db, connectionId: number): Promise<string[]> {
  const r = await sql<{
    status: string;
  }>`SELECT DISTINCT status FROM orders WHERE connection_id = ${connectionId} AND status IS NOT NULL AND status <> 'gone' ORDER BY 1`.execute(
    db,
  );
  return r.rows.map((x) => x.status);
}

export interface OrderRecord {
  connection: { id: number; name: string };
  order: OrderRow;
  lines: {
    id: number;
    sku: string | null;
    variantId: number | null;
    quantity: string | null;
    price: string | null;
    label: string | null;
  }[];
  fulfillments: {
    id: number;
    status: string | null;
    packedAt: Date | null;
    tracking: string | null;
    lines: { sku: string | null; quantity: string | null }[];
  }[];
  returns: {
    id: number;
    status: string | null;
    creditNote: string | null;
    lines: { orderLineItemId: number | null; quantity: string | null }[];
  }[];
  operations: PushOperation[];
  log: LogRow[];
}

export async function orderRecord(db: Db, connectionId: number, orderId: number): Promise<OrderRecord | null> {
  const conn = await getConnection(db, connectionId);
  const row = conn && (await sql<Raw>`SELECT ${select} WHERE o.connection_id = ${connectionId} AND o.id = ${orderId}`.execute(db)).rows[0];
  if (!conn || !row) return null;
  const order = present(row);
  const channelKey = order.channel ? `channel:${order.channel}:${order.channelOrderId}` : null;
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
  const [lines, fulfillments, fLines, returns, rLines, operations, log] = await Promise.all([
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
    operationsOfOrder(db, connectionId, orderId, channelKey),
    querySyncLog(db, { connectionId, resource: 'order', recordId: orderId, limit: 100 }),
  ]);
  return {
    connection: conn,
    order,
    lines: lines.rows.map((l) => ({ id: l.id, sku: l.sku, variantId: l.variant_id, quantity: l.quantity, price: l.price, label: l.label })),
    fulfillments: fulfillments.map((f) => ({
      id: f.id,
      status: f.status,
      packedAt: f.packed_at as Date | null,
      tracking: [f.tracking_company, f.tracking_number].filter(Boolean).join(' ') || null,
      lines: fLines.rows.filter((l) => l.fulfillment_id === f.id).map((l) => ({ sku: l.variant_sku, quantity: l.quantity })),
    })),
    returns: returns.map((r) => ({
      id: r.id,
      status: r.status,
      creditNote: r.credit_note_number,
      lines: rLines.rows
        .filter((l) => l.fulfillment_return_id === r.id)
        .map((l) => ({ orderLineItemId: l.order_line_item_id, quantity: l.quantity })),
    })),
    operations,
    log,
  };
}
