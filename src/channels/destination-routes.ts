// A channel's destination over the JSON API, mounted by src/channels/routes.ts (docs/channels.md):
//   GET|PUT|DELETE /api/channels/:name/destination, POST /api/channels/:name/destination/pause|resume
// its state and recent POSTs; set (a secret is made and shown once when none is given), removed, paused, resumed.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import type { ClientState } from '../api/client-state.ts';
import { callerOf } from '../audit.ts';
import { documented, timestamp } from '../openapi/registry.ts';
import { problem, type RouteDeps } from '../server.ts';
import { destinationInput, viewDestination } from './destinations.ts';
import { destinationPause, destinationRemove, destinationResume, destinationSet, pauseInput } from './operations.ts';
import { answering, body, channelParams, type ChannelRouting, connectionQuery } from './requests.ts';

// The answer, as destinations.ts builds it.
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
    lag_seconds: z.number().describe('Seconds since the oldest change not acknowledged yet was recorded: the channel lag (0: caught up).'),
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

/** The 404 of a channel without a destination (none set, or removed meanwhile). */
const noDestination = (ctx: Context, ch: { connection: string; name: string }) =>
  problem(ctx, 404, `channel ${ch.connection}/${ch.name} has no destination`);

export function mountDestinationRoutes(rt: RouteDeps & { clients: ClientState }, router: Router, routing: ChannelRouting): void {
  const { db } = rt.database;
  const { channel, json } = routing;
  const api = documented(router);

  // A channel's destination: its state and recent POSTs; set (a secret is made and shown once when none is given),
  // removed, paused, resumed.
  api.get(
    '/api/channels/:name/destination',
    {
      role: 'viewer',
      summary: "A channel's destination: its state and recent POSTs",
      params: channelParams,
      query: connectionQuery,
      answers: { 200: z.object({ destination: destinationView }) },
      problems: [400, 404],
    },
    (ctx) =>
      answering(ctx, async () => {
        const ch = await channel(ctx);
        const view = await viewDestination(db, ch.id);
        if (!view) return noDestination(ctx, ch);
        ctx.body = { destination: view };
      }),
  );

  api.put(
    '/api/channels/:name/destination',
    {
      role: 'admin',
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
        await routing.ready();
        const ops = { db, boss: rt.boss, config: rt.config, key: rt.clients.key(rt.config) };
        ctx.body = await destinationSet(ops, callerOf(ctx), await channel(ctx), body(ctx));
      }),
  );

  api.delete(
    '/api/channels/:name/destination',
    {
      role: 'admin',
      summary: "Remove a channel's destination",
      params: channelParams,
      query: connectionQuery,
      answers: { 200: z.object({ removed: z.literal(true) }) },
      problems: [400, 404],
    },
    (ctx) =>
      answering(ctx, async () => {
        ctx.body = await destinationRemove({ db }, callerOf(ctx), await channel(ctx));
      }),
  );

  api.post(
    '/api/channels/:name/destination/:action',
    {
      role: 'operator',
      summary: "Pause or resume a channel's destination",
      params: { ...channelParams, action: 'pause or resume' },
      query: connectionQuery,
      body: pauseInput,
      answers: { 200: z.object({ destination: destinationView }) },
      problems: [400, 404],
    },
    json,
    (ctx) =>
      answering(ctx, async () => {
        const ch = await channel(ctx);
        const action = ctx.params.action;
        if (action !== 'pause' && action !== 'resume') return problem(ctx, 404, 'the actions are pause and resume');
        await routing.ready();
        const ops = { db, boss: rt.boss, config: rt.config };
        ctx.body = {
          destination:
            action === 'pause'
              ? await destinationPause(ops, callerOf(ctx), ch, ctx.request.body)
              : await destinationResume(ops, callerOf(ctx), ch),
        };
      }),
  );
}
