// Mirrored orders for the console: the list (with the channel and channel order id of orders imported
// through commerce-sync) and an order's page data: lines, fulfilments, returns, its sync-log history and
// the push operations that touched it.
import type { Db } from '../db/index.ts';
import { getConnection } from '../db/connections.ts';
import { type OrderFilter, type OrderRowRaw, orderParts, orderRow, orderRows } from '../db/mirror-reads.ts';
import { operationsOfOrder } from '../db/operations.ts';
import type { PushOperation } from '../db/schema.ts';
import { dec, fmt } from '../stock/rules.ts';
import { channelIds } from './channel-orders.ts';
import { logEntry, recordHistory, type LogRow } from './synclog.ts';
import { z } from 'zod';
import { decimal, timestamp } from '../openapi/registry.ts';
import { operationRowSchema } from '../push/store.ts';

/** A field of a mirrored record as the service gave it (raw), when it is text. */
const serviceText = (raw: unknown, field: string) => {
  const v = (raw as Record<string, unknown> | null)?.[field];
  return typeof v === 'string' ? v : null;
};

/** A quantity as the rest of the console shows it: `3`, not the mirror's `3.0`. */
const qty = (v: string | null) => (v === null ? null : fmt(dec(v)));

export const importedWithin = {
  '1h': 'imported in the last hour',
  '24h': 'imported in the last 24 hours',
  any: 'imported through commerce-sync',
} as const;
export type ImportedWithin = keyof typeof importedWithin;

export interface OrderQuery extends OrderFilter {
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
  /** When the service made it: the list's order, newest first. */
  createdAt: Date | null;
  updatedAt: Date | null;
}

/** OrderRow as the API answers it. */
export const orderRowSchema = z
  .object({
    id: z.number().int(),
    orderNumber: z.string().nullable(),
    status: z.string().nullable(),
    subStatuses: z.record(z.string(), z.string()).describe('packed, fulfillment, invoice and payment statuses, those the service gave.'),
    issuedAt: z.string().nullable(),
    total: decimal.nullable(),
    currency: z.string().nullable(),
    company: z.string().nullable(),
    lines: z.number().int(),
    channel: z.string().nullable(),
    channelOrderId: z.string().nullable(),
    importedAt: timestamp.nullable(),
    createdAt: timestamp.nullable().describe('When the service made the order: the list is newest first by it, then by id.'),
    updatedAt: timestamp.nullable(),
  })
  .meta({ id: 'Order' });

const SUB_STATUSES = ['packed_status', 'fulfillment_status', 'invoice_status', 'payment_status'] as const;
const subStatuses = (raw: unknown) =>
  Object.fromEntries(
    SUB_STATUSES.flatMap((k) => {
      const v = (raw as Record<string, unknown> | null)?.[k];
      return typeof v === 'string' ? [[k.replace('_status', ''), v]] : [];
    }),
  );

