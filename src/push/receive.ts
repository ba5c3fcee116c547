// Receive a purchase order. The service receives whole orders only, so a request naming lines must name
// every line with its full quantity; anything less fails here, before a request is spent on it.
import { Decimal } from 'decimal.js';
import type { ReceiveInput } from './input.ts';
import { OperationFailed } from './errors.ts';
import { variantIdsBySku } from './skus.ts';
import { outbound, type Done, type OpContext } from './context.ts';

interface PoLine {
  id: number;
  variant_id: number | null;
  quantity: string | null;
}

export async function receivePurchaseOrder(ctx: OpContext): Promise<Done> {
  const input = ctx.op.input as ReceiveInput;
  const poId = input.purchase_order_id;
  if (input.lines) await checkWhole(ctx, poId, input.lines);
  const procurement = await ctx.client.receivePurchaseOrder(poId, { idempotencyKey: ctx.key(), ...outbound });
  const id = procurement?.procurement?.id ?? procurement?.id;
  return { result: { purchase_order_id: poId, procurement_id: id == null ? null : Number(id), received: 'whole order' } };
}

async function checkWhole(ctx: OpContext, poId: number, lines: NonNullable<ReceiveInput['lines']>): Promise<void> {
  const res = await ctx.client.request<Record<string, unknown>>('GET', `/purchase_orders/${poId}`, {
    query: { include: 'purchase_order_line_items' },
    ...outbound,
  });
  const poLines = (res.body.purchase_order_line_items ?? []) as PoLine[];
  const skus = lines.flatMap((l) => (l.sku ? [l.sku] : []));
  const bySku = await variantIdsBySku(ctx.db, ctx.op.connection_id, skus);
  // Requested quantity per purchase order line.
  const asked = new Map<number, Decimal>();
  const problems: string[] = [];
  for (const l of lines) {
    const line =
      l.purchase_order_line_item_id !== undefined
        ? poLines.find((p) => p.id === l.purchase_order_line_item_id)
        : poLines.find((p) => p.variant_id === bySku.get(l.sku!));
    if (!line) {
      problems.push(`purchase order ${poId} has no line ${l.purchase_order_line_item_id ?? `for SKU ${l.sku}`}`);
      continue;
    }
    asked.set(line.id, (asked.get(line.id) ?? new Decimal(0)).plus(l.quantity));
  }
  const short = poLines
    .filter((p) => !(asked.get(p.id) ?? new Decimal(0)).eq(p.quantity ?? '0'))
    .map((p) => `line ${p.id}: ${asked.get(p.id)?.toString() ?? '0'} of ${p.quantity}`);
  if (problems.length || short.length) {
    throw new OperationFailed(
      `partial receiving is not supported: the service receives purchase order ${poId} only as a whole ` +
        `(every line, full quantity). ${[...problems, ...short].join('; ')}. Send the request without lines (or with every line in full) ` +
        'to receive the whole order, or change the purchase order on the service first.',
    );
  }
}
