// A channel's own order, as the channel asks for it: what the service has of it (fulfilments with tracking,
// returns), its hold, the operations that touched it and the events told; and its cancel: a void at the service
// when it was imported (once, however often asked; refused once shipped), or the end of its hold when not.
import { orderEventsAfter, orderFacts, type OrderFacts } from '../db/channel-order-events.ts';
import { destinationOf } from '../db/channel-destinations.ts';
import { holdByKey, listHolds } from '../db/holds.ts';
import type { Db } from '../db/index.ts';
import { mappedOrderId, operationsOfOrder } from '../db/operations.ts';
import { recentOrderPosts } from '../db/channel-destinations.ts';
import type { Boss } from '../queue/boss.ts';
import { present, voidChannelOrderOnce } from '../push/store.ts';
import { cancelHold, presentHold } from './holds.ts';
import type { NewChange } from '../stock/recompute.ts';
import { presentOrderEvent, type OrderEvent } from './order-feed.ts';

export interface ChannelRef {
  connectionId: number;
  channelId: number;
  channel: string;
  channelOrderId: string;
}

export interface ChannelOrderView {
  channel: string;
  channel_order_id: string;
  order_id: number | null;
  /** The order as the mirror has it (null: not imported, or not read yet). */
  order: Omit<OrderFacts, 'fulfillments' | 'returns'> | null;
  fulfillments: OrderFacts['fulfillments'];
  returns: OrderFacts['returns'];
  hold: ReturnType<typeof presentHold> | null;
  operations: ReturnType<typeof present>[];
  /** Each event, whether the destination acknowledged it, and the POST that carried it. */
  events: (OrderEvent & { sent: boolean; post: { webhook_id: string; at: Date; status: number | null } | null })[];
}

/** The view of a channel order; null when the channel knows no such order (no import, hold or event). */
export async function channelOrderView(db: Db, ref: ChannelRef): Promise<ChannelOrderView | null> {
  const orderId = (await mappedOrderId(db, ref.connectionId, ref.channel, ref.channelOrderId)) ?? null;
  const holdRow = await holdByKey(db, ref.connectionId, ref.channel, ref.channelOrderId);
  const rows = (
    await orderEventsAfter(db, { channelId: ref.channelId, channelOrderId: ref.channelOrderId, since: 0, limit: 10_000 })
  ).slice(0, 10_000);
  if (orderId === null && !holdRow && !rows.length) return null;
  const facts = orderId === null ? undefined : (await orderFacts(db, ref.connectionId, [orderId])).get(orderId);
  const [hold] = holdRow ? await listHolds(db, { ids: [holdRow.id], state: 'all' }) : [];
  const ops =
    orderId === null ? [] : await operationsOfOrder(db, ref.connectionId, orderId, `channel:${ref.channel}:${ref.channelOrderId}`);
  const dest = await destinationOf(db, ref.channelId);
  const posts = rows.length ? await recentOrderPosts(db, ref.channelId, Number(rows[0]!.id)) : [];
  const { fulfillments = [], returns = [], ...order } = facts ?? {};
  return {
    channel: ref.channel,
    channel_order_id: ref.channelOrderId,
    order_id: orderId,
    order: facts ? (order as ChannelOrderView['order']) : null,
    fulfillments,
    returns,
    hold: hold ? presentHold(hold) : null,
    operations: ops.map((op) => present(op)),
    events: rows.map((r) => {
      const e = presentOrderEvent(r);
      const post = posts.find((p) => p.ok && p.first_change <= e.id && e.id <= p.last_change);
      return {
        ...e,
        sent: dest ? Number(dest.order_cursor) >= e.id : false,
        post: post ? { webhook_id: post.webhook_id, at: post.at, status: post.status } : null,
      };
    }),
  };
}

export class CancelRefused extends Error {}

export type CancelOutcome =
  | { kind: 'void'; operation: ReturnType<typeof present>; created: boolean }
  | { kind: 'hold'; hold: ReturnType<typeof presentHold>; ended: boolean; changes: NewChange[] };

/**
 * Cancels a channel order: voids it at the service when it was imported (the void operation once, whoever asks and
 * however often), refused once any of it shipped; or ends its hold when it was not imported. Null: no such order.
 */
export async function cancelChannelOrder(db: Db, boss: Boss, ref: ChannelRef): Promise<CancelOutcome | null> {
  const orderId = await mappedOrderId(db, ref.connectionId, ref.channel, ref.channelOrderId);
  if (orderId !== undefined) {
    const facts = (await orderFacts(db, ref.connectionId, [orderId])).get(orderId);
    const shipped = facts?.status === 'fulfilled' || facts?.fulfillments.some((f) => f.status === 'fulfilled');
    if (shipped && facts?.status !== 'void')
      throw new CancelRefused(
        `order ${facts?.order_number ?? orderId} of channel order ${ref.channelOrderId} has shipped; it can no longer be voided (take a return instead)`,
      );
    const { op, created } = await voidChannelOrderOnce(db, boss, ref);
    return { kind: 'void', operation: present(op), created };
  }
  const done = await cancelHold(db, ref);
  if (!done) return null;
  const [hold] = await listHolds(db, { ids: [done.hold.id], state: 'all' });
  return { kind: 'hold', hold: presentHold(hold!), ended: done.ended, changes: done.changes };
}
