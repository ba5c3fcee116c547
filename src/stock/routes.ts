// The stock JSON API, mounted by the console role behind operator auth (docs/channels.md):
//   GET    /api/channel-stock?since=CURSOR[&limit=N][&connection=NAME]   every channel's changes after the cursor
//   GET    /api/channels[?connection=NAME]                                  channels with their rules
//   POST   /api/channels                       {connection?, name, locations?, buffer_units?, buffer_percent?, cap_max_online?}
//   GET    /api/channels/:name                 the channel and its overrides
//   PATCH  /api/channels/:name                 {locations?, buffer_units?, buffer_percent?, cap_max_online?}
//   DELETE /api/channels/:name
//   PUT    /api/channels/:name/overrides/:sku  {mode: exclude|zero|fixed|buffer, quantity?, buffer_units?, buffer_percent?}
//   DELETE /api/channels/:name/overrides/:sku
//   GET    /api/channels/:name/holds[?state=active|ended|all][&limit=N]
//   POST   /api/channels/:name/holds           {channel_order_id, lines: [{sku, quantity}]}  (once per channel order)
//   DELETE /api/channels/:name/holds/:channel_order_id
//   GET    /api/channels/:name/stock?since=CURSOR[&limit=N]                  one channel's changes after the cursor
//   GET    /api/variants/:connection/:id/channels                            a variant's quantity in each channel, and why
// A channel name that exists on several connections needs ?connection=NAME (400 otherwise). The feeds answer
// {changes, next, has_more}, and 410 when changes after the cursor were deleted by retention.
import { isId, note } from '../inputs.ts';
import { noteAudit } from '../audit.ts';

/** As the console's form allows. */
const PAUSE_REASON_LENGTH = 200;
import type Router from '@koa/router';
import type { Context } from 'koa';
import bodyParser from 'koa-bodyparser';
import { listChannels, listOverrides, OVERRIDES_PAGE, quantitiesOf, type Channel } from '../db/channels.ts';
import type { Db } from '../db/index.ts';
import { listHolds, type HoldState } from '../db/holds.ts';
import { OperationFailed } from '../push/errors.ts';
import type { Runtime } from '../runtime.ts';
import { problem } from '../server.ts';
import {
  addChannel,
  ChannelChoiceError,
  ChannelInputError,
  changeChannel,
  channelChange,
  channelQuantitySchema,
  channelSchema,
  findChannel,
  newChannelInput,
  overrideInput,
  overrideSchema,
  parseInput,
  presentChannel,
  presentOverride,
  removeChannel,
  removeOverride,
  setOverride,
} from '../channels/channels.ts';
import { announceChanges } from '../channels/dispatch.ts';
import { queuesOnce } from '../queue/queues.ts';
import type { NewChange } from './recompute.ts';
import { pauseDestination, removeDestination, resumeDestination, setDestination, viewDestination } from '../channels/destinations.ts';
import { channelFeed, type FeedExpired, type FeedPage } from '../channels/feed.ts';
import { orderEventsFeed } from '../channels/order-feed.ts';
import { parseAllowedHosts } from '../channels/address-guard.ts';
import { CancelRefused, cancelChannelOrder, channelOrderView } from '../channels/orders.ts';
import { cancelHold, createHold, HoldConflict, holdInput, holdSchema, presentHold } from '../channels/holds.ts';
import { connectionByName } from '../db/connections.ts';
import { chooseConnection, ConnectionChoiceError } from '../api/connections.ts';
import { z } from 'zod';
import { blob, decimal, documented, timestamp } from '../openapi/registry.ts';
import { whyView } from '../console/record.ts';
import { destinationInput } from '../channels/destinations.ts';
import { operationSchema } from '../push/store.ts';

