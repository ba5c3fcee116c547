// Variants: the index, the record page, and their JSON.
import type Router from '@koa/router';
import { NOT_FOUND, notFoundPage } from '../pages/layout.ts';
import { variantIndexPage, variantPage } from '../pages/variants.ts';
import { variantsByKey } from '../../db/mirror-reads.ts';
import { variantRecord } from '../record.ts';
import { listVariants, variantFilters, variantSorts, type VariantFilter, type VariantQuery, type VariantSort } from '../variants.ts';
import { connectionNames, flatQuery, int, optionalConnection, page, pageContext, recordAt, type ConsoleDeps, type Query } from '../web.ts';
import { problem } from '../../server.ts';

const PAGE_SIZE = 50;

/** The index query from request parameters; a string when a parameter is wrong. */
function indexQuery(q: Query, connectionId: number): VariantQuery | string {
  if (q.filter && !Object.hasOwn(variantFilters, q.filter)) return `filter must be one of ${Object.keys(variantFilters).join(', ')}`;
  if (q.sort && !Object.hasOwn(variantSorts, q.sort)) return `sort must be one of ${Object.keys(variantSorts).join(', ')}`;
  if (q.threshold && !/^-?\d+(\.\d+)?$/.test(q.threshold)) return 'threshold must be a number';
  return {
    connectionId,
    search: q.q || undefined,
    filter: (q.filter || undefined) as VariantFilter | undefined,
    threshold: q.threshold || undefined,
    sort: (q.sort || undefined) as VariantSort | undefined,
    desc: q.dir === 'desc',
    page: int(q.page) ?? 1,
    pageSize: Math.min(int(q.limit) ?? PAGE_SIZE, 500),
  };
}

export function variantRoutes(r: Router, deps: ConsoleDeps): void {
  const { db } = deps;
  r.get('/variants', async (ctx) => {
    const q = flatQuery(ctx);
    // The old search form (sku= or id=): one match opens its record.
    if (q.sku || int(q.id) !== undefined) {
      const connectionId = await optionalConnection(ctx, db, q.connection);
      const found = connectionId === null ? [] : await variantsByKey(db, { connectionId, sku: q.sku || undefined, id: int(q.id) });
      if (found.length === 1) return ctx.redirect(`/variants/${encodeURIComponent(found[0]!.connection)}/${found[0]!.id}`);
      return ctx.redirect(
        `/variants?${new URLSearchParams({ ...(q.connection ? { connection: q.connection } : {}), q: q.sku || q.id || '' })}`,
      );
    }
    const connections = await connectionNames(db);
    const connection = q.connection || connections[0] || null;
    const connectionId = connection ? await optionalConnection(ctx, db, connection) : undefined;
    if (connectionId === null) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.connection), 404);
    const query = connectionId === undefined ? null : indexQuery(q, connectionId);
    if (typeof query === 'string')
      return page(
        ctx,
        variantIndexPage(pageContext(deps, ctx, { problem: query }), {
          connections,
          connection,
          query: q,
          rows: [],
          total: 0,
          page: 1,
          pageSize: PAGE_SIZE,
        }),
        400,
      );
    const { rows, total } = query ? await listVariants(db, query) : { rows: [], total: 0 };
    page(
      ctx,
      variantIndexPage(pageContext(deps, ctx), {
        connections,
        connection,
        query: q,
        rows,
        total,
        page: query?.page ?? 1,
        pageSize: query?.pageSize ?? PAGE_SIZE,
      }),
    );
  });
  r.get('/variants/:connection/:id', async (ctx) => {
    const record = await recordAt(ctx, db, variantRecord);
    if (!record) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.variant), 404);
    page(ctx, variantPage(pageContext(deps, ctx), record));
  });

  // ?connection= with sku= or id=: candidates; with neither: the index (q, filter, threshold, sort, dir, page, limit).
  r.get('/api/variants', async (ctx) => {
    const q = flatQuery(ctx);
    const connectionId = await optionalConnection(ctx, db, q.connection);
    if (connectionId === null) return;
    if (q.sku || int(q.id) !== undefined) {
      ctx.body = { variants: await variantsByKey(db, { connectionId, sku: q.sku || undefined, id: int(q.id) }) };
      return;
    }
    if (connectionId === undefined) return problem(ctx, 400, 'give sku= or id=, or connection= for the index');
    const query = indexQuery(q, connectionId);
    if (typeof query === 'string') return problem(ctx, 400, query);
    const { rows, total } = await listVariants(db, query);
    ctx.body = { variants: rows, total, page: query.page };
  });
  r.get('/api/variants/:connection/:id', async (ctx) => {
    const record = await recordAt(ctx, db, variantRecord);
    if (!record) return problem(ctx, 404, `no variant ${ctx.params.id} on connection ${ctx.params.connection}`);
    ctx.body = record;
  });
}