const present = (r: OrderRowRaw): OrderRow => ({
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
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function listOrders(db: Db, q: OrderQuery): Promise<{ rows: OrderRow[]; total: number }> {
  const pageSize = Math.min(Math.max(q.pageSize ?? 50, 1), 500);
  const page = Math.max(q.page ?? 1, 1);
  const { rows, total } = await orderRows(db, q, pageSize, (page - 1) * pageSize);
  return { rows: rows.map(present), total };
}

export interface OrderRecord {
  connection: { id: number; name: string };
  order: OrderRow;
  /** The channel of a channel order (its page: /channels/ID/orders/CHANNEL_ORDER_ID); null when none or removed. */
  channelId: number | null;
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
    /** As the service gives it: often a day alone (YYYY-MM-DD), which the mirror's column keeps as a midnight. */
    packedAt: string | null;
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

/** OrderRecord as the API answers it. */
export const orderRecordSchema = z.object({
  connection: z.object({ id: z.number().int(), name: z.string() }),
  order: orderRowSchema,
  channelId: z.number().int().nullable(),
  lines: z.array(
    z.object({
      id: z.number().int(),
      sku: z.string().nullable(),
      variantId: z.number().int().nullable(),
      quantity: decimal.nullable(),
      price: decimal.nullable(),
      label: z.string().nullable(),
    }),
  ),
  fulfillments: z.array(
    z.object({
      id: z.number().int(),
      status: z.string().nullable(),
      packedAt: z.string().nullable().describe('As the service gives it: a day (YYYY-MM-DD) or a time.'),
      tracking: z.string().nullable(),
      lines: z.array(z.object({ sku: z.string().nullable(), quantity: decimal.nullable() })),
    }),
  ),
  returns: z.array(
    z.object({
      id: z.number().int(),
      status: z.string().nullable(),
      creditNote: z.string().nullable(),
      lines: z.array(z.object({ orderLineItemId: z.number().int().nullable(), quantity: decimal.nullable() })),
    }),
  ),
  operations: z.array(operationRowSchema),
  log: z.array(logEntry),
});

export async function orderRecord(db: Db, connectionId: number, orderId: number): Promise<OrderRecord | null> {
  const conn = await getConnection(db, connectionId);
  const row = conn && (await orderRow(db, connectionId, orderId));
  if (!conn || !row) return null;
  const order = present(row);
  const channelKey = order.channel ? `channel:${order.channel}:${order.channelOrderId}` : null;
  const [{ lines, fulfillments, fLines, returns, rLines }, operations, log, channels] = await Promise.all([
    orderParts(db, connectionId, orderId),
    operationsOfOrder(db, connectionId, orderId, channelKey),
    recordHistory(db, { connectionId, resource: 'order', recordId: orderId, limit: 100 }),
    order.channel ? channelIds(db, connectionId) : new Map<string, number>(),
  ]);
  return {
    // Its name and id only: the row holds the encrypted tokens.
    connection: { id: conn.id, name: conn.name },
    order,
    channelId: order.channel ? (channels.get(order.channel) ?? null) : null,
    lines: lines.map((l) => ({ id: l.id, sku: l.sku, variantId: l.variant_id, quantity: qty(l.quantity), price: l.price, label: l.label })),
    fulfillments: fulfillments.map((f) => ({
      id: f.id,
      status: f.status,
      packedAt: serviceText(f.raw, 'packed_at'),
      tracking: [f.tracking_company, f.tracking_number].filter(Boolean).join(' ') || null,
      lines: fLines.filter((l) => l.fulfillment_id === f.id).map((l) => ({ sku: l.variant_sku, quantity: qty(l.quantity) })),
    })),
    returns: returns.map((r) => ({
      id: r.id,
      status: r.status,
      creditNote: r.credit_note_number,
      lines: rLines
        .filter((l) => l.fulfillment_return_id === r.id)
        .map((l) => ({ orderLineItemId: l.order_line_item_id, quantity: qty(l.quantity) })),
    })),
    operations,
    log,
  };
}

/** What the Ship form may offer: an order the service packs and fulfils only while active or finalized. */
export type ShipChoice = { offer: true; unpacked: boolean; packed: OrderRecord['fulfillments'] } | { offer: false; why: string };

const SHIPPABLE = new Set(['active', 'finalized']);

/**
 * What the order's state lets the console ship: the lines not yet packed (one ship operation packs and fulfils
 * them) and each packed fulfilment not shipped yet; nothing on a void, draft or shipped order.
 */
export function shipChoice(r: Pick<OrderRecord, 'order' | 'fulfillments'>): ShipChoice {
  const o = r.order;
  if (o.status === 'void') return { offer: false, why: 'This order is void: nothing on it can be shipped.' };
  if (o.status === 'fulfilled' || o.subStatuses.fulfillment === 'shipped')
    return { offer: false, why: 'Everything on this order is shipped.' };
  if (!o.status || !SHIPPABLE.has(o.status))
    return {
      offer: false,
      why: `The service packs and ships an order only while it is active or finalized; this one is ${o.status ?? 'without a status'}.`,
    };
  const packed = r.fulfillments.filter((f) => f.status === 'packed');
  const unpacked = o.subStatuses.packed !== 'packed';
  if (!unpacked && !packed.length) return { offer: false, why: 'Every line is packed and no packed fulfilment waits to ship.' };
  return { offer: true, unpacked, packed };
}

/** The state an order is in, as far as a retry cares (an order row, or a channel order's facts). */
export interface OrderState {
  status: string | null;
  fulfillment?: string | null;
  invoice?: string | null;
  payment?: string | null;
}

/**
 * Whether the order's state still leaves something for a failed operation of this kind to do, so that its Retry
 * is offered: nothing on a void or deleted order, no ship once everything shipped, no invoice once invoiced, no
 * payment once paid.
 */
export function orderAllowsRetry(o: OrderState, kind: string): boolean {
  if (o.status === 'void' || o.status === 'deleted') return false;
  if (kind === 'ship') return o.status !== 'fulfilled' && o.fulfillment !== 'shipped';
  if (kind === 'invoice') return o.invoice !== 'invoiced';
  if (kind === 'pay') return o.payment !== 'paid';
  return true;
}
