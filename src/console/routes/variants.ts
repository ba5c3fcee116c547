// Variants: the index, the record page, and their JSON.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { NOT_FOUND, notFoundPage } from '../pages/layout.ts';
import { variantIndexPage, variantPage } from '../pages/variants.ts';
import { variantsByKey } from '../../db/mirror-reads.ts';
import { variantRecord, variantRecordSchema } from '../record.ts';
import {
  indexChannel,
  listVariants,
  variantFilters,
  variantSorts,
  type VariantFilter,
  type VariantQuery,
  type VariantSort,
} from '../variants.ts';
import { connectionNames, flatQuery, int, optionalConnection, page, pageContext, recordAt, type ConsoleDeps, type Query } from '../web.ts';
import { problem } from '../../server.ts';
import { z } from 'zod';
import { channelQuantitySchema } from '../../stock/variant-routes.ts';
import { decimal, documented, timestamp } from '../../openapi/registry.ts';

// The answers (src/db/mirror-reads.ts variantsByKey, ../variants.ts listVariants).
const candidate = z.object({
  connectionId: z.number().int(),
  connection: z.string(),
  id: z.number().int(),
  sku: z.string().nullable(),
  name: z.string().nullable(),
});
const indexRow = z
  .object({
    id: z.number().int(),
    sku: z.string().nullable(),
    name: z.string().nullable(),
    status: z.string().nullable(),
    composite: z.boolean(),
    quantity: decimal.nullable().describe("The index's channel's quantity."),
    tracked: z.boolean().nullable(),
    backorderable: z.boolean().nullable(),
    available: z.array(z.object({ location: z.string(), quantity: decimal })).describe('On hand less committed, per location.'),
    lastChangeAt: timestamp.nullable(),
    lastChangeCause: z.string().nullable(),
    lastChangeBefore: decimal.nullable(),
    channels: z.array(channelQuantitySchema),
  })
  .meta({ id: 'VariantIndexRow' });

const PAGE_SIZE = 50;

