// Invoice, pay, void: one order action each, sent with the operation's idempotency key.
import type { OrderActionInput } from './input.ts';
import { nonEmpty, outbound, resolveOrderId, type Done, type OpContext } from './context.ts';

export async function orderAction(ctx: OpContext, action: 'invoice' | 'pay' | 'void'): Promise<Done> {
  const orderId = await resolveOrderId(ctx, ctx.op.input as OrderActionInput);
  const res = await ctx.client.orderAction(orderId, action, undefined, { idempotencyKey: ctx.key(), ...outbound });
  // No read back: nothing is decided on the answer, whose body the spec does not show. Status fields are
  // reported only from an answer that carries the order (the service's own account of it after the action);
  // an empty answer (null) or another shape reports none, never a guess.
  const order = res?.order ?? (res && res.id === orderId ? res : undefined);
  const invoice = res?.invoice;
  return {
    result: nonEmpty({
      order_id: orderId,
      action,
      order_status: order?.status,
      invoice_id: invoice?.id,
      invoice_status: order?.invoice_status,
      payment_status: order?.payment_status,
    }),
  };
}
