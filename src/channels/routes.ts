// The channel JSON API, mounted by the console role behind operator auth (docs/channels.md):
//   GET    /api/channel-stock?since=CURSOR[&limit=N][&connection=NAME]   every channel's changes after the cursor
//   GET    /api/channels[?connection=NAME]                                  channels with their rules
//   POST   /api/channels                       {connection?, name, locations?, buffer_units?, buffer_percent?, cap_max_online?}
//   GET    /api/channels/:name                 the channel and its overrides
//   PATCH  /api/channels/:name                 {locations?, buffer_units?, buffer_percent?, cap_max_online?}
//   DELETE /api/channels/:name
//   PUT    /api/channels/:name/overrides/:sku  {mode: exclude|zero|fixed|buffer, quantity?, buffer_units?, buffer_percent?}
//   DELETE /api/channels/:name/overrides/:sku
//   GET|PUT|DELETE /api/channels/:name/destination, POST /api/channels/:name/destination/pause|resume
//   GET    /api/channels/:name/stock?since=CURSOR[&limit=N]                  one channel's changes after the cursor
// and, from destination-routes.ts and order-routes.ts, its destination and its holds and orders. A channel name that exists on several connections needs
// ?connection=NAME (400 otherwise). The feeds answer {changes, next, has_more}, and 410 when changes after the
// cursor were deleted by retention. A variant's quantity in each channel: src/stock/variant-routes.ts.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import type { ClientState } from '../api/client-state.ts';
import { chooseConnection } from '../api/connections.ts';
import { callerOf } from '../audit.ts';
import { listChannels, listOverrides, OVERRIDES_PAGE } from '../db/channels.ts';
import { connectionByName } from '../db/connections.ts';
import type { Db } from '../db/index.ts';
import { isId } from '../inputs.ts';
import { type Answer, decimal, documented, timestamp } from '../openapi/registry.ts';
import { problem, type RouteDeps } from '../server.ts';
import {
  ChannelChoiceError,
  ChannelInputError,
  channelChange,
  channelSchema,
  newChannelInput,
  overrideInput,
  overrideSchema,
  presentChannel,
  presentOverride,
} from './channels.ts';
import { channelFeed, type FeedExpired, type FeedPage } from './feed.ts';
import { mountDestinationRoutes } from './destination-routes.ts';
import { mountOrderRoutes } from './order-routes.ts';
import { channelAdd, channelRemove, channelUpdate, overrideRemove, overrideSet } from './operations.ts';
import { answering, body, channelParams, channelRouting, connectionQuery, feedParams, feedQuery, query } from './requests.ts';

// The answers, as feed.ts and src/db/channels.ts build them.
const feedPage = z
  .object({
    changes: z.array(
      z.object({
        id: z.number().int(),
        at: timestamp,
        connection: z.string(),
        connection_id: z.number().int(),
        channel_id: z.number().int(),
        channel: z.string(),
        variant_id: z.number().int(),
        sku: z.string().nullable(),
        quantity: decimal.nullable(),
        tracked: z.boolean(),
        backorderable: z.boolean(),
        listed: z.boolean(),
        before_quantity: decimal.nullable(),
        cause: z.string(),
        delivery_id: z.string().nullable(),
      }),
    ),
    next: z.number().int().describe('The cursor to ask after next (`since`).'),
    has_more: z.boolean(),
  })
  .meta({ id: 'StockFeedPage' });

function answerFeed(ctx: Context & { body: Answer<typeof feedPage> }, page: FeedPage | FeedExpired): void {
  if ('expired' in page) {
    // 410: the changes between the cursor and kept_after are gone for good; going on from the cursor would skip them.
    problem(
      ctx,
      410,
      `cursor ${page.since} is older than the changes kept: changes up to ${page.kept_after} were deleted after ` +
        'CHANNEL_CHANGE_RETENTION_DAYS. Read every current quantity (GET /api/variants?connection=NAME, or ' +
        '`commerce-sync stock`), then follow this feed from since=kept_after.',
      { since: page.since, kept_after: page.kept_after },
    );
    return;
  }
  ctx.body = page;
}