// The answers, as src/channels/ (feed.ts, order-feed.ts, destinations.ts, orders.ts) and src/db/channels.ts build them.
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
const feedQuery = z.object({
  since: z.string().optional().describe('A change id (0, the default: from the first kept).'),
  limit: z.string().optional().describe('1 to 10000 (default 1000).'),
});
const connectionQuery = z.object({
  connection: z.string().optional().describe('Connection name: needed when the channel name exists on several.'),
});
const channelParams = { name: 'Channel name.' };
const orderEvent = z.object({
  id: z.number().int(),
  type: z.string(),
  channel_order_id: z.string(),
  order_id: z.number().int().nullable(),
  order_number: z.string().nullable(),
  at: timestamp,
  data: blob.describe("The event's particulars (docs/channels.md)."),
});
const destinationView = z
  .object({
    channel_id: z.number().int(),
    channel: z.string(),
    connection_id: z.number().int(),
    connection: z.string(),
    kinds: z.array(z.enum(['stock', 'orders'])),
    cursor: z.number().int(),
    order_cursor: z.number().int(),
    behind: z.number().int(),
    paused_at: timestamp.nullable(),
    paused_reason: z.string().nullable(),
    next_attempt_at: timestamp.nullable(),
    failing_since: timestamp.nullable(),
    failures: z.number().int(),
    last_status: z.number().int().nullable(),
    last_error: z.string().nullable(),
    last_success_at: timestamp.nullable(),
    host: z.string().describe('The URL is shown by its host only.'),
    state: z.enum(['caught up', 'behind', 'failing', 'paused']),
    posts: z.array(
      z.object({
        id: z.number().int(),
        channel_id: z.number().int(),
        webhook_id: z.string(),
        first_change: z.number().int(),
        last_change: z.number().int(),
        changes: z.number().int(),
        ok: z.boolean(),
        status: z.number().int().nullable(),
        error: z.string().nullable(),
        attempts: z.number().int(),
        ms: z.number().int(),
        kind: z.enum(['stock', 'orders']),
        at: timestamp,
      }),
    ),
  })
  .meta({ id: 'Destination' });
const serviceTime = z.string().nullable();
const factLines = z.array(z.object({ sku: z.string().nullable(), quantity: decimal }));
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

/** Reads ?since and ?limit; answers 400 and returns null when they are not what the feed takes. */
function feedParams(ctx: Context): { since: number; limit: number } | null {
  const since = String(ctx.query.since ?? '0');
  const limit = String(ctx.query.limit ?? '1000');
  if (!isId(since) || !isId(limit) || Number(limit) < 1 || Number(limit) > 10_000) {
    problem(ctx, 400, 'since must be a change id (an integer, 0 for everything) and limit an integer from 1 to 10000');
    return null;
  }
  return { since: Number(since), limit: Number(limit) };
}

