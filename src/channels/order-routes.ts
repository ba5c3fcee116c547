// The channel JSON API of channel orders (docs/channels.md), mounted with the rest of it (routes.ts):
//   GET    /api/channels/:name/holds[?state=active|ended|all][&limit=N]
//   POST   /api/channels/:name/holds           {channel_order_id, lines: [{sku, quantity}]}  (once per channel order)
//   DELETE /api/channels/:name/holds/:channel_order_id
//   GET    /api/channels/:name/order-events?since=CURSOR[&limit=N]           what happens to its orders at the service
//   GET    /api/channels/:name/orders/:channel_order_id                      one order, its hold, operations and events
//   POST   /api/channels/:name/orders/:channel_order_id/cancel               void it when imported, else end its hold
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { listHolds, type HoldState } from '../db/holds.ts';
import { isId } from '../inputs.ts';
import { blob, decimal, documented, timestamp } from '../openapi/registry.ts';
import { operationSchema } from '../push/store.ts';
import { problem, type RouteDeps } from '../server.ts';
import { parseInput } from './channels.ts';
import { cancelHold, createHold, holdInput, holdSchema, presentHold } from './holds.ts';
import { orderEventsFeed } from './order-feed.ts';
import { cancelChannelOrder, channelOrderView } from './orders.ts';
import { answering, body, type ChannelRouting, channelParams, connectionQuery, feedParams, feedQuery, query } from './requests.ts';

// The answers, as order-feed.ts and orders.ts build them.
const orderEvent = z.object({
  id: z.number().int(),
  type: z.string(),
  channel_order_id: z.string(),
  order_id: z.number().int().nullable(),
  order_number: z.string().nullable(),
  at: timestamp,
  data: blob.describe("The event's particulars (docs/channels.md)."),
});
const serviceTime = z.string().nullable();
const factLines = z.array(z.object({ sku: z.string().nullable(), quantity: decimal, order_line_item_id: z.number().int().nullable() }));
const channelOrderAnswer = z.object({
  channel: z.string(),
  channel_order_id: z.string(),
  order_id: z.number().int().nullable(),
  order: z
    .object({
      order_id: z.number().int(),
      order_number: z.string().nullable(),
      status: z.string().nullable(),
      payment_status: z.string().nullable(),
      invoice_status: z.string().nullable(),
      invoice_numbers: z.record(z.string(), z.unknown()).nullable().describe('Invoice id to number, as the order carries them.'),
      created_at: timestamp.nullable(),
      updated_at: timestamp.nullable(),
    })
    .nullable(),
  fulfillments: z.array(
    z.object({
      id: z.number().int(),
      status: z.string().nullable(),
      packed_at: serviceTime,
      shipped_at: serviceTime,
      created_at: serviceTime,
      updated_at: serviceTime,
      stock_location_id: z.number().int().nullable(),
      tracking_company: z.string().nullable(),
      tracking_number: z.string().nullable(),
      tracking_url: z.string().nullable(),
      lines: factLines,
    }),
  ),
  returns: z.array(
    z.object({
      id: z.number().int(),
      status: z.string().nullable(),
      credit_note_number: z.string().nullable(),
      location_id: z.number().int().nullable(),
      created_at: serviceTime,
      received_at: serviceTime,
      lines: factLines,
    }),
  ),
  hold: holdSchema.nullable(),
  operations: z.array(operationSchema),
  events: z.array(
    orderEvent.extend({
      sent: z.boolean().describe('Whether the destination acknowledged it.'),
      post: z.object({ webhook_id: z.string(), at: timestamp, status: z.number().int().nullable() }).nullable(),
    }),
  ),
});

const STATES: HoldState[] = ['active', 'ended', 'all'];
const holdAnswer = z.object({ hold: holdSchema, created: z.boolean(), changes: z.number().int() });

