// JSON API of outbound operations. The console role mounts it behind operator auth.
//   POST /api/operations/<kind>      body: the operation's input (+ optional "connection": name or id) -> 202 { operation }
//   GET  /api/operations             ?connection=&kind=&state=&limit=&before=  -> { operations }
//   GET  /api/operations/:id         -> { operation } (with its plan)
//   POST /api/operations/:id/retry   -> 202 { operation }
import { noteAudit } from '../audit.ts';
import { connectionName } from '../db/connections.ts';
import type { Db } from '../db/index.ts';
import { orderRow } from '../db/mirror-reads.ts';
import { mappedOrderId } from '../db/operations.ts';
import { idOf, isId } from '../inputs.ts';
import type Router from '@koa/router';
import bodyParser from 'koa-bodyparser';
import type { PushKind, PushState } from '../db/schema.ts';
import { queuesOnce } from '../queue/queues.ts';
import { problem, type RouteDeps } from '../server.ts';
import { InputError, inputSchemas, isKind, kinds } from './input.ts';
import { chooseConnection, ConnectionChoiceError } from '../api/connections.ts';
import { connectionRef, enqueueOperation } from './enqueue.ts';
import { getOperation, listOperations } from '../db/operations.ts';
import { operationSchema, present, retryOperation, RetryRefused } from './store.ts';
import { z } from 'zod';
import { documented } from '../openapi/registry.ts';

/** The connection an operation is for: a name or id, in the body or the query; needed when there are several. */
const connectionChoice = z
  .union([z.string(), z.number().int()])
  .optional()
  .describe('Connection name or id (needed when there are several).');
/** Each kind's input (./input.ts), which may name its connection too. */
const operationBody = z
  .union(Object.values(inputSchemas).map((s) => s.safeExtend({ connection: connectionChoice })))
  .describe(
    "The operation's input: the schema of the kind in the path (import-order, ship, invoice, pay, void, return, receive-purchase-order, stock-count).",
  );
const answer = z.object({ operation: operationSchema });

const states: PushState[] = ['queued', 'sent', 'confirmed', 'failed'];

export function mountRoutes(rt: RouteDeps, router: Router): void {
  const { db } = rt.database;
  const ready = queuesOnce(rt.boss);
  const json = bodyParser({ enableTypes: ['json'], jsonLimit: '5mb', strict: true });
  const api = documented(router);

  api.post(
    '/api/operations/:kind',
    {
      role: 'operator',
      summary: 'Queue an operation at the service (import an order, ship, invoice, pay, void, return, receive, count stock)',
      params: { kind: kinds.join(', ') },
      query: z.object({ connection: z.string().optional().describe('Connection name or id, when the body does not name it.') }),
      body: operationBody,
      answers: { 202: answer },
      problems: [400, 404],
    },
    json,
    async (ctx) => {
      const kind = ctx.params.kind!;
      if (!isKind(kind)) return problem(ctx, 404, `unknown operation "${kind}": one of ${kinds.join(', ')}`);
      const body = ctx.request.body;
      if (!body || typeof body !== 'object' || Array.isArray(body))
        return problem(ctx, 400, "the body must be a JSON object with the operation's input");
      const { connection, ...input } = body as Record<string, unknown>;
      try {
        await ready();
        const op = await enqueueOperation(
          { db, boss: rt.boss },
          kind,
          input,
          (connection ?? ctx.query.connection) as string | number | undefined,
        );
        // The audit entry: the order as the mirror had it before (an operation on an order), and the operation.
        const orderId = await orderIdOf(db, op.connection_id, input);
        const order = orderId === undefined ? undefined : await orderRow(db, op.connection_id, orderId);
        noteAudit(ctx, {
          connection: { id: op.connection_id, name: await connectionName(db, op.connection_id) },
          target: orderId === undefined ? `operation ${op.id}` : `order ${orderId}`,
          before: order && { order: { id: order.id, order_number: order.order_number, status: order.status } },
        });
        ctx.status = 202;
        ctx.body = { operation: present(op) };
      } catch (err) {
        if (err instanceof InputError) return problem(ctx, 400, `invalid ${kind} input`, { problems: err.problems });
        if (err instanceof ConnectionChoiceError) return problem(ctx, 400, err.message);
        throw err;
      }
    },
  );

  api.get(
    '/api/operations',
    {
      role: 'viewer',
      summary: 'Operations, newest first',
      query: z.object({
        connection: z.string().optional().describe('Connection name or id.'),
        kind: z.enum(kinds).optional(),
        state: z.enum(['queued', 'sent', 'confirmed', 'failed']).optional(),
        limit: z.string().optional(),
        before: z.string().optional().describe('Operations with a smaller id (the next page).'),
      }),
      answers: { 200: z.object({ operations: z.array(operationSchema) }) },
      problems: [400, 404],
    },
    async (ctx) => {
      const q = ctx.query as Record<string, string | undefined>;
      if (q.kind && !isKind(q.kind)) return problem(ctx, 400, `kind must be one of ${kinds.join(', ')}`);
      if (q.state && !states.includes(q.state as PushState)) return problem(ctx, 400, `state must be one of ${states.join(', ')}`);
      let connectionId: number | undefined;
      if (q.connection) {
        try {
          connectionId = (await chooseConnection(db, connectionRef(q.connection))).id;
        } catch (err) {
          if (err instanceof ConnectionChoiceError) return problem(ctx, 404, err.message);
          throw err;
        }
      }
      const ops = await listOperations(db, {
        connectionId,
        kind: q.kind as PushKind | undefined,
        state: q.state as PushState | undefined,
        limit: idOf(q.limit),
        beforeId: idOf(q.before),
      });
      ctx.body = { operations: ops.map((o) => present(o)) };
    },
  );

  api.get(
    '/api/operations/:id',
    { role: 'viewer', summary: 'One operation, with its plan', answers: { 200: answer }, problems: [404] },
    async (ctx) => {
      const op = isId(ctx.params.id) ? await getOperation(db, Number(ctx.params.id)) : undefined;
      if (!op) return problem(ctx, 404, `no operation ${ctx.params.id}`);
      ctx.body = { operation: present(op, true) };
    },
  );

  api.post(
    '/api/operations/:id/retry',
    { role: 'operator', summary: 'Retry a failed operation', answers: { 202: answer }, problems: [404, 409] },
    async (ctx) => {
      if (!isId(ctx.params.id)) return problem(ctx, 404, `no operation ${ctx.params.id}`);
      try {
        await ready();
        const op = await retryOperation(db, rt.boss, Number(ctx.params.id));
        ctx.status = 202;
        ctx.body = { operation: present(op) };
      } catch (err) {
        if (err instanceof RetryRefused) return problem(ctx, /does not exist/.test(err.message) ? 404 : 409, err.message);
        throw err;
      }
    },
  );
}

/** The service order an operation's input names (by id, or by the channel order it was imported from). */
async function orderIdOf(db: Db, connectionId: number, input: Record<string, unknown>): Promise<number | undefined> {
  if (typeof input.order_id === 'number') return input.order_id;
  if (typeof input.channel === 'string' && (typeof input.channel_order_id === 'string' || typeof input.channel_order_id === 'number'))
    return mappedOrderId(db, connectionId, input.channel, String(input.channel_order_id));
  return undefined;
}
