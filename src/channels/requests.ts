// What the channel routes (routes.ts, order-routes.ts) share: reading a request (the channel it names, a feed's
// cursor, a JSON body), answering the channel errors with their status, and announcing what a route changed.
import type { Context } from 'koa';
import bodyParser from 'koa-bodyparser';
import { z } from 'zod';
import { ConnectionChoiceError } from '../api/connections.ts';
import { noteAudit } from '../audit.ts';
import type { Channel } from '../db/channels.ts';
import { isId } from '../inputs.ts';
import { OperationFailed } from '../push/errors.ts';
import { queuesOnce } from '../queue/queues.ts';
import { problem, type RouteDeps } from '../server.ts';
import type { NewChange } from '../stock/recompute.ts';
import { ChannelChoiceError, ChannelInputError, findChannel } from './channels.ts';
import { announceChanges } from './dispatch.ts';
import { HoldConflict } from './holds.ts';
import { CancelRefused } from './orders.ts';

export const feedQuery = z.object({
  since: z.string().optional().describe('A change id (0, the default: from the first kept).'),
  limit: z.string().optional().describe('1 to 10000 (default 1000).'),
});
export const connectionQuery = z.object({
  connection: z.string().optional().describe('Connection name: needed when the channel name exists on several.'),
});
export const channelParams = { name: 'Channel name.' };

/** Reads ?since and ?limit; answers 400 and returns null when they are not what the feed takes. */
export function feedParams(ctx: Context): { since: number; limit: number } | null {
  const since = String(ctx.query.since ?? '0');
  const limit = String(ctx.query.limit ?? '1000');
  if (!isId(since) || !isId(limit) || Number(limit) < 1 || Number(limit) > 10_000) {
    problem(ctx, 400, 'since must be a change id (an integer, 0 for everything) and limit an integer from 1 to 10000');
    return null;
  }
  return { since: Number(since), limit: Number(limit) };
}

/** Runs a handler, answering the channel errors with their status and message. */
export async function answering(ctx: Context, run: () => Promise<void>): Promise<void> {
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

export const query = (ctx: Context, key: string) => (typeof ctx.query[key] === 'string' ? (ctx.query[key] as string) : null);
export const body = (ctx: Context) => {
  const b = ctx.request.body;
  if (!b || typeof b !== 'object' || Array.isArray(b)) throw new ChannelInputError(['input: the body must be a JSON object']);
  return b as Record<string, unknown>;
};

/** What the channel routes of one mount share. */
export interface ChannelRouting {
  /** Creates the queues once, before the first job is sent. */
  ready: () => Promise<void>;
  /** Sends what a route changed to the channels' destinations at once (the maintenance minute would catch it too). */
  announce: (changes: Pick<NewChange, 'channel_id'>[]) => Promise<void>;
  /** The channel a route acts on; its connection goes into the route's audit entry. */
  channel: (ctx: Context) => Promise<Channel & { connection: string }>;
  /** The JSON body parser. */
  json: ReturnType<typeof bodyParser>;
}

export function channelRouting(rt: RouteDeps): ChannelRouting {
  const { db } = rt.database;
  const ready = queuesOnce(rt.boss);
  return {
    ready,
    announce: async (changes) => {
      await ready();
      await announceChanges({ db, boss: rt.boss, config: rt.config }, changes);
    },
    channel: async (ctx) => {
      const ch = await findChannel(db, ctx.params.name!, query(ctx, 'connection'));
      noteAudit(ctx, { connection: { id: ch.connection_id, name: ch.connection } });
      return ch;
    },
    json: bodyParser({ enableTypes: ['json'], jsonLimit: '1mb', strict: true }),
  };
}