export function mountOrderRoutes(rt: RouteDeps, router: Router, routing: ChannelRouting): void {
  const { db } = rt.database;
  const { announce, channel, json, ready } = routing;
  const api = documented(router);

  api.get(
    '/api/channels/:name/holds',
    {
      role: 'viewer',
      summary: "A channel's holds, newest first",
      params: channelParams,
      query: connectionQuery.extend({
        state: z.enum(['active', 'ended', 'all']).optional().describe('Default active.'),
        limit: z.string().optional().describe('1 to 1000 (default 100).'),
      }),
      answers: { 200: z.object({ holds: z.array(holdSchema) }) },
      problems: [400, 404],
    },
    (ctx) =>
      answering(ctx, async () => {
        const state = (query(ctx, 'state') ?? 'active') as HoldState;
        const limit = query(ctx, 'limit') ?? '100';
        if (!STATES.includes(state) || !isId(limit) || Number(limit) < 1 || Number(limit) > 1000)
          return problem(ctx, 400, 'state must be active, ended or all, and limit an integer from 1 to 1000');
        const ch = await channel(ctx);
        const holds = await listHolds(db, { connectionId: ch.connection_id, channel: ch.name, state, limit: Number(limit) });
        ctx.body = { holds: holds.map(presentHold) };
      }),
  );

  api.post(
    '/api/channels/:name/holds',
    {
      role: 'operator',
      summary: 'Hold stock for a channel order (once per channel order: the same lines again answer the hold)',
      params: channelParams,
      query: connectionQuery,
      body: holdInput,
      answers: { 201: holdAnswer.describe('Made.'), 200: holdAnswer.describe('The hold made before for this channel order.') },
      problems: [400, 404, 409],
    },
    json,
    (ctx) =>
      answering(ctx, async () => {
        const ch = await channel(ctx);
        const input = parseInput(holdInput, body(ctx));
        const made = await createHold(db, rt.config, { connectionId: ch.connection_id, channel: ch.name, source: 'api', input });
        await announce(made.changes);
        const [hold] = await listHolds(db, { ids: [made.hold.id], state: 'all' });
        ctx.status = made.created ? 201 : 200;
        ctx.body = { hold: presentHold(hold!), created: made.created, changes: made.changes.length };
      }),
  );

  api.delete(
    '/api/channels/:name/holds/:order',
    {
      role: 'operator',
      summary: "End a channel order's hold",
      params: { ...channelParams, order: 'The channel order id.' },
      query: connectionQuery,
      answers: { 200: z.object({ hold: holdSchema, ended: z.boolean(), changes: z.number().int() }) },
      problems: [400, 404],
    },
    (ctx) =>
      answering(ctx, async () => {
        const ch = await channel(ctx);
        const done = await cancelHold(db, { connectionId: ch.connection_id, channel: ch.name, channelOrderId: ctx.params.order! });
        if (!done) return problem(ctx, 404, `no hold for channel order ${ch.name}/${ctx.params.order}`);
        await announce(done.changes);
        const [hold] = await listHolds(db, { ids: [done.hold.id], state: 'all' });
        ctx.body = { hold: presentHold(hold!), ended: done.ended, changes: done.changes.length };
      }),
  );

  // What happens to the channel's orders at the service: the feed, one order, and its cancel (docs/channels.md).
  api.get(
    '/api/channels/:name/order-events',
    {
      role: 'viewer',
      summary: "What happens to a channel's orders at the service, after a cursor",
      params: channelParams,
      query: connectionQuery.extend(feedQuery.shape),
      answers: {
        200: z.object({
          events: z.array(orderEvent),
          cursor: z.number().int().describe('Ask again with since=cursor.'),
          has_more: z.boolean(),
        }),
      },
      problems: [400, 404, 410],
    },
    (ctx) =>
      answering(ctx, async () => {
        const ch = await channel(ctx);
        const p = feedParams(ctx);
        if (!p) return;
        const page = await orderEventsFeed(db, { ...p, channelId: ch.id });
        if ('expired' in page)
          return problem(
            ctx,
            410,
            `cursor ${page.since} is older than the order events kept: events up to ${page.kept_after} were deleted after ` +
              'CHANNEL_CHANGE_RETENTION_DAYS. Read the orders you follow (GET /api/channels/NAME/orders/ID), then follow this feed from since=kept_after.',
            { since: page.since, kept_after: page.kept_after },
          );
        ctx.body = page;
      }),
  );

  const orderRef = async (ctx: Context) => {
    const ch = await channel(ctx);
    return { connectionId: ch.connection_id, channelId: ch.id, channel: ch.name, channelOrderId: ctx.params.order! };
  };

  api.get(
    '/api/channels/:name/orders/:order',
    {
      role: 'viewer',
      summary: 'A channel order: the order at the service, its hold, operations and events',
      params: { ...channelParams, order: 'The channel order id.' },
      query: connectionQuery,
      answers: { 200: z.object({ order: channelOrderAnswer }) },
      problems: [400, 404],
    },
    (ctx) =>
      answering(ctx, async () => {
        const ref = await orderRef(ctx);
        const view = await channelOrderView(db, ref);
        if (!view) return problem(ctx, 404, `channel ${ref.channel} has no order ${ref.channelOrderId} (not imported, held or told of)`);
        ctx.body = { order: view };
      }),
  );

  api.post(
    '/api/channels/:name/orders/:order/cancel',
    {
      role: 'operator',
      summary: 'Cancel a channel order: void it at the service when imported, else end its hold',
      params: { ...channelParams, order: 'The channel order id.' },
      query: connectionQuery,
      answers: {
        200: z.union([
          z.object({ cancelled: z.literal('hold'), hold: holdSchema, ended: z.boolean() }),
          z
            .object({ cancelled: z.literal('order'), operation: operationSchema, created: z.literal(false) })
            .describe('The void asked before.'),
        ]),
        202: z.object({ cancelled: z.literal('order'), operation: operationSchema, created: z.literal(true) }).describe('A void queued.'),
      },
      problems: [400, 404, 409],
    },
    (ctx) =>
      answering(ctx, async () => {
        const ref = await orderRef(ctx);
        await ready();
        const done = await cancelChannelOrder(db, rt.boss, ref);
        if (!done) return problem(ctx, 404, `channel ${ref.channel} has no order ${ref.channelOrderId} (not imported, nor held)`);
        if (done.kind === 'hold') {
          await announce(done.changes);
          ctx.body = { cancelled: 'hold', hold: done.hold, ended: done.ended };
        } else {
          ctx.status = done.created ? 202 : 200;
          ctx.body = { cancelled: 'order', operation: done.operation, created: done.created };
        }
      }),
  );
}
