// A channel order's page and its Cancel (cancelChannelOrder, the same as POST /api/channels/:name/orders/:id/cancel
// in src/channels/order-routes.ts): a void at the service when imported and nothing shipped, the end of its hold when not.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { announceChanges } from '../../channels/dispatch.ts';
import { CancelRefused, cancelChannelOrder } from '../../channels/orders.ts';
import { queuesOnce } from '../../queue/queues.ts';
import { channelAt, channelOrderPage, channelOrderPath } from '../channel-orders.ts';
import { channelOrderPageHtml } from '../pages/channel-orders.ts';
import { NOT_FOUND, notFoundPage } from '../pages/layout.ts';
import { int, page, pageContext, type ConsoleDeps } from '../web.ts';
import { documented } from '../../openapi/registry.ts';

export function channelOrderRoutes(r: Router, deps: ConsoleDeps): void {
  const { db, boss, log } = deps;
  const ready = queuesOnce(boss);
  const pages = documented(r).page;
  /** The channel id and channel order id of the path; undefined when malformed. */
  const params = (ctx: Context) => {
    const channelId = int(ctx.params.id);
    const order = ctx.params.order ?? '';
    return channelId === undefined || !order || order.length > 200 ? undefined : { channelId, order };
  };

  pages.get('/channels/:id/orders/:order', { role: 'viewer' }, async (ctx) => {
    const at = params(ctx);
    const p = at && (await channelOrderPage(db, at.channelId, at.order));
    if (!p) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.channelOrder), 404);
    page(ctx, channelOrderPageHtml(pageContext(deps, ctx), p));
  });

  pages.post('/channels/:id/orders/:order/cancel', { role: 'operator' }, async (ctx) => {
    const at = params(ctx);
    const channel = at && (await channelAt(db, at.channelId));
    if (!at || !channel) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.channelOrder), 404);
    const ref = { ...channel, channelOrderId: at.order };
    const path = channelOrderPath(at.channelId, at.order);
    try {
      await ready();
      const done = await cancelChannelOrder(db, boss, ref);
      if (!done) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.channelOrder), 404);
      log.info(
        { connection: channel.connection, channel: channel.channel, channel_order_id: at.order, cancelled: done.kind },
        'channel order cancelled from the console',
      );
      if (done.kind === 'hold') {
        // The hold's units count again: the channels' senders are told at once (else the maintenance minute finds them).
        await announceChanges(deps, done.changes).catch((err) =>
          log.warn({ err, channel: channel.channel }, 'hold cancelled, but requesting the deliveries failed'),
        );
        return ctx.redirect(`${path}?unheld=1`);
      }
      ctx.redirect(`${path}?voiding=${done.operation.id}`);
    } catch (err) {
      if (!(err instanceof CancelRefused)) throw err;
      const p = await channelOrderPage(db, at.channelId, at.order);
      if (!p) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.channelOrder), 404);
      page(ctx, channelOrderPageHtml(pageContext(deps, ctx, { problem: `Not cancelled: ${err.message}.` }), p), 409);
    }
  });
}
