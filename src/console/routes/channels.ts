// Channels: the page (rules, overrides, holds, each destination's state and recent POSTs) and the Pause and
// Resume of a destination (the JSON API of channels is src/channels/routes.ts).
import type Router from '@koa/router';
import type { Context } from 'koa';
import bodyParser from 'koa-bodyparser';
import { channelById } from '../../db/channels.ts';
import { connectionNamesById } from '../../db/connections.ts';
import { createQueues } from '../../queue/queues.ts';
import { callerOf, type Caller } from '../../audit.ts';
import { ChannelChoiceError, ChannelInputError, type FoundChannel } from '../../channels/channels.ts';
import { destinationPause, destinationResume } from '../../channels/operations.ts';
import { channelsOverview } from '../channels.ts';
import { channelsPage } from '../pages/channels.ts';
import { html } from '../html.ts';
import { layout, NOT_FOUND, notFoundPage, type PageContext } from '../pages/layout.ts';
import { connectionNames, flatQuery, int, optionalConnection, page, pageContext, type ConsoleDeps } from '../web.ts';
import { documented } from '../../openapi/registry.ts';

export function channelRoutes(r: Router, deps: ConsoleDeps): void {
  const { db, boss } = deps;
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
    return { ...channel, connection: (await connectionNamesById(db)).get(channel.connection_id) ?? '' };
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

  const ops = { db, boss, config: deps.config };
  /** A destination's Pause or Resume: the operation the API and the CLI call too (src/channels/operations.ts). */
  const act =
    (done: 'paused' | 'resumed', run: (ch: FoundChannel, caller: Caller, form: unknown) => Promise<unknown>) => async (ctx: Context) => {
      const channel = await channelAt(ctx);
      if (!channel) return;
      try {
        await ready();
        await run(channel, callerOf(ctx), ctx.request.body ?? {});
      } catch (err) {
        if (err instanceof ChannelChoiceError) return ctx.redirect(back(channel.connection, 'missing', channel.id));
        if (err instanceof ChannelInputError)
          return page(
            ctx,
            layout(
              pageContext(deps, ctx, { problem: err.message }),
              `Not ${done}`,
              '/channels',
              html`<p><a href="${back(channel.connection, 'channel', channel.id)}">Back to ${channel.name}</a></p>`,
            ),
            400,
          );
        throw err;
      }
      ctx.redirect(back(channel.connection, done, channel.id));
    };
  pages.post(
    '/channels/:id/destination/pause',
    { role: 'operator' },
    form,
    act('paused', (ch, caller, body) => destinationPause(ops, caller, ch, body)),
  );
  pages.post(
    '/channels/:id/destination/resume',
    { role: 'operator' },
    act('resumed', (ch, caller) => destinationResume(ops, caller, ch)),
  );
}
