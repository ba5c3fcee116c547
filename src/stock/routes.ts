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
  chooseConnection,
  findChannel,
  parseInput,
  presentChannel,
  presentOverride,
  removeChannel,
  removeOverride,
  setOverride,
} from './channels.ts';
import { announceChanges } from '../channels/dispatch.ts';
import { queuesOnce } from '../queue/queues.ts';
import type { NewChange } from './recompute.ts';
import { pauseDestination, removeDestination, resumeDestination, setDestination, viewDestination } from '../channels/destinations.ts';
import { channelFeed, type FeedExpired, type FeedPage } from '../channels/feed.ts';
import { orderEventsFeed } from '../channels/order-feed.ts';
import { parseAllowedHosts } from '../channels/address-guard.ts';
import { CancelRefused, cancelChannelOrder, channelOrderView } from '../channels/orders.ts';
import { cancelHold, createHold, HoldConflict, holdInput, presentHold } from './holds.ts';
import { connectionByName } from '../db/connections.ts';

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
    if (err instanceof ChannelChoiceError) return problem(ctx, err.status, err.message);
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

export function mountRoutes(rt: Pick<Runtime, 'database' | 'config' | 'boss' | 'clients'>, router: Router): void {
  const { db } = rt.database;
  // What a route changed goes to the channels' destinations at once (the maintenance minute would catch it too).
  const ready = queuesOnce(rt.boss);
  const announce = async (changes: Pick<NewChange, 'channel_id'>[]) => {
    await ready();
    await announceChanges({ db, boss: rt.boss, config: rt.config }, changes);
  };
  const json = bodyParser({ enableTypes: ['json'], jsonLimit: '1mb', strict: true });
  // The channel a route acts on; its connection goes into the route's audit entry.
  const channel = async (ctx: Context): Promise<Channel & { connection: string }> => {
    const ch = await findChannel(db, ctx.params.name!, query(ctx, 'connection'));
    noteAudit(ctx, { connection: { id: ch.connection_id, name: ch.connection } });
    return ch;
  };

  router.get('/api/channel-stock', async (ctx) => {
    const p = feedParams(ctx);
    if (p) answerFeed(ctx, await channelFeed(db, { ...p, connection: query(ctx, 'connection') }));
  });

  router.get('/api/channels', (ctx) =>
    answering(ctx, async () => {
      const name = query(ctx, 'connection');
      const c = name ? await connectionByName(db, name) : undefined;
      if (name && !c) throw new ChannelChoiceError(404, `no connection "${name}"`);
      ctx.body = { channels: (await listChannels(db, { connectionId: c ? Number(c.id) : undefined })).map(presentChannel) };
    }),
  );

  router.post('/api/channels', json, (ctx) =>
    answering(ctx, async () => {
      const { connection, ...input } = body(ctx);
      const c = await chooseConnection(db, (connection as string | undefined) ?? query(ctx, 'connection'));
      const made = await addChannel(db, c.id, input);
      ctx.status = 201;
      ctx.body = { channel: presentChannel({ ...made.channel, connection: c.name }), recomputed: made.recomputed };
    }),
  );

  router.get('/api/channels/:name', (ctx) =>
    answering(ctx, async () => {
      const ch = await channel(ctx);
      ctx.body = { channel: presentChannel(ch), ...(await overridesPage(db, Number(ch.id), ctx)) };
    }),
  );

  router.patch('/api/channels/:name', json, (ctx) =>
    answering(ctx, async () => {
      const ch = await channel(ctx);
      noteAudit(ctx, { before: { channel: presentChannel(ch) } });
      const done = await changeChannel(db, ch, body(ctx));
      await announce([{ channel_id: Number(ch.id) }]);
      ctx.body = { channel: presentChannel({ ...done.channel, connection: ch.connection }), recomputed: done.recomputed };
    }),
  );

  router.delete('/api/channels/:name', (ctx) =>
    answering(ctx, async () => {
      const ch = await channel(ctx);
      await removeChannel(db, ch);
      ctx.body = { removed: presentChannel(ch) };
    }),
  );

  router.get('/api/channels/:name/overrides', (ctx) =>
    answering(ctx, async () => {
      ctx.body = await overridesPage(db, Number((await channel(ctx)).id), ctx);
    }),
  );

  router.put('/api/channels/:name/overrides/:sku', json, (ctx) =>
    answering(ctx, async () => {
      const set = await setOverride(db, await channel(ctx), ctx.params.sku!, body(ctx));
      await announce(set.changes);
      ctx.body = { override: set.override, changes: set.changes.length };
    }),
  );

  router.delete('/api/channels/:name/overrides/:sku', (ctx) =>
    answering(ctx, async () => {
      const changes = await removeOverride(db, await channel(ctx), ctx.params.sku!);
      if (!changes) return problem(ctx, 404, `channel "${ctx.params.name}" has no override of SKU "${ctx.params.sku}"`);
      await announce(changes);
      ctx.body = { removed: ctx.params.sku, changes: changes.length };
    }),
  );

  router.get('/api/channels/:name/holds', (ctx) =>
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

  router.post('/api/channels/:name/holds', json, (ctx) =>
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

  router.delete('/api/channels/:name/holds/:order', (ctx) =>
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
  router.get('/api/channels/:name/destination', (ctx) =>
    answering(ctx, async () => {
      const ch = await channel(ctx);
      const view = await viewDestination(db, Number(ch.id));
      if (!view) return problem(ctx, 404, `channel ${ch.connection}/${ch.name} has no destination`);
      ctx.body = { destination: view };
    }),
  );

  router.put('/api/channels/:name/destination', json, (ctx) =>
    answering(ctx, async () => {
      const ch = await channel(ctx);
      const allow = parseAllowedHosts(rt.config.OUTBOUND_ALLOWED_HOSTS);
      const set = await setDestination(db, rt.clients.key(rt.config), Number(ch.id), body(ctx), allow);
      await announce([{ channel_id: Number(ch.id) }]);
      ctx.body = { destination: set.view, ...(set.secret ? { secret: set.secret } : {}) };
    }),
  );

  router.delete('/api/channels/:name/destination', (ctx) =>
    answering(ctx, async () => {
      const ch = await channel(ctx);
      if (!(await removeDestination(db, Number(ch.id)))) return problem(ctx, 404, `channel ${ch.connection}/${ch.name} has no destination`);
      ctx.body = { removed: true };
    }),
  );

  router.post('/api/channels/:name/destination/:action', json, (ctx) =>
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
  router.get('/api/channels/:name/order-events', (ctx) =>
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

  router.get('/api/channels/:name/orders/:order', (ctx) =>
    answering(ctx, async () => {
      const ref = await orderRef(ctx);
      const view = await channelOrderView(db, ref);
      if (!view) return problem(ctx, 404, `channel ${ref.channel} has no order ${ref.channelOrderId} (not imported, held or told of)`);
      ctx.body = { order: view };
    }),
  );

  router.post('/api/channels/:name/orders/:order/cancel', (ctx) =>
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

  router.get('/api/channels/:name/stock', (ctx) =>
    answering(ctx, async () => {
      const ch = await channel(ctx);
      const p = feedParams(ctx);
      if (p) answerFeed(ctx, await channelFeed(db, { ...p, channelId: Number(ch.id) }));
    }),
  );

  router.get('/api/variants/:connection/:id/channels', async (ctx) => {
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
  });
}
