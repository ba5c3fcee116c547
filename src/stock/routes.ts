// GET /api/channel-stock?since=CURSOR[&limit=N][&connection=NAME]: channel quantity changes after the
// cursor, oldest first; `next` is the cursor for the following call; 410 when changes after the cursor were
// deleted by retention. The console role mounts this behind operator auth.
import type Router from '@koa/router';
import type { Runtime } from '../runtime.ts';
import { channelFeed } from './feed.ts';

export function mountRoutes(rt: Runtime, router: Router): void {
  router.get('/api/channel-stock', async (ctx) => {
    const since = String(ctx.query.since ?? '0');
    const limit = String(ctx.query.limit ?? '1000');
    if (!/^\d+$/.test(since) || !/^\d+$/.test(limit) || Number(limit) < 1 || Number(limit) > 10_000) {
      ctx.status = 400;
      ctx.body = { error: 'since must be a change id (an integer, 0 for everything) and limit an integer from 1 to 10000' };
      return;
    }
    const connection = typeof ctx.query.connection === 'string' ? ctx.query.connection : null;
    const page = await channelFeed(rt.database.db, { since: Number(since), limit: Number(limit), connection });
    if ('expired' in page) {
      // 410: the changes between the cursor and kept_after are gone for good; going on from the cursor would skip them.
      ctx.status = 410;
      ctx.body = {
        error:
          `cursor ${page.since} is older than the changes kept: changes up to ${page.kept_after} were deleted after ` +
          'CHANNEL_CHANGE_RETENTION_DAYS. Read every current quantity (GET /api/variants?connection=NAME, or ' +
          '`commerce-sync stock`), then follow this feed from since=kept_after.',
        since: page.since,
        kept_after: page.kept_after,
      };
      return;
    }
    ctx.body = page;
  });
}
