// Ship: pack (all unpacked lines with the pack action, or the given lines and quantities as one fulfillment),
// then mark that fulfillment fulfilled with its tracking. Each step has its own idempotency key and its
// result is saved before the next, so a retry neither packs twice nor loses the fulfillment id.
import type { OrderActionAnswer } from '../api/index.ts';
import type { Fields } from '../catalog/records.ts';
import type { ShipInput } from './input.ts';
import { OperationFailed } from './errors.ts';
import { nonEmpty, orderLinesFor, outbound, resolveOrderId, type Done, type OpContext } from './context.ts';

export async function ship(ctx: OpContext): Promise<Done> {
  const input = ctx.op.input as ShipInput;
  const orderId = await resolveOrderId(ctx, input);
  let fulfillmentId = input.fulfillment_id ?? (ctx.progress.fulfillment_id as number | undefined);
  if (fulfillmentId === undefined) {
    if (input.lines) {
      const plan = await ctx.plan(async () => ({
        packed_at: new Date().toISOString(),
        lines: await orderLinesFor(ctx, orderId, input.lines!),
      }));
      const f = await ctx.client.createFulfillment(
        nonEmpty({
          order_id: orderId,
          packed_at: plan.packed_at,
          stock_location_id: input.stock_location_id,
          fulfillment_line_items: plan.lines.map((l) => ({ order_line_item_id: l.order_line_item_id, quantity: l.quantity })),
        }),
        { idempotencyKey: ctx.key('pack'), ...outbound },
      );
      fulfillmentId = Number(f.id);
      await ctx.save({ fulfillment_id: fulfillmentId, packed: plan.lines });
    } else {
      const res = await ctx.client.orderAction(orderId, 'pack', undefined, { idempotencyKey: ctx.key('pack'), ...outbound });
      fulfillmentId = fulfillmentIdOf(res);
      if (fulfillmentId === undefined)
        throw new OperationFailed(`the pack action on order ${orderId} answered without a fulfillment (nothing left to pack?)`);
      await ctx.save({ fulfillment_id: fulfillmentId, packed: 'all unpacked lines' });
    }
  }
  const tracking = nonEmpty({
    tracking_company: input.tracking?.company,
    tracking_number: input.tracking?.number,
    tracking_url: input.tracking?.url,
  });
  if (!input.fulfil && !Object.keys(tracking).length) {
    // Packed by this operation (input.ts refuses a given fulfillment with nothing to change), and a fulfillment
    // is created packed: nothing else was sent.
    return { result: { order_id: orderId, fulfillment_id: fulfillmentId, status: 'packed' } };
  }
  const body = { ...(input.fulfil ? { status: 'fulfilled' } : {}), ...tracking };
  // The service answers the update 204 with no body, which says nothing of what the fulfillment now holds (the
  // merchant may have shipped it already, a field may be ignored): updateFulfillment reads it back, so the status
  // and tracking reported are the service's.
  const f = await ctx.client.updateFulfillment(fulfillmentId, body, { idempotencyKey: ctx.key('fulfil'), ...outbound });
  return {
    result: nonEmpty({
      order_id: orderId,
      fulfillment_id: fulfillmentId,
      status: f?.status,
      tracking_company: f?.tracking_company,
      tracking_number: f?.tracking_number,
      tracking_url: f?.tracking_url,
    }),
  };
}

/** The pack action's answer is not specified: accept a fulfillment, or an order naming its fulfillments. */
function fulfillmentIdOf(res: OrderActionAnswer | null): number | undefined {
  const f = res?.fulfillment ?? (res && 'order_id' in res && 'id' in res ? res : undefined);
  if (f?.id != null) return Number(f.id);
  const list = res?.fulfillments ?? res?.order?.fulfillment_ids ?? res?.fulfillment_ids;
  if (Array.isArray(list) && list.length) {
    const last: unknown = list[list.length - 1];
    return Number(typeof last === 'object' ? (last as Fields).id : last);
  }
  return undefined;
}