/**
 * A page of a channel's overrides: ?after=SKU&limit=N (at most OVERRIDES_PAGE), with `next` the SKU to ask after
 * for the next page (null on the last).
 */
async function overridesPage(db: Db, channelId: number, ctx: Context) {
  const after = query(ctx, 'after') ?? undefined;
  const limitRaw = query(ctx, 'limit');
  if (limitRaw !== null && (!isId(limitRaw) || Number(limitRaw) < 1 || Number(limitRaw) > OVERRIDES_PAGE))
    throw new ChannelInputError([`limit: a whole number from 1 to ${OVERRIDES_PAGE} (got ${JSON.stringify(limitRaw)})`]);
  const limit = limitRaw === null ? OVERRIDES_PAGE : Number(limitRaw);
  const rows = await listOverrides(db, channelId, { after, limit: limit + 1 });
  const page = rows.slice(0, limit);
  return { overrides: page.map(presentOverride), next: rows.length > limit ? page[page.length - 1]!.sku : null };
}

const recomputed = z.object({ changes: z.number().int(), ms: z.number().int() }).describe('The recomputation it called for.');
const overridesQuery = {
  after: z.string().optional().describe('The SKU to list after (the next page).'),
  limit: z.string().optional().describe(`1 to ${OVERRIDES_PAGE} (the default).`),
};
const overridesPageFields = {
  overrides: z.array(overrideSchema),
  next: z.string().nullable().describe('The SKU to ask after for the next page (null on the last).'),
};

