// Return: one fulfillment return with the given lines and quantities (lines by order_line_item_id or SKU,
// checked against the order read fresh).
import type { ReturnInput } from './input.ts';
import { nonEmpty, orderLinesFor, outbound, resolveOrderId, type Done, type OpContext } from './context.ts';

export async function createReturn(ctx: OpContext): Promise<Done> {
  const input = ctx.op.input as ReturnInput;
  const orderId = await resolveOrderId(ctx, input);
  const lines = await ctx.plan(() => orderLinesFor(ctx, orderId, input.lines));
  const r = await ctx.client.createFulfillmentReturn(
    nonEmpty({
      order_id: orderId,
      location_id: input.location_id,
      notes: input.notes,
      tracking_company: input.tracking?.company,
      tracking_number: input.tracking?.number,
      tracking_url: input.tracking?.url,
      fulfillment_return_line_items: lines.map((l) => ({ order_line_item_id: l.order_line_item_id, quantity: l.quantity })),
    }),
    { idempotencyKey: ctx.key(), ...outbound },
  );
  return {
    result: nonEmpty({
      order_id: orderId,
      fulfillment_return_id: Number(r.id),
      status: r.status,
      credit_note_number: r.credit_note_number,
      lines,
    }),
  };
}
