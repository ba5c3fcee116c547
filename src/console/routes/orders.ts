// Orders: the list, an order's page, and shipping it (a ship operation through the push area's own enqueue).
import type Router from '@koa/router';
import bodyParser from 'koa-bodyparser';
import { enqueueOperation } from '../../push/enqueue.ts';
import { InputError } from '../../push/input.ts';
import { orderStatuses } from '../../db/mirror-reads.ts';
import { channelIds, searchChannelOrders } from '../channel-orders.ts';
import { importedWithin, listOrders, orderRecord, orderRecordSchema, orderRowSchema, shipChoice, type ImportedWithin } from '../orders.ts';
import { NOT_FOUND, notFoundPage } from '../pages/layout.ts';
import { orderIndexPage, orderPage } from '../pages/orders.ts';
import { connectionNames, flatQuery, int, optionalConnection, page, pageContext, recordAt, type ConsoleDeps } from '../web.ts';
import { problem } from '../../server.ts';
import { z } from 'zod';
import { documented } from '../../openapi/registry.ts';

const PAGE_SIZE = 50;

export function orderRoutes(r: Router, deps: ConsoleDeps): void {
  const { db } = deps;
  const api = documented(r);
  const form = bodyParser({ enableTypes: ['form'], formLimit: '8kb' });
  const query = (q: Record<string, string>, connectionId: number) => ({
    connectionId,
    imported: Object.hasOwn(importedWithin, q.imported ?? '') ? (q.imported as ImportedWithin) : undefined,
    status: q.status || undefined,
    search: q.q || undefined,
    page: int(q.page) ?? 1,
    pageSize: Math.min(int(q.limit) ?? PAGE_SIZE, 500),
  });
  api.page.get('/orders', { role: 'viewer' }, async (ctx) => {
    const q = flatQuery(ctx);
    const connections = await connectionNames(db);
    const connection = q.connection || connections[0] || null;
    const connectionId = connection ? await optionalConnection(ctx, db, connection) : undefined;
    if (connectionId === null) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.connection), 404);
    const oq = connectionId === undefined ? null : query(q, connectionId);
    const [{ rows, total }, statuses, channels, channelOrders] = oq
      ? await Promise.all([
          listOrders(db, oq),
          orderStatuses(db, oq.connectionId),
          channelIds(db, oq.connectionId),
          searchChannelOrders(db, oq.connectionId, oq.search),
        ])
      : [{ rows: [], total: 0 }, [], new Map<string, number>(), []];
    page(
      ctx,
      orderIndexPage(pageContext(deps, ctx), {
        connections,
        connection,
        statuses,
        query: q,
        rows,
        total,
        page: oq?.page ?? 1,
        pageSize: oq?.pageSize ?? PAGE_SIZE,
        channelIds: channels,
        channelOrders,
      }),
    );
  });
  api.page.get('/orders/:connection/:id', { role: 'viewer' }, async (ctx) => {
    const record = await recordAt(ctx, db, orderRecord);
    if (!record) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.order), 404);
    page(ctx, orderPage(pageContext(deps, ctx), record));
  });
  api.page.post('/orders/:connection/:id/ship', { role: 'operator' }, form, async (ctx) => {
    const record = await recordAt(ctx, db, orderRecord);
    if (!record) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.order), 404);
    const body = (ctx.request.body ?? {}) as Record<string, string>;
    const tracking = { company: body.tracking_company?.trim() || undefined, number: body.tracking_number?.trim() || undefined };
    // Only what the page offers for the order's state now (the mirror may have moved since the page was drawn).
    const choice = shipChoice(record);
    const fulfillmentId = int(body.fulfillment_id);
    const refused = !choice.offer
      ? choice.why
      : fulfillmentId !== undefined
        ? choice.packed.some((f) => f.id === fulfillmentId)
          ? null
          : `fulfilment ${fulfillmentId} is not a packed fulfilment of this order waiting to ship.`
        : choice.unpacked
          ? null
          : 'every line is packed already: choose the packed fulfilment to ship.';
    if (refused) return page(ctx, orderPage(pageContext(deps, ctx, { problem: `Not shipped: ${refused}` }), record), 409);
    try {
      const op = await enqueueOperation(
        { db, boss: deps.boss },
        'ship',
        {
          order_id: record.order.id,
          ...(fulfillmentId !== undefined ? { fulfillment_id: fulfillmentId } : {}),
          ...(tracking.company || tracking.number ? { tracking } : {}),
        },
        record.connection.id,
      );
      ctx.redirect(`/operations/${op.id}?queued=${op.id}`);
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      page(ctx, orderPage(pageContext(deps, ctx, { problem: `Not shipped: ${err.message}` }), record), 400);
    }
  });

  api.get(
    '/api/orders',
    {
      role: 'viewer',
      summary: "A connection's mirrored orders, newest first",
      query: z.object({
        connection: z.string().describe('Connection name or id.'),
        imported: z
          .enum(Object.keys(importedWithin) as [ImportedWithin, ...ImportedWithin[]])
          .optional()
          .describe('Only orders imported through commerce-sync (lately).'),
        status: z.string().optional(),
        q: z.string().optional().describe('Order number, channel order id or order id.'),
        page: z.string().optional(),
        limit: z.string().optional().describe('Page size, at most 500 (default 50).'),
      }),
      answers: { 200: z.object({ orders: z.array(orderRowSchema), total: z.number().int(), page: z.number().int() }) },
      problems: [400, 404],
    },
    async (ctx) => {
      const q = flatQuery(ctx);
      if (q.imported && !Object.hasOwn(importedWithin, q.imported))
        return problem(ctx, 400, `imported must be one of ${Object.keys(importedWithin).join(', ')}`);
      const connectionId = await optionalConnection(ctx, db, q.connection);
      if (connectionId === null) return;
      if (connectionId === undefined) return problem(ctx, 400, 'give connection=');
      const oq = query(q, connectionId);
      const { rows, total } = await listOrders(db, oq);
      ctx.body = { orders: rows, total, page: oq.page };
    },
  );
  api.get(
    '/api/orders/:connection/:id',
    {
      role: 'viewer',
      summary: "An order's record: lines, fulfilments, returns, the operations on it and its sync log",
      params: { connection: 'Connection name or id.', id: 'Order id.' },
      answers: { 200: orderRecordSchema },
      problems: [404],
    },
    async (ctx) => {
      const record = await recordAt(ctx, db, orderRecord);
      if (!record) return problem(ctx, 404, `no order ${ctx.params.id} on connection ${ctx.params.connection}`);
      ctx.body = record;
    },
  );
}