/** The index query from request parameters; a string when a parameter is wrong. */
function indexQuery(
  q: Query,
  connectionId: number,
  channelId: number | null,
): (VariantQuery & { page: number; pageSize: number }) | string {
  if (q.filter && !Object.hasOwn(variantFilters, q.filter)) return `filter must be one of ${Object.keys(variantFilters).join(', ')}`;
  if (q.sort && !Object.hasOwn(variantSorts, q.sort)) return `sort must be one of ${Object.keys(variantSorts).join(', ')}`;
  if (q.threshold && !/^-?\d+(\.\d+)?$/.test(q.threshold)) return 'threshold must be a number';
  return {
    connectionId,
    channelId,
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
  const api = documented(r);
  api.page.get('/variants', { role: 'viewer' }, async (ctx) => {
    const q = flatQuery(ctx);
    // A search by key (sku= or id=, which links may still carry): one match opens its record.
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
    // The channel whose quantities the index shows; a name this connection lacks (left from another connection
    // in the form) shows its default channel instead, saying so.
    let picked = connectionId === undefined ? null : await indexChannel(db, connectionId, q.channel || undefined);
    let unknownChannel: string | undefined;
    if (picked && picked.channel === undefined) {
      unknownChannel = 'That connection has no channel of that name: the index shows its default channel.';
      picked = await indexChannel(db, connectionId!, undefined);
    }
    const channel = picked?.channel ?? null;
    const input = {
      connections,
      connection,
      channels: (picked?.channels ?? []).map((c) => c.name),
      channel: channel?.name ?? null,
      // Links (sort, pages) keep the channel asked for, not one the connection lacks.
      query: unknownChannel ? { ...q, channel: '' } : q,
      pageSize: PAGE_SIZE,
    };
    const query = connectionId === undefined ? null : indexQuery(q, connectionId, channel ? channel.id : null);
    if (typeof query === 'string')
      return page(ctx, variantIndexPage(pageContext(deps, ctx, { problem: query }), { ...input, rows: [], total: 0, page: 1 }), 400);
    const { rows, total } = query ? await listVariants(db, query) : { rows: [], total: 0 };
    page(
      ctx,
      variantIndexPage(pageContext(deps, ctx, unknownChannel ? { problem: unknownChannel } : {}), {
        ...input,
        rows,
        total,
        page: query?.page ?? 1,
        pageSize: query?.pageSize ?? PAGE_SIZE,
      }),
    );
  });
  // The record a path names; ?history=CHANNEL narrows the quantity history to that channel.
  const recordOf = (ctx: Context) =>
    recordAt(ctx, db, (db, connectionId, id) =>
      variantRecord(db, connectionId, id, { historyChannel: flatQuery(ctx).history || undefined }),
    );
  api.page.get('/variants/:connection/:id', { role: 'viewer' }, async (ctx) => {
    const record = await recordOf(ctx);
    if (!record) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.variant), 404);
    page(ctx, variantPage(pageContext(deps, ctx), record));
  });

  // ?connection= with sku= or id=: candidates; with neither: the index (q, filter, threshold, sort, dir, page, limit).
  api.get(
    '/api/variants',
    {
      role: 'viewer',
      summary: "Variants: candidates for a SKU or id, or a connection's index with its channel quantities",
      query: z.object({
        connection: z.string().optional().describe('Connection name or id (required for the index).'),
        sku: z.string().optional(),
        id: z.string().optional().describe('Variant id.'),
        channel: z.string().optional().describe('The channel whose quantity `quantity` is (default: `default`, else the oldest).'),
        q: z.string().optional().describe('Search SKU and name.'),
        filter: z.enum(Object.keys(variantFilters) as [VariantFilter, ...VariantFilter[]]).optional(),
        threshold: z.string().optional().describe('The quantity `low` means (a number).'),
        sort: z.enum(Object.keys(variantSorts) as [VariantSort, ...VariantSort[]]).optional(),
        dir: z.enum(['asc', 'desc']).optional(),
        page: z.string().optional(),
        limit: z.string().optional().describe('Page size, at most 500 (default 50).'),
      }),
      answers: {
        200: z.union([
          z.object({ variants: z.array(candidate) }).describe('With sku= or id=: the variants with that key.'),
          z.object({ variants: z.array(indexRow), total: z.number().int(), page: z.number().int(), channel: z.string().nullable() }),
        ]),
      },
      problems: [400, 404],
    },
    async (ctx) => {
      const q = flatQuery(ctx);
      const connectionId = await optionalConnection(ctx, db, q.connection);
      if (connectionId === null) return;
      if (q.sku || int(q.id) !== undefined) {
        ctx.body = { variants: await variantsByKey(db, { connectionId, sku: q.sku || undefined, id: int(q.id) }) };
        return;
      }
      if (connectionId === undefined) return problem(ctx, 400, 'give sku= or id=, or connection= for the index');
      const { channels, channel } = await indexChannel(db, connectionId, q.channel || undefined);
      if (channel === undefined) return problem(ctx, 400, `channel must be one of ${channels.map((c) => c.name).join(', ')}`);
      const query = indexQuery(q, connectionId, channel ? channel.id : null);
      if (typeof query === 'string') return problem(ctx, 400, query);
      const { rows, total } = await listVariants(db, query);
      // `quantity` and the last change are the channel's; each row's `channels` has every channel's quantity.
      ctx.body = { variants: rows, total, page: query.page, channel: channel?.name ?? null };
    },
  );
  api.get(
    '/api/variants/:connection/:id',
    {
      role: 'viewer',
      summary: "A variant's record: stock per location, each channel's quantity and why, and their history",
      params: { connection: 'Connection name or id.', id: 'Variant id.' },
      query: z.object({ history: z.string().optional().describe('Narrow the quantity history to this channel.') }),
      answers: { 200: variantRecordSchema },
      problems: [404],
    },
    async (ctx) => {
      const record = await recordOf(ctx);
      if (!record) return problem(ctx, 404, `no variant ${ctx.params.id} on connection ${ctx.params.connection}`);
      ctx.body = record;
    },
  );
}
