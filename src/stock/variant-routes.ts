// The stock JSON API, mounted by the console role behind operator auth (docs/channels.md):
//   GET    /api/variants/:connection/:id/channels                            a variant's quantity in each channel, and why
// The channels' own API: src/channels/routes.ts.
import type Router from '@koa/router';
import { z } from 'zod';
import { quantitiesOf } from '../db/channels.ts';
import { connectionByName } from '../db/connections.ts';
import type { Db } from '../db/index.ts';
import { idOf } from '../inputs.ts';
import { decimal, documented, timestamp } from '../openapi/registry.ts';
import { problem } from '../server.ts';
import { whyView } from './rules.ts';

/** A variant's quantity in one channel, as the variant index and a variant's channels answer it. */
export const channelQuantitySchema = z.object({
  channel: z.string(),
  quantity: decimal.nullable(),
  tracked: z.boolean(),
  backorderable: z.boolean(),
  listed: z.boolean(),
});

export function mountRoutes(rt: { database: { db: Db } }, router: Router): void {
  const { db } = rt.database;
  const api = documented(router);

  api.get(
    '/api/variants/:connection/:id/channels',
    {
      role: 'viewer',
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
      const variantId = idOf(ctx.params.id);
      if (!c || variantId === undefined) return problem(ctx, 404, `no variant ${ctx.params.connection}/${ctx.params.id}`);
      const rows = await quantitiesOf(db, c.id, variantId);
      ctx.body = {
        connection: c.name,
        variant_id: variantId,
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
