// Stored deliveries and dead letters: pages, JSON, and their replays.
import type Router from '@koa/router';
import { deliveryWithConnection, listDeliveries } from '../../db/delivery-reads.ts';
import { deliveryStates } from '../deliveries.ts';
import { deadLettersPage, deliveriesPage } from '../pages/deliveries.ts';
import { NOT_FOUND, notFoundPage } from '../pages/layout.ts';
import { listDeadLetters, queueDepths } from '../../queue/depths.ts';
import { callerOf } from '../../audit.ts';
import { deadLetterReplay, deliveryReplay, ReplayError } from '../../receiver/replay.ts';
import { connectionNames, flatQuery, int, optionalConnection, page, pageContext, type ConsoleDeps } from '../web.ts';
import { problem } from '../../server.ts';
import { z } from 'zod';
import { blob, documented, timestamp } from '../../openapi/registry.ts';

// The answers, as src/db/delivery-reads.ts and src/queue/depths.ts read them.
const deliveryState = z.enum(['queued', 'processed', 'unhandled', 'rejected', 'failed']);
const deliveryFields = {
  id: z.number().int(),
  connection_id: z.number().int(),
  connection: z.string(),
  delivery_id: z.string(),
  event: z.string().nullable(),
  resource: z.string().nullable(),
  action: z.string().nullable(),
  object_id: z.number().int().nullable(),
  state: deliveryState,
  error: z.string().nullable(),
  job_id: z.string().nullable(),
  received_at: timestamp,
  processed_at: timestamp.nullable(),
};
const deliveryRow = z.object(deliveryFields).meta({ id: 'Delivery' });
const deliveryDetail = z
  .object({
    ...deliveryFields,
    event_at: timestamp.nullable(),
    resource_url: z.string().nullable(),
    body: z.string().describe('The body as received.'),
    body_digest: z.string().nullable(),
    traceparent: z.string().nullable().describe('The traceparent of the request that brought it, when traced.'),
  })
  .meta({ id: 'DeliveryDetail' });
const deadLetter = z
  .object({
    id: z.string(),
    queue: z.string(),
    liveQueue: z.string(),
    data: blob,
    error: blob,
    retries: z.number().int().nullable(),
    failedAt: timestamp,
    firstQueuedAt: timestamp.nullable(),
  })
  .meta({ id: 'DeadLetter' });

