// Channels: the page (rules, overrides, holds, each destination's state and recent POSTs) and the Pause and
// Resume of a destination (the JSON API of channels is src/channels/routes.ts).
import type Router from '@koa/router';
import type { Context } from 'koa';
import bodyParser from 'koa-bodyparser';
import { channelById } from '../../db/channels.ts';
import { pauseDestination, resumeDestination } from '../../db/channel-destinations.ts';
import { connectionNamesById } from '../../db/connections.ts';
import { createQueues } from '../../queue/queues.ts';
import { requestDelivery } from '../../queue/contracts.ts';
import { channelsOverview } from '../channels.ts';
import { channelsPage } from '../pages/channels.ts';
import { NOT_FOUND, notFoundPage, type PageContext } from '../pages/layout.ts';
import { connectionNames, flatQuery, int, optionalConnection, page, pageContext, type ConsoleDeps } from '../web.ts';
import { documented } from '../../openapi/registry.ts';

const OPERATOR_PAUSE = 'paused by an operator from the console';

export function channelRoutes(r: Router, deps: ConsoleDeps): void {
  const { db, boss, log } = deps;
  const form = bodyParser({ enableTypes: ['form'], formLimit: '8kb' });
  const pages = documented(r).page;
  let queuesReady: Promise<void> | undefined;
  const ready = () =>
    (queuesReady ??= createQueues(boss).catch((err) => {
      queuesReady = undefined;
      throw err;
    }));

  /** The channel a path names, with its connection's name; undefined after answering 404. */
  const channelAt = async (ctx: Context) => {
    const id = int(ctx.params.id);
    const channel = id === undefined ? undefined : await channelById(db, id);
    if (!channel) {
      page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.channel), 404);
      return undefined;
    }
    return { ...channel, connection: (await connectionNamesById(db)).get(Number(channel.connection_id)) ?? '' };
  };
  const back = (connection: string, what: string, id: number) =>
    `/channels?${new URLSearchParams({ connection, [what]: String(id) })}#channel-${id}`;

  pages.get('/channels', { role: 'viewer' }, async (ctx) => {
    const q = flatQuery(ctx);
    const connectionId = await optionalConnection(ctx, db, q.connection);
    if (connectionId === null) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.connection), 404);
    const view = await channelsOverview(db, connectionId);
    // The notice after Pause or Resume names the channel by what the database says of the id in the link.
    const notice: Partial<PageContext> = {};
    for (const [key, say] of [
      ['paused', (name: string) => `Paused the destination of ${name}: nothing is sent until it is resumed, and nothing is lost.`],
      ['resumed', (name: string) => `Resumed the destination of ${name}: everything after its cursor is sent now, in order.`],
      ['missing', (name: string) => `${name} has no destination to pause or resume.`],
    ] as const) {
      const id = int(q[key]);
      const channel = id === undefined ? undefined : view.flatMap((c) => c.channels).find((c) => c.id === id);
      if (channel) notice[key === 'missing' ? 'problem' : 'notice'] = say(channel.name);
    }
    page(ctx, channelsPage(pageContext(deps, ctx, notice), { connections: await connectionNames(db), query: q, view }));
  });

  pages.post('/channels/:id/destination/pause', { role: 'operator' }, form, async (ctx) => {
    const channel = await channelAt(ctx);
    if (!channel) return;
    const body = (ctx.request.body ?? {}) as Record<string, unknown>;
    const reason = (typeof body.reason === 'string' ? body.reason.trim().slice(0, 200) : '') || OPERATOR_PAUSE;
    const done = await pauseDestination(db, Number(channel.id), reason);
    if (done) log.info({ channel: channel.name, connection: channel.connection, reason }, 'channel destination paused from the console');
    ctx.redirect(back(channel.connection, done ? 'paused' : 'missing', Number(channel.id)));
  });

  pages.post('/channels/:id/destination/resume', { role: 'operator' }, async (ctx) => {
    const channel = await channelAt(ctx);
    if (!channel) return;
    const done = await resumeDestination(db, Number(channel.id));
    if (done) {
      log.info({ channel: channel.name, connection: channel.connection }, 'channel destination resumed from the console');
      // Sent at once; should the request not go out, the maintenance run finds the changes waiting and asks again.
      try {
        await ready();
        await requestDelivery(boss, Number(channel.id));
      } catch (err) {
        log.warn({ err, channel: channel.name }, 'resumed, but requesting the delivery failed: the maintenance run requests it');
      }
    }
    ctx.redirect(back(channel.connection, done ? 'resumed' : 'missing', Number(channel.id)));
  });
}
