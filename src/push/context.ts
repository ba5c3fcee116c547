// What an operation's code gets to work with, and the lookups several operations share (which order, which line).
import { Decimal } from 'decimal.js';
import type { ApiClient } from '../api/index.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/index.ts';
import type { PushOperation } from '../db/schema.ts';
import type { Logger } from '../log.ts';
import { OperationFailed } from './errors.ts';
import { variantIdsBySku } from './skus.ts';
import type { OrderRef } from './input.ts';
import { mappedOrderId, saveProgress } from '../db/operations.ts';

export interface OpContext {
  db: Db;
  client: ApiClient;
  config: Config;
  log: Logger;
  op: PushOperation;
  /** Progress saved by earlier attempts (op.result), updated by save(). */
  progress: Record<string, unknown>;
  /** The idempotency key of one request of this operation: the same on every attempt. */
  key(step?: string): string;
  /** Merges into the operation's result now, so a retry skips what is done. */
  save(patch: Record<string, unknown>): Promise<void>;
  /** The requests computed on the first attempt, sent unchanged on every retry. */
  plan<T>(compute: () => Promise<T>): Promise<T>;
}

export interface Done {
  result: Record<string, unknown>;
  mapping?: { channel: string; channelOrderId: string; orderId: number };
}

export function makeContext(deps: { db: Db; client: ApiClient; config: Config; log: Logger }, op: PushOperation): OpContext {
  const progress: Record<string, unknown> = { ...((op.result as Record<string, unknown> | null) ?? {}) };
  let plan = op.plan;
  return {
    ...deps,
    op,
    progress,
    key: (step) => (step ? `${op.idempotency_key}:${step}` : op.idempotency_key),
    async save(patch) {
      Object.assign(progress, patch);
      await saveProgress(deps.db, op.id, { result: patch });
    },
    async plan<T>(compute: () => Promise<T>): Promise<T> {
      if (plan != null) return plan as T;
      const computed = await compute();
      await saveProgress(deps.db, op.id, { plan: computed });
      plan = computed as never;
      return computed;
    },
  };
}

export const outbound = { priority: 'outbound' as const };

/** The service's order id named by order_id or by an imported channel order. */
export async function resolveOrderId(ctx: OpContext, ref: OrderRef): Promise<number> {
  if (ref.order_id !== undefined) return ref.order_id;
  const id = await mappedOrderId(ctx.db, ctx.op.connection_id, ref.channel!, ref.channel_order_id!);
  if (id === undefined) {
    throw new OperationFailed(
      `channel order ${ref.channel}/${ref.channel_order_id} has not been imported on this connection ` +
        '(no confirmed import-order operation for it): import it first, or give order_id',
    );
  }
  return id;
}

export interface OrderLine {
  id: number;
  variant_id: number | null;
  quantity: string | null;
}

/** Reads the order fresh with its line items. */
export async function readOrder(ctx: OpContext, orderId: number): Promise<{ order: Record<string, unknown>; lines: OrderLine[] }> {
  const res = await ctx.client.request<Record<string, unknown>>('GET', `/orders/${orderId}`, {
    query: { include: 'order_line_items' },
    ...outbound,
  });
  const order = res.body.order as Record<string, unknown>;
  // Sideloading works on a single order (real-service-notes §1); should it not, the lines' own collection answers.
  const lines = Array.isArray(res.body.order_line_items)
    ? (res.body.order_line_items as OrderLine[])
    : (await ctx.client.getByIds<OrderLine>('/order_line_items', [orderId], { by: 'order_id', ...outbound })).records;
  return { order, lines };
}

/**
 * Turns lines given by order_line_item_id or SKU into order_line_item_id + quantity, checking each against the
 * order (fresh). A SKU names the order's line for that variant; a SKU on several lines must use the line id.
 */
export async function orderLinesFor(
  ctx: OpContext,
  orderId: number,
  lines: { order_line_item_id?: number; sku?: string; quantity: string }[],
): Promise<{ order_line_item_id: number; quantity: string; sku?: string }[]> {
  const { lines: orderLines } = await readOrder(ctx, orderId);
  const skus = lines.flatMap((l) => (l.sku ? [l.sku] : []));
  const bySku = await variantIdsBySku(ctx.db, ctx.op.connection_id, skus);
  const problems: string[] = [];
  const out = lines.map((l) => {
    let line: OrderLine | undefined;
    if (l.order_line_item_id !== undefined) {
      line = orderLines.find((o) => o.id === l.order_line_item_id);
      if (!line) problems.push(`order ${orderId} has no line item ${l.order_line_item_id}`);
    } else {
      const matches = orderLines.filter((o) => o.variant_id === bySku.get(l.sku!));
      if (matches.length > 1)
        problems.push(`SKU ${l.sku} is on ${matches.length} lines of order ${orderId}: name the line by order_line_item_id`);
      else if (!matches.length) problems.push(`order ${orderId} has no line for SKU ${l.sku}`);
      line = matches[0];
    }
    if (line?.quantity != null && new Decimal(l.quantity).gt(line.quantity)) {
      problems.push(`line ${line.id}${l.sku ? ` (${l.sku})` : ''}: quantity ${l.quantity} is more than the ${line.quantity} ordered`);
    }
    return { order_line_item_id: line?.id ?? 0, quantity: l.quantity, ...(l.sku ? { sku: l.sku } : {}) };
  });
  if (problems.length) throw new OperationFailed(problems.join('; '));
  return out;
}

export const nonEmpty = <T extends Record<string, unknown>>(o: T): Partial<T> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>;
