// Import a channel order. The idempotency key comes from (connection, channel, channel order id) and the
// mapping to the service's order id is kept, so the same channel order never becomes two orders: within the
// key's 24 hours the service replays its answer, after that the mapping answers without calling it. The channel
// order id goes into the order's reference_number, and before creating, the order is looked up by it: in the
// mirror always (free: an import whose mapping was lost, by a restored database say, finds the order there once a
// sweep has read it), and at the service (GET /orders?reference_number=, real-service-notes §6) only on a retry,
// whose earlier attempt may have created the order and lost the answer, maybe more than 24 hours ago. A first
// attempt costs no lookup: within 24 hours the key answers for any earlier send (it is derived from the channel
// order, so a restored database sends the same one), and after that the mirror does.
// Before any of that, the order's stock is held in every channel (src/channels/holds.ts), unless the channel held it
// already; the hold learns the service's order once there is one, and ends when a read shows it committed.
import { ApiError } from '../api/index.ts';
import { catalog } from '../catalog/index.ts';
import { listLive } from '../api/live.ts';
import type { ImportOrderInput } from './input.ts';
import { hasCurrency, ordersByReference } from '../db/mirror-reads.ts';
import { incompleteImportOrder, mappedOrderId, ordersMappedElsewhere } from '../db/operations.ts';
import { OperationFailed } from './errors.ts';
import { variantIdsBySku } from './skus.ts';
import { nonEmpty, outbound, type Done, type OpContext } from './context.ts';
import { createHold, recordHoldOrder } from '../channels/holds.ts';

export async function importOrder(ctx: OpContext): Promise<Done> {
  const input = ctx.op.input as ImportOrderInput;
  const mapping = { channel: input.channel, channelOrderId: input.channel_order_id };
  const existing = await mappedOrderId(ctx.db, ctx.op.connection_id, input.channel, input.channel_order_id);
  if (existing !== undefined) {
    await noteOrder(ctx, input, existing);
    return { result: { order_id: existing, already_imported: true }, mapping: { ...mapping, orderId: existing } };
  }
  // Held before the lookup and the create, which may wait for the rate budget.
  await holdStock(ctx, input);
  const found = await orderByReference(ctx, input.channel, input.channel_order_id);
  if (found !== undefined) {
    await noteOrder(ctx, input, found);
    return { result: { order_id: found, already_imported: true, found_by: 'reference_number' }, mapping: { ...mapping, orderId: found } };
  }
  const order = await ctx.plan(async () => {
    const skus = input.lines.flatMap((l) => (skuOf(l) ? [skuOf(l)!] : []));
    const ids = await variantIdsBySku(ctx.db, ctx.op.connection_id, skus);
    await ensureCurrency(ctx, input.currency);
    const customer =
      'company_id' in input.customer
        ? nonEmpty({
            company_id: input.customer.company_id,
            shipping_address_id: input.customer.shipping_address_id,
            billing_address_id: input.customer.billing_address_id,
          })
        : nonEmpty({
            company: input.customer.company,
            shipping_address: input.customer.shipping_address,
            billing_address: input.customer.billing_address,
          });
    return {
      ...customer,
      status: input.status ?? 'active',
      issued_at: input.issued_at,
      currency_iso: input.currency,
      // Lets an operator find the order on the service by the channel's number.
      reference_number: input.channel_order_id,
      ...(input.stock_location_id ? { stock_location_id: input.stock_location_id } : {}),
      order_line_items: input.lines.map((l) =>
        skuOf(l) ? nonEmpty({ variant_id: ids.get(skuOf(l)!)!, quantity: l.quantity, price: l.price }) : { ...l, freeform: true },
      ),
    };
  });
  // The order as the service holds it: the create's answer, or read back after PUTs adding lines beyond 150
  // (they answer 204 with no body; see createOrder).
  let created;
  try {
    created = await ctx.client.createOrder(order, { idempotencyKey: ctx.key(), ...outbound });
  } catch (err) {
    await noteRefusal(ctx, err);
    throw err;
  }
  const orderId = Number(created.id);
  await noteOrder(ctx, input, orderId, created);
  return {
    result: nonEmpty({
      order_id: orderId,
      order_number: created.order_number,
      status: created.status,
      lines: order.order_line_items.length,
      order_line_item_ids: created.order_line_item_ids,
      company_id: created.company_id,
    }),
    mapping: { ...mapping, orderId },
  };
}