function answerFeed(ctx: Context, page: FeedPage | FeedExpired): void {
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

/** Runs a handler, answering the channel errors with their status and message. */
async function answering(ctx: Context, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (err) {
    if (err instanceof ChannelChoiceError || err instanceof ConnectionChoiceError) return problem(ctx, err.status, err.message);
    if (err instanceof ChannelInputError) return problem(ctx, 400, 'invalid input', { problems: err.problems });
    if (err instanceof HoldConflict) return problem(ctx, 409, err.message);
    if (err instanceof CancelRefused) return problem(ctx, 409, err.message);
    // SKUs the mirror does not know, or that several live variants share, named.
    if (err instanceof OperationFailed) return problem(ctx, 400, err.message);
    throw err;
  }
}

const query = (ctx: Context, key: string) => (typeof ctx.query[key] === 'string' ? (ctx.query[key] as string) : null);
const body = (ctx: Context) => {
  const b = ctx.request.body;
  if (!b || typeof b !== 'object' || Array.isArray(b)) throw new ChannelInputError(['input: the body must be a JSON object']);
  return b as Record<string, unknown>;
};

const recomputed = z.object({ changes: z.number().int(), ms: z.number().int() }).describe('The recomputation it called for.');
const overridesQuery = {
  after: z.string().optional().describe('The SKU to list after (the next page).'),
  limit: z.string().optional().describe(`1 to ${OVERRIDES_PAGE} (the default).`),
};
const overridesPageFields = {
  overrides: z.array(overrideSchema),
  next: z.string().nullable().describe('The SKU to ask after for the next page (null on the last).'),
};
const holdAnswer = z.object({ hold: holdSchema, created: z.boolean(), changes: z.number().int() });

export function mountRoutes(rt: Pick<Runtime, 'database' | 'config' | 'boss' | 'clients'>, router: Router): void {
  const { db } = rt.database;
  // What a route changed goes to the channels' destinations at once (the maintenance minute would catch it too).
  const ready = queuesOnce(rt.boss);
  const announce = async (changes: Pick<NewChange, 'channel_id'>[]) => {
    await ready();
    await announceChanges({ db, boss: rt.boss, config: rt.config }, changes);
  };
  const json = bodyParser({ enableTypes: ['json'], jsonLimit: '1mb', strict: true });
  const api = documented(router);
  // The channel a route acts on; its connection goes into the route's audit entry.
  const channel = async (ctx: Context): Promise<Channel & { connection: string }> => {
    const ch = await findChannel(db, ctx.params.name!, query(ctx, 'connection'));
    noteAudit(ctx, { connection: { id: ch.connection_id, name: ch.connection } });
    return ch;
  };

  api.get(
    '/api/channel-stock',
    {
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
        ctx.body = { channels: (await listChannels(db, { connectionId: c ? Number(c.id) : undefined })).map(presentChannel) };
      }),
  );

  api.post(
    '/api/channels',
    {
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
        const made = await addChannel(db, c.id, input);
        ctx.status = 201;
        ctx.body = { channel: presentChannel({ ...made.channel, connection: c.name }), recomputed: made.recomputed };
      }),
  );

  api.get(
    '/api/channels/:name',
    {
      summary: 'A channel and a page of its overrides',
      params: channelParams,
      query: connectionQuery.extend(overridesQuery),
      answers: { 200: z.object({ channel: channelSchema, ...overridesPageFields }) },
      problems: [400, 404],
    },
    (ctx) =>
      answering(ctx, async () => {
        const ch = await channel(ctx);
        ctx.body = { channel: presentChannel(ch), ...(await overridesPage(db, Number(ch.id), ctx)) };
      }),
  );

  api.patch(
    '/api/channels/:name',
    {
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
        const ch = await channel(ctx);
        noteAudit(ctx, { before: { channel: presentChannel(ch) } });
        const done = await changeChannel(db, ch, body(ctx));
        await announce([{ channel_id: Number(ch.id) }]);
        ctx.body = { channel: presentChannel({ ...done.channel, connection: ch.connection }), recomputed: done.recomputed };
      }),
  );

  api.delete(
    '/api/channels/:name',
    {
      summary: 'Remove a channel with its quantities, history and overrides',
      params: channelParams,
      query: connectionQuery,
      answers: { 200: z.object({ removed: channelSchema }) },
      problems: [400, 404, 409],
    },
    (ctx) =>
      answering(ctx, async () => {
        const ch = await channel(ctx);
        await removeChannel(db, ch);
        ctx.body = { removed: presentChannel(ch) };
      }),
  );

  api.get(
    '/api/channels/:name/overrides',
    {
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
        const set = await setOverride(db, await channel(ctx), ctx.params.sku!, body(ctx));
        await announce(set.changes);
        ctx.body = { override: set.override, changes: set.changes.length };
      }),
  );

  api.delete(
    '/api/channels/:name/overrides/:sku',
    {
      summary: "Remove a channel's override of a SKU",
      params: { ...channelParams, sku: 'The SKU.' },
      query: connectionQuery,
      answers: { 200: z.object({ removed: z.string(), changes: z.number().int() }) },
      problems: [400, 404],
    },
    (ctx) =>
      answering(ctx, async () => {
        const changes = await removeOverride(db, await channel(ctx), ctx.params.sku!);
        if (!changes) return problem(ctx, 404, `channel "${ctx.params.name}" has no override of SKU "${ctx.params.sku}"`);
        await announce(changes);
        ctx.body = { removed: ctx.params.sku, changes: changes.length };
      }),
  );

  api.get(
    '/api/channels/:name/holds',
    {
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
        const [hold] = await listHolds(db, { ids: [Number(made.hold.id)], state: 'all' });
        ctx.status = made.created ? 201 : 200;
        ctx.body = { hold: presentHold(hold!), created: made.created, changes: made.changes.length };
      }),
  );

  api.delete(
    '/api/channels/:name/holds/:order',
    {
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
        const [hold] = await listHolds(db, { ids: [Number(done.hold.id)], state: 'all' });
        ctx.body = { hold: presentHold(hold!), ended: done.ended, changes: done.changes.length };
      }),
  );

  // A channel's destination: its state and recent POSTs; set (a secret is made and shown once when none is given),
  // removed, paused, resumed.
  api.get(
    '/api/channels/:name/destination',
    {
      summary: "A channel's destination: its state and recent POSTs",
      params: channelParams,
      query: connectionQuery,
      answers: { 200: z.object({ destination: destinationView }) },
      problems: [400, 404],
    },
    (ctx) =>
      answering(ctx, async () => {
        const ch = await channel(ctx);
        const view = await viewDestination(db, Number(ch.id));
        if (!view) return problem(ctx, 404, `channel ${ch.connection}/${ch.name} has no destination`);
        ctx.body = { destination: view };
      }),
  );

  api.put(
    '/api/channels/:name/destination',
    {
      summary: "Set a channel's destination (a secret is made, and shown once, when none is given)",
      params: channelParams,
      query: connectionQuery,
      body: destinationInput,
      answers: {
        200: z.object({
          destination: destinationView,
          secret: z.string().optional().describe('The signing secret made: in this answer only.'),
        }),
      },
      problems: [400, 404],
    },
    json,
    (ctx) =>
      answering(ctx, async () => {
        const ch = await channel(ctx);
        const allow = parseAllowedHosts(rt.config.OUTBOUND_ALLOWED_HOSTS);
        const set = await setDestination(db, rt.clients.key(rt.config), Number(ch.id), body(ctx), allow);
        await announce([{ channel_id: Number(ch.id) }]);
        ctx.body = { destination: set.view, ...(set.secret ? { secret: set.secret } : {}) };
      }),
  );

  api.delete(
    '/api/channels/:name/destination',
    {
      summary: "Remove a channel's destination",
      params: channelParams,
      query: connectionQuery,
      answers: { 200: z.object({ removed: z.literal(true) }) },
      problems: [400, 404],
    },
    (ctx) =>
      answering(ctx, async () => {
        const ch = await channel(ctx);
        if (!(await removeDestination(db, Number(ch.id))))
          return problem(ctx, 404, `channel ${ch.connection}/${ch.name} has no destination`);
        ctx.body = { removed: true };
      }),
  );

  api.post(
    '/api/channels/:name/destination/:action',
    {
      summary: "Pause or resume a channel's destination",
      params: { ...channelParams, action: 'pause or resume' },
      query: connectionQuery,
      body: z.object({ reason: z.string().max(PAUSE_REASON_LENGTH).optional().describe('Why it is paused.') }),
      answers: { 200: z.object({ destination: destinationView }) },
      problems: [400, 404],
    },
    json,
    (ctx) =>
      answering(ctx, async () => {
        const ch = await channel(ctx);
        const action = ctx.params.action;
        if (action !== 'pause' && action !== 'resume') return problem(ctx, 404, 'the actions are pause and resume');
        noteAudit(ctx, { before: { destination: await viewDestination(db, Number(ch.id)) } });
        const given = (ctx.request.body as { reason?: unknown } | undefined)?.reason;
        if (given !== undefined && (typeof given !== 'string' || !note(PAUSE_REASON_LENGTH).safeParse(given).success))
          throw new ChannelInputError([`reason: text of at most ${PAUSE_REASON_LENGTH} characters without control characters`]);
        const reason = typeof given === 'string' && given.trim() ? given.trim() : 'paused by an operator';
        const done = action === 'pause' ? await pauseDestination(db, Number(ch.id), reason) : await resumeDestination(db, Number(ch.id));
        if (!done) return problem(ctx, 404, `channel ${ch.connection}/${ch.name} has no destination`);
        if (action === 'resume') await announce([{ channel_id: Number(ch.id) }]);
        ctx.body = { destination: await viewDestination(db, Number(ch.id)) };
      }),
  );

  // What happens to the channel's orders at the service: the feed, one order, and its cancel (docs/channels.md).
  api.get(
    '/api/channels/:name/order-events',
    {
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
        const page = await orderEventsFeed(db, { ...p, channelId: Number(ch.id) });
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
    return { connectionId: ch.connection_id, channelId: Number(ch.id), channel: ch.name, channelOrderId: ctx.params.order! };
  };

  api.get(
    '/api/channels/:name/orders/:order',
    {
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

  api.get(
    '/api/channels/:name/stock',
    {
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
        if (p) answerFeed(ctx, await channelFeed(db, { ...p, channelId: Number(ch.id) }));
      }),
  );

  api.get(
    '/api/variants/:connection/:id/channels',
    {
      summary: "A variant's quantity in each channel, and why",
      params: { connection: 'Connection name.', id: 'Variant id.' },
      answers: {
        200: z.object({
          connection: z.string(),
          variant_id: z.number().int(),
          channels: z.array(
            channelQuantitySchema.extend({
              bundle: z.boolean(),
              why: whyView.nullable(),
              computed_at: timestamp,
            }),
          ),
        }),
      },
      problems: [404],
    },
    async (ctx) => {
      const c = await connectionByName(db, ctx.params.connection!);
      if (!c || !isId(ctx.params.id)) return problem(ctx, 404, `no variant ${ctx.params.connection}/${ctx.params.id}`);
      const rows = await quantitiesOf(db, Number(c.id), Number(ctx.params.id));
      ctx.body = {
        connection: c.name,
        variant_id: Number(ctx.params.id),
        channels: rows.map((r) => ({
          channel: r.channel,
          quantity: r.quantity,
          tracked: r.tracked,
          backorderable: r.backorderable,
          listed: r.listed,
          bundle: r.bundle,
          // How it came about: counted stock, held for channel orders (and which holds), buffer, cap, override.
          why: r.stock?.why ?? null,
          computed_at: r.computed_at,
        })),
      };
    },
  );
}
