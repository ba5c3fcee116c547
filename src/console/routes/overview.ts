// The overview page and the JSON behind it: per-connection figures, chart series over a range, queues, metrics.
import type Router from '@koa/router';
import { openAlerts, recentAlerts } from '../../db/alerts.ts';
import { registry } from '../../metrics.ts';
import { refreshGauges } from '../gauges.ts';
import { connectionOverviews, overview } from '../overview.ts';
import { overviewPage } from '../pages/overview.ts';
import { queueDepths } from '../../queue/depths.ts';
import { chartSeries, isRange, ranges, timeWindow } from '../series.ts';
import { flatQuery, int, optionalConnection, page, pageContext, type ConsoleDeps } from '../web.ts';
import { problem } from '../../server.ts';

export function overviewRoutes(r: Router, deps: ConsoleDeps): void {
  const { db, log } = deps;
  r.get('/metrics', async (ctx) => {
    await refreshGauges(db).catch((err) => log.warn({ err }, 'refreshing gauges for /metrics failed'));
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  r.get('/', async (ctx) => {
    const q = flatQuery(ctx);
    const range = isRange(q.range) ? q.range : '1h';
    const o = await overview(db);
    const w = timeWindow(ranges[range].minutes, ranges[range].stepMinutes, new Date());
    const series = new Map(await Promise.all(o.connections.map(async (c) => [c.id, await chartSeries(db, c.id, w)] as const)));
    const recent = await recentAlerts(db, 24);
    page(ctx, overviewPage(pageContext(deps, ctx), o.connections, series, o.queues, range, { open: o.alerts, recent }));
  });
  r.get('/api/overview', async (ctx) => {
    ctx.body = await overview(db);
  });
  r.get('/api/alerts', async (ctx) => {
    ctx.body = { open: await openAlerts(db), recent: await recentAlerts(db, 24) };
  });
  r.get('/api/queues', async (ctx) => {
    ctx.body = { queues: await queueDepths(db) };
  });
  r.get('/api/status', async (ctx) => {
    ctx.body = { connections: await connectionOverviews(db), queues: await queueDepths(db) };
  });
  // ?range=1h|24h|7d, or ?minutes=N (per-minute points, at most a day); ?end=ISO fixes the window's end.
  r.get('/api/connections/:connection/series', async (ctx) => {
    const q = flatQuery(ctx);
    const connectionId = await optionalConnection(ctx, db, ctx.params.connection);
    if (!connectionId) return;
    if (q.range && !isRange(q.range)) return problem(ctx, 400, `range must be one of ${Object.keys(ranges).join(', ')}`);
    const end = q.end ? new Date(q.end) : new Date();
    if (Number.isNaN(end.getTime())) return problem(ctx, 400, 'end must be an ISO timestamp');
    const w = isRange(q.range)
      ? timeWindow(ranges[q.range].minutes, ranges[q.range].stepMinutes, end)
      : timeWindow(Math.max(1, Math.min(int(q.minutes) ?? 60, 24 * 60)), 1, end);
    ctx.body = await chartSeries(db, connectionId, w);
  });
}