/** Holds the order's SKU lines in every channel, unless the channel order is held already (by the channel's own call). */
async function holdStock(ctx: OpContext, input: ImportOrderInput): Promise<void> {
  const lines = input.lines.flatMap((l) => (skuOf(l) ? [{ sku: skuOf(l)!, quantity: l.quantity }] : []));
  if (!lines.length) return;
  await createHold(ctx.db, ctx.config, {
    connectionId: ctx.op.connection_id,
    channel: input.channel,
    source: 'import',
    input: { channel_order_id: input.channel_order_id, lines },
    anyLines: true,
  });
}

/** The service has the order: its hold (if any) learns which, and from the create's answer since when it commits stock. */
async function noteOrder(ctx: OpContext, input: ImportOrderInput, orderId: number, order?: { status?: unknown; updated_at?: unknown }) {
  await recordHoldOrder(ctx.db, {
    connectionId: ctx.op.connection_id,
    channel: input.channel,
    channelOrderId: input.channel_order_id,
    orderId,
    order,
  });
}

/**
 * What a refusal means for the next import of this channel order: a refused create made nothing (the next import
 * may use a fresh key, see store.ts), while a refused PUT adding lines beyond the first 150 leaves an order behind
 * (the next import keeps the key and so gets that same order back, never a second one).
 */
async function noteRefusal(ctx: OpContext, err: unknown): Promise<void> {
  if (!(err instanceof ApiError) || err.retryable || err.status === null) return;
  if (err.method === 'POST' && err.path === '/orders') await ctx.save({ create_refused: true });
  const put = err.method === 'PUT' ? /^\/orders\/(\d+)/.exec(err.path ?? '') : null;
  if (put) {
    await ctx.save({ order_id: Number(put[1]), incomplete: true });
    throw new OperationFailed(
      `order ${put[1]} was created on the service but adding its lines beyond the first 150 was refused: ` +
        `${err.message}. Fix or delete order ${put[1]} on the service; importing this channel order again returns that same order.`,
      err.fieldErrors,
      err.status,
    );
  }
}

/**
 * The order carrying this channel order id as its reference_number, in any live state: the mirror's, or on a retry
 * the service's. An order mapped to another channel's order with the same id (reference numbers are per channel)
 * is not this one.
 */
async function orderByReference(ctx: OpContext, channel: string, channelOrderId: string): Promise<number | undefined> {
  const candidates = await ordersByReference(ctx.db, ctx.op.connection_id, channelOrderId);
  if (ctx.op.attempts > 1) {
    const spec = catalog.order!;
    for await (const page of listLive(ctx.client, spec, { ...outbound, key: spec.key, query: { reference_number: channelOrderId } })) {
      for (const o of page.records as { id?: unknown; reference_number?: unknown }[]) {
        if (o.reference_number === channelOrderId && Number.isSafeInteger(Number(o.id))) candidates.push(Number(o.id));
      }
    }
  }
  if (!candidates.length) return undefined;
  // An order an earlier import left without its lines beyond the first 150 is not a finished import.
  const incomplete = await incompleteImportOrder(ctx.db, ctx.op.connection_id, candidates);
  if (incomplete !== undefined) {
    throw new OperationFailed(
      `order ${incomplete} was created on the service for this channel order by an earlier import, but adding its ` +
        `lines beyond the first 150 was refused. Fix or delete order ${incomplete} on the service; importing again returns that same order.`,
    );
  }
  const taken = await ordersMappedElsewhere(ctx.db, ctx.op.connection_id, candidates, channel);
  return candidates.sort((a, b) => a - b).find((id) => !taken.has(id));
}

const skuOf = (l: ImportOrderInput['lines'][number]): string | undefined => ('sku' in l && typeof l.sku === 'string' ? l.sku : undefined);

/** A currency is looked up by ISO; a missing one is created only when ALLOW_CREATE_CURRENCY is on. */
async function ensureCurrency(ctx: OpContext, iso: string): Promise<void> {
  // The mirror answers for free; only a currency it does not know costs a read (it may be minutes old).
  if (await hasCurrency(ctx.db, ctx.op.connection_id, iso)) return;
  for await (const page of ctx.client.paginate<{ iso?: string }>('/currencies', outbound)) {
    if (page.records.some((c) => c.iso?.toUpperCase() === iso)) return;
  }
  if (!ctx.config.ALLOW_CREATE_CURRENCY) {
    throw new OperationFailed(
      `currency ${iso} does not exist on the account: create it on the service, ` +
        'or set ALLOW_CREATE_CURRENCY=true to let order imports create missing currencies, then retry this operation',
    );
  }
  const currency = await ctx.client.createCurrency({ iso }, { idempotencyKey: ctx.key(`currency-${iso}`), ...outbound });
  await ctx.save({ currency_created: { iso, id: currency?.id ?? null } });
}
