// JSON API of outbound operations. The console role mounts it behind operator auth.
//   POST /api/operations/<kind>      body: the operation's input (+ optional "connection": name or id) -> 202 { operation }
//                                    (a path of its own per kind, with its own body: no path template to mistake for an id)
//   GET  /api/operations             ?connection=&kind=&state=&limit=&before=  -> { operations }
//   GET  /api/operations/:id         -> { operation } (with its plan)
//   POST /api/operations/:id/retry   -> 202 { operation }
import { noteAudit } from '../audit.ts';
import { connectionName } from '../db/connections.ts';
import type { Db } from '../db/index.ts';
import { orderRow } from '../db/mirror-reads.ts';
import { mappedOrderId } from '../db/operations.ts';
import { idOf } from '../inputs.ts';
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
/** What each kind's path does, as the document says it. */
const summaries: Record<PushKind, string> = {
  'import-order': 'Import a channel order into the service (importing it again changes nothing)',
  ship: 'Ship an order (pack lines and mark the fulfillment fulfilled), or ship a packed fulfillment',
  invoice: 'Invoice an order',
  pay: 'Pay an order (invoicing it first when it has no invoice)',
  void: 'Void an order',
  return: 'Return lines of an order',
  'receive-purchase-order': 'Receive a purchase order (whole)',
  'stock-count': 'Count stock: set on-hand quantities at locations',
};
/** The name of each kind's body in the document (invoice, pay and void take the same one). */
const bodyNames: Record<PushKind, string> = {
  'import-order': 'ImportOrderInput',
  ship: 'ShipInput',
  invoice: 'OrderActionInput',
  pay: 'OrderActionInput',
  void: 'OrderActionInput',
  return: 'ReturnInput',
  'receive-purchase-order': 'ReceivePurchaseOrderInput',
  'stock-count': 'StockCountInput',
};
/** Each kind's body: its input (./input.ts), which may name its connection too; one component per input schema. */
const named = new Map<string, z.ZodType>();
const operationBodies = Object.fromEntries(
  kinds.map((kind) => {
    const id = bodyNames[kind];
    const users = kinds.filter((k) => bodyNames[k] === id).join(', ');
    if (!named.has(id))
      named.set(id, inputSchemas[kind].safeExtend({ connection: connectionChoice }).meta({ id, description: `The input of ${users}.` }));
    return [kind, named.get(id)!];
  }),
) as Record<PushKind, z.ZodType>;
const answer = z.object({ operation: operationSchema });

const states: PushState[] = ['queued', 'sent', 'confirmed', 'failed'];

export function mountRoutes(rt: RouteDeps, router: Router): void {
  const { db } = rt.database;
  const ready = queuesOnce(rt.boss);
  const json = bodyParser({ enableTypes: ['json'], jsonLimit: '5mb', strict: true });
  const api = documented(router);

  // A kind that is none of them: 404 naming them. Mounted before the kinds' own paths (their routes are the last
  // to match, so theirs are the role, the answer check and the audit entry), it passes a known kind on.
  api.post(
    '/api/operations/:kind',
    {
      role: 'operator',
      summary: 'An operation of no known kind',
      undocumented: "the document lists each kind's own path; this answers any other word with 404",
      answers: {},
      problems: [404],
    },
    (ctx, next) => {
      const kind = ctx.params.kind!;
      if (isKind(kind)) return next();
      problem(ctx, 404, `unknown operation "${kind}": one of ${kinds.join(', ')}`);
    },
  );

  for (const kind of kinds)
    api.post(
      `/api/operations/${kind}`,
      {
        role: 'operator',
        summary: summaries[kind],
        description: `Queues ${kind} at the service; docs/push.md describes its input and its result.`,
        query: z.object({ connection: z.string().optional().describe('Connection name or id, when the body does not name it.') }),
        body: operationBodies[kind],
        answers: { 202: answer },
        problems: [400],
      },
      json,
      async (ctx) => {
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
      const id = idOf(ctx.params.id);
      const op = id === undefined ? undefined : await getOperation(db, id);
      if (!op) return problem(ctx, 404, `no operation ${ctx.params.id}`);
      ctx.body = { operation: present(op, true) };
    },
  );

  api.post(
    '/api/operations/:id/retry',
    { role: 'operator', summary: 'Retry a failed operation', answers: { 202: answer }, problems: [404, 409] },
    async (ctx) => {
      const id = idOf(ctx.params.id);
      if (id === undefined) return problem(ctx, 404, `no operation ${ctx.params.id}`);
      try {
        await ready();
        const op = await retryOperation(db, rt.boss, id);
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
