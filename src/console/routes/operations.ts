// Push operations: the filterable list, an operation's page, and retry (the push area's own retryOperation;
// its JSON API lives in src/push/routes.ts).
import type Router from '@koa/router';
import type { PushKind, PushState } from '../../db/schema.ts';
import { kinds } from '../../push/input.ts';
import { connectionNamesById } from '../../db/connections.ts';
import { getOperation, listOperations } from '../../db/operations.ts';
import { retryOperation, RetryRefused } from '../../push/store.ts';
import { queuesOnce } from '../../queue/queues.ts';
import { NOT_FOUND, notFoundPage } from '../pages/layout.ts';
import { operationIndexPage, operationPage } from '../pages/operations.ts';
import { querySyncLog } from '../synclog.ts';
import { connectionNames, flatQuery, int, optionalConnection, page, pageContext, type ConsoleDeps } from '../web.ts';
import { documented } from '../../openapi/registry.ts';

const states: readonly PushState[] = ['queued', 'sent', 'confirmed', 'failed'];
const PAGE_SIZE = 50;

export function operationRoutes(r: Router, deps: ConsoleDeps): void {
  const { db, boss } = deps;
  const ready = queuesOnce(boss);
  const names = () => connectionNamesById(db);
  const pages = documented(r).page;

  pages.get('/operations', { role: 'viewer' }, async (ctx) => {
    const q = flatQuery(ctx);
    const connectionId = await optionalConnection(ctx, db, q.connection);
    if (connectionId === null) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.connection), 404);
    const ops = await listOperations(db, {
      connectionId,
      kind: (kinds as readonly string[]).includes(q.kind ?? '') ? (q.kind as PushKind) : undefined,
      state: (states as readonly string[]).includes(q.state ?? '') ? (q.state as PushState) : undefined,
      beforeId: int(q.before),
      limit: PAGE_SIZE,
    });
    const byId = await names();
    const last = ops[ops.length - 1];
    const older =
      ops.length === PAGE_SIZE && last
        ? `/operations?${new URLSearchParams({ ...Object.fromEntries(Object.entries(q).filter(([k, v]) => v && k !== 'before')), before: String(last.id) })}`
        : null;
    page(
      ctx,
      operationIndexPage(pageContext(deps, ctx), {
        connections: await connectionNames(db),
        kinds,
        states,
        query: q,
        older,
        rows: ops.map((op) => ({ ...op, connection: byId.get(op.connection_id) ?? String(op.connection_id) })),
      }),
    );
  });
  pages.get('/operations/:id', { role: 'viewer' }, async (ctx) => {
    const id = int(ctx.params.id);
    const op = id === undefined ? undefined : await getOperation(db, id);
    if (!op) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.operation), 404);
    const log = await querySyncLog(db, { connectionId: op.connection_id, resource: 'operation', recordId: op.id, limit: 200 });
    page(
      ctx,
      operationPage(pageContext(deps, ctx), { ...op, connection: (await names()).get(op.connection_id) ?? String(op.connection_id) }, log),
    );
  });
  pages.post('/operations/:id/retry', { role: 'operator' }, async (ctx) => {
    const id = int(ctx.params.id);
    if (id === undefined) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.operation), 404);
    try {
      await ready();
      await retryOperation(db, boss, id);
      ctx.redirect(`/operations/${id}?retried=${id}`);
    } catch (err) {
      if (!(err instanceof RetryRefused)) throw err;
      const op = await getOperation(db, id);
      if (!op) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.operation), 404);
      const log = await querySyncLog(db, { connectionId: op.connection_id, resource: 'operation', recordId: op.id, limit: 200 });
      page(
        ctx,
        operationPage(
          pageContext(deps, ctx, { problem: `Not retried: ${err.message}.` }),
          { ...op, connection: (await names()).get(op.connection_id) ?? '' },
          log,
        ),
        409,
      );
    }
  });
}