export function deliveryRoutes(r: Router, deps: ConsoleDeps): void {
  const { db, boss } = deps;
  const api = documented(r);
  api.page.get('/deliveries', { role: 'viewer' }, async (ctx) => {
    const q = flatQuery(ctx);
    const connectionId = await optionalConnection(ctx, db, q.connection);
    if (connectionId === null) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.connection), 404);
    const rows = await listDeliveries(db, {
      connectionId,
      state: (deliveryStates as readonly string[]).includes(q.state ?? '') ? q.state : undefined,
      resource: q.resource || undefined,
      before: int(q.before),
    });
    let older: string | null = null;
    if (rows.length === 100) {
      const next = new URLSearchParams(Object.entries(q).filter(([k, v]) => v && ['connection', 'state', 'resource'].includes(k)));
      next.set('before', String(rows[rows.length - 1]!.id));
      older = `/deliveries?${next}`;
    }
    page(ctx, deliveriesPage(pageContext(deps, ctx), rows, await connectionNames(db), q, older));
  });
  api.page.post('/deliveries/:id/replay', { role: 'operator' }, async (ctx) => {
    const id = int(ctx.params.id);
    const done = id === undefined ? null : await deliveryReplay({ db, boss }, callerOf(ctx), id);
    ctx.redirect(done ? `/deliveries?replayed=${id}` : '/deliveries?missing=1');
  });
  api.page.get('/dead-letters', { role: 'viewer' }, async (ctx) => {
    const q = flatQuery(ctx);
    const [letters, queues] = await Promise.all([listDeadLetters(db, { queue: q.queue || undefined }), queueDepths(db)]);
    page(
      ctx,
      deadLettersPage(
        pageContext(deps, ctx),
        letters,
        queues.filter((x) => x.queue.endsWith('-dead')),
      ),
    );
  });
  api.page.post('/dead-letters/:queue/:id/replay', { role: 'operator' }, async (ctx) => {
    try {
      const done = await deadLetterReplay({ db, boss }, callerOf(ctx), ctx.params.queue!, ctx.params.id!);
      ctx.redirect(done ? `/dead-letters?replayed=${encodeURIComponent(ctx.params.id!)}` : '/dead-letters?missing=1');
    } catch (err) {
      if (!(err instanceof ReplayError)) throw err;
      ctx.redirect('/dead-letters?missing=1');
    }
  });

  api.get(
    '/api/deliveries',
    {
      role: 'viewer',
      summary: 'Stored webhook deliveries, newest first',
      query: z.object({
        connection: z.string().optional().describe('Connection name or id.'),
        state: deliveryState.optional(),
        resource: z.string().optional(),
        object: z.string().optional().describe('Object id.'),
        before: z.string().optional().describe('Deliveries with a smaller id (the next page).'),
        limit: z.string().optional().describe('1 to 1000 (default 100).'),
      }),
      answers: { 200: z.object({ deliveries: z.array(deliveryRow) }) },
      problems: [400, 404],
    },
    async (ctx) => {
      const q = flatQuery(ctx);
      if (q.state && !(deliveryStates as readonly string[]).includes(q.state))
        return problem(ctx, 400, `state must be one of ${deliveryStates.join(', ')}`);
      const connectionId = await optionalConnection(ctx, db, q.connection);
      if (connectionId === null) return;
      ctx.body = {
        deliveries: await listDeliveries(db, {
          connectionId,
          state: q.state || undefined,
          resource: q.resource || undefined,
          objectId: int(q.object),
          before: int(q.before),
          limit: int(q.limit),
        }),
      };
    },
  );
  api.get(
    '/api/deliveries/:id',
    { role: 'viewer', summary: 'One delivery, with its body', answers: { 200: z.object({ delivery: deliveryDetail }) }, problems: [404] },
    async (ctx) => {
      const id = int(ctx.params.id);
      const row = id === undefined ? undefined : await deliveryWithConnection(db, id);
      if (!row) return problem(ctx, 404, `no delivery ${ctx.params.id}`);
      ctx.body = { delivery: row };
    },
  );
  api.post(
    '/api/deliveries/:id/replay',
    {
      role: 'operator',
      summary: 'Queue a delivery again',
      answers: { 202: z.object({ replayed: z.object({ delivery: z.number().int(), jobId: z.string() }) }) },
      problems: [404],
    },
    async (ctx) => {
      const id = int(ctx.params.id);
      const done = id === undefined ? null : await deliveryReplay({ db, boss }, callerOf(ctx), id);
      if (id === undefined || !done) return problem(ctx, 404, `no delivery ${ctx.params.id}`);
      ctx.status = 202;
      ctx.body = { replayed: { delivery: id, jobId: done.jobId } };
    },
  );
  api.get(
    '/api/dead-letters',
    {
      role: 'viewer',
      summary: 'Jobs waiting in the dead-letter queues, newest first',
      query: z.object({
        queue: z.string().optional().describe('A queue (or its dead-letter queue).'),
        connection: z.string().optional().describe('Connection name or id.'),
        limit: z.string().optional().describe('1 to 1000 (default 100).'),
      }),
      answers: { 200: z.object({ deadLetters: z.array(deadLetter) }) },
      problems: [404],
    },
    async (ctx) => {
      const q = flatQuery(ctx);
      const connectionId = await optionalConnection(ctx, db, q.connection);
      if (connectionId === null) return;
      ctx.body = { deadLetters: await listDeadLetters(db, { queue: q.queue || undefined, connectionId, limit: int(q.limit) }) };
    },
  );
  api.post(
    '/api/dead-letters/:queue/:id/replay',
    {
      role: 'operator',
      summary: 'Send a dead letter back to its queue',
      answers: { 202: z.object({ replayed: z.object({ deadLetter: z.string(), queue: z.string(), jobId: z.string() }) }) },
      problems: [400, 404],
    },
    async (ctx) => {
      try {
        const done = await deadLetterReplay({ db, boss }, callerOf(ctx), ctx.params.queue!, ctx.params.id!);
        if (!done) return problem(ctx, 404, `no dead letter ${ctx.params.id} waiting in ${ctx.params.queue}`);
        ctx.status = 202;
        ctx.body = { replayed: { deadLetter: ctx.params.id, queue: ctx.params.queue, jobId: done.jobId } };
      } catch (err) {
        if (err instanceof ReplayError) return problem(ctx, 400, err.message);
        throw err;
      }
    },
  );
}