export function mountRoutes(rt: RouteDeps & { clients: ClientState }, router: Router): void {
  const { db } = rt.database;
  const routing = channelRouting(rt);
  const { channel, json } = routing;
  const ops = { db, boss: rt.boss, config: rt.config };
  const api = documented(router);

  api.get(
    '/api/channel-stock',
    {
      role: 'viewer',
      summary: "Every channel's quantity changes after a cursor",
      query: feedQuery.extend({ connection: z.string().optional().describe("Only this connection's channels.") }),
      answers: { 200: feedPage },
      problems: [400, 410],
    },
    async (ctx) => {
      const p = feedParams(ctx);
      if (p) answerFeed(ctx, await channelFeed(db, { ...p, connection: query(ctx, 'connection') }));
    },
  );

  api.get(
    '/api/channels',
    {
      role: 'viewer',
      summary: 'Channels with their rules',
      query: z.object({ connection: z.string().optional().describe('Connection name.') }),
      answers: { 200: z.object({ channels: z.array(channelSchema) }) },
      problems: [404],
    },
    (ctx) =>
      answering(ctx, async () => {
        const name = query(ctx, 'connection');
        const c = name ? await connectionByName(db, name) : undefined;
        if (name && !c) throw new ChannelChoiceError(404, `no connection "${name}"`);
        ctx.body = { channels: (await listChannels(db, { connectionId: c ? c.id : undefined })).map(presentChannel) };
      }),
  );

  api.post(
    '/api/channels',
    {
      role: 'admin',
      summary: 'Add a channel to a connection and compute its quantity of every variant',
      query: connectionQuery,
      body: newChannelInput.extend({ connection: z.string().optional().describe('Connection name (needed when there are several).') }),
      answers: { 201: z.object({ channel: channelSchema, recomputed: recomputed }) },
      problems: [400, 404, 409],
    },
    json,
    (ctx) =>
      answering(ctx, async () => {
        const { connection, ...input } = body(ctx);
        const c = await chooseConnection(db, (connection as string | undefined) ?? query(ctx, 'connection'));
        await routing.ready();
        const made = await channelAdd(ops, callerOf(ctx), c, input);
        ctx.status = 201;
        ctx.body = made;
      }),
  );

  api.get(
    '/api/channels/:name',
    {
      role: 'viewer',
      summary: 'A channel and a page of its overrides',
      params: channelParams,
      query: connectionQuery.extend(overridesQuery),
      answers: { 200: z.object({ channel: channelSchema, ...overridesPageFields }) },
      problems: [400, 404],
    },
    (ctx) =>
      answering(ctx, async () => {
        const ch = await channel(ctx);
        ctx.body = { channel: presentChannel(ch), ...(await overridesPage(db, ch.id, ctx)) };
      }),
  );

  api.patch(
    '/api/channels/:name',
    {
      role: 'admin',
      summary: "Change a channel's rules (its quantities are computed again)",
      params: channelParams,
      query: connectionQuery,
      body: channelChange,
      answers: { 200: z.object({ channel: channelSchema, recomputed: recomputed }) },
      problems: [400, 404],
    },
    json,
    (ctx) =>
      answering(ctx, async () => {
        await routing.ready();
        ctx.body = await channelUpdate(ops, callerOf(ctx), await channel(ctx), body(ctx));
      }),
  );

  api.delete(
    '/api/channels/:name',
    {
      role: 'admin',
      summary: 'Remove a channel with its quantities, history and overrides',
      params: channelParams,
      query: connectionQuery,
      answers: { 200: z.object({ removed: channelSchema }) },
      problems: [400, 404, 409],
    },
    (ctx) =>
      answering(ctx, async () => {
        ctx.body = await channelRemove(ops, callerOf(ctx), await channel(ctx));
      }),
  );

  api.get(
    '/api/channels/:name/overrides',
    {
      role: 'viewer',
      summary: "A page of a channel's overrides",
      params: channelParams,
      query: connectionQuery.extend(overridesQuery),
      answers: { 200: z.object(overridesPageFields) },
      problems: [400, 404],
    },
    (ctx) =>
      answering(ctx, async () => {
        ctx.body = await overridesPage(db, Number((await channel(ctx)).id), ctx);
      }),
  );

  api.put(
    '/api/channels/:name/overrides/:sku',
    {
      role: 'admin',
      summary: "Set a channel's override of a SKU",
      params: { ...channelParams, sku: 'The SKU.' },
      query: connectionQuery,
      body: overrideInput,
      answers: { 200: z.object({ override: overrideSchema, changes: z.number().int().describe('Quantities it changed.') }) },
      problems: [400, 404],
    },
    json,
    (ctx) =>
      answering(ctx, async () => {
        await routing.ready();
        ctx.body = await overrideSet(ops, callerOf(ctx), await channel(ctx), ctx.params.sku!, body(ctx));
      }),
  );

  api.delete(
    '/api/channels/:name/overrides/:sku',
    {
      role: 'admin',
      summary: "Remove a channel's override of a SKU",
      params: { ...channelParams, sku: 'The SKU.' },
      query: connectionQuery,
      answers: { 200: z.object({ removed: z.string(), changes: z.number().int() }) },
      problems: [400, 404],
    },
    (ctx) =>
      answering(ctx, async () => {
        await routing.ready();
        ctx.body = await overrideRemove(ops, callerOf(ctx), await channel(ctx), ctx.params.sku!);
      }),
  );

  api.get(
    '/api/channels/:name/stock',
    {
      role: 'viewer',
      summary: "One channel's quantity changes after a cursor",
      params: channelParams,
      query: connectionQuery.extend(feedQuery.shape),
      answers: { 200: feedPage },
      problems: [400, 404, 410],
    },
    (ctx) =>
      answering(ctx, async () => {
        const ch = await channel(ctx);
        const p = feedParams(ctx);
        if (p) answerFeed(ctx, await channelFeed(db, { ...p, channelId: ch.id }));
      }),
  );

  mountDestinationRoutes(rt, router, routing);
  mountOrderRoutes(rt, router, routing);
}
