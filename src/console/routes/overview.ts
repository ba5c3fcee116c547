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
import { z } from 'zod';
import { documented, timestamp } from '../../openapi/registry.ts';

// The answers, as src/console/overview.ts, src/db/alerts.ts, src/queue/depths.ts and ../series.ts build them.
const queueDepth = z
  .object({ queue: z.string(), queued: z.number().int(), active: z.number().int(), failed: z.number().int() })
  .meta({ id: 'QueueDepth' });
export const alertView = z
  .object({
    id: z.number().int(),
    key: z.string().describe('condition:subject; one open alert per key.'),
    condition: z.string(),
    connection_id: z.number().int().nullable(),
    connection: z.string().nullable(),
    severity: z.enum(['warning', 'critical']),
    message: z.string(),
    count: z.number().int(),
    opened_at: timestamp,
    updated_at: timestamp,
    resolved_at: timestamp.nullable(),
    reopened: z.number().int(),
    notified_open_at: timestamp.nullable(),
    notified_resolved_at: timestamp.nullable(),
    notify_attempts: z.number().int(),
    notify_next_at: timestamp.nullable(),
    notify_claimed_until: timestamp.nullable(),
    notify_error: z.string().nullable(),
  })
  .meta({ id: 'Alert' });
const connectionOverview = z
  .object({
    id: z.number().int(),
    name: z.string(),
    accountName: z.string().nullable(),
    baseUrl: z.string(),
    status: z.string(),
    statusReason: z.string().nullable(),
    health: z.enum(['ok', 'degraded', 'down']),
    deliveriesPerMinute: z.number(),
    deliveriesLastHour: z.number().int(),
    queuedDeliveries: z.number().int(),
    failedDeliveries: z.number().int(),
    stockLagSeconds: z
      .number()
      .int()
      .describe(
        'Stock lag, the headline: seconds since the oldest change of stock (variants and their stock levels, bundle makeup, shipments, channel orders) not yet in the mirror; 0 when none waits.',
      ),
    documentsLagSeconds: z
      .number()
      .int()
      .describe(
        'Documents lag: the same for everything else (orders, purchase orders, customers...), which waits in its coalescing window by design, up to documentsWindowSeconds.',
      ),
    documentsWindowSeconds: z.number().int().describe('The longest a document read waits for more changes by design.'),
    lagSeconds: z
      .number()
      .int()
      .describe('Deprecated (kept for a release): the greater of stockLagSeconds and documentsLagSeconds, the oldest change of any kind.'),
    budget: z
      .object({
        limit: z.number().int(),
        remaining: z.number().int(),
        resetAt: timestamp,
        inFlight: z.number().int(),
        accountingErrors: z.number().int(),
      })
      .nullable(),
    destinations: z.array(
      z.object({
        channel: z.string(),
        host: z.string(),
        state: z.enum(['caught up', 'behind', 'failing', 'paused']),
        behind: z.number().int(),
        lagSeconds: z.number().int().describe("The channel's lag: seconds since the oldest change it has not acknowledged was recorded."),
        failingSince: timestamp.nullable(),
        failures: z.number().int(),
        lastError: z.string().nullable(),
        pausedReason: z.string().nullable(),
      }),
    ),
    lastSweepAt: timestamp.nullable(),
    lastFullSweepAt: timestamp.nullable(),
    lastDrift: z.number().int(),
    sweeps: z.array(
      z.object({ resource: z.string(), lastSweepAt: timestamp.nullable(), lastFullSweepAt: timestamp.nullable(), drift: z.number().int() }),
    ),
    errorsLastHour: z.number().int(),
    recentErrors: z.array(
      z.object({
        id: z.number().int(),
        at: timestamp,
        action: z.string(),
        resource: z.string().nullable(),
        sku: z.string().nullable(),
        error: z.string().nullable(),
      }),
    ),
  })
  .meta({ id: 'ConnectionOverview' });
const points = z.array(z.object({ at: timestamp, value: z.number() }));
const series = z.object({
  window: z.object({ start: timestamp, end: timestamp, stepMinutes: z.number().int() }),
  throughput: points.describe('Deliveries received per minute, one point per bucket.'),
  syncEvents: points.describe('Sync-log entries per minute, one point per bucket.'),
  lag: points.describe('Stock lag in seconds (stockLagSeconds), the worst sample of each bucket.'),
  budget: points.describe('API budget left, the lowest sample of each bucket.'),
  budgetUsed: points.describe('API requests used of the rate window, the highest sample of each bucket.'),
  queuedDeliveries: points.describe('Deliveries waiting to be processed, the highest sample of each bucket.'),
  queuedJobs: points.describe('Jobs waiting in the work queues, the highest sample of each bucket.'),
  drift: points.describe('Drift each sweep found (changes an event should have announced and no delivery did), one point per sweep.'),
});

export function overviewRoutes(r: Router, deps: ConsoleDeps): void {
  const { db, log } = deps;
  const api = documented(r);
  api.page.get('/metrics', { role: 'viewer' }, async (ctx) => {
    await refreshGauges(db).catch((err) => log.warn({ err }, 'refreshing gauges for /metrics failed'));
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  api.page.get('/', { role: 'viewer' }, async (ctx) => {
    const q = flatQuery(ctx);
    const range = isRange(q.range) ? q.range : '1h';
    const o = await overview(db);
    const w = timeWindow(ranges[range].minutes, ranges[range].stepMinutes, new Date());
    const series = new Map(await Promise.all(o.connections.map(async (c) => [c.id, await chartSeries(db, c.id, w)] as const)));
    const recent = await recentAlerts(db, 24);
    page(ctx, overviewPage(pageContext(deps, ctx), o.connections, series, o.queues, range, { open: o.alerts, recent }));
  });
  api.get(
    '/api/overview',
    {
      role: 'viewer',
      summary: 'Every connection at a glance, open alerts and queue depths',
      answers: {
        200: z.object({ at: timestamp, alerts: z.array(alertView), connections: z.array(connectionOverview), queues: z.array(queueDepth) }),
      },
    },
    async (ctx) => {
      ctx.body = await overview(db);
    },
  );
  api.get(
    '/api/alerts',
    {
      role: 'viewer',
      summary: 'Open alerts, and those opened or resolved in the last 24 hours',
      answers: { 200: z.object({ open: z.array(alertView), recent: z.array(alertView) }) },
    },
    async (ctx) => {
      ctx.body = { open: await openAlerts(db), recent: await recentAlerts(db, 24) };
    },
  );
  api.get(
    '/api/queues',
    { role: 'viewer', summary: 'Jobs waiting, running and failed per queue', answers: { 200: z.object({ queues: z.array(queueDepth) }) } },
    async (ctx) => {
      ctx.body = { queues: await queueDepths(db) };
    },
  );
  api.get(
    '/api/status',
    {
      role: 'viewer',
      summary: 'Every connection and the queues (what `commerce-sync status` shows)',
      answers: { 200: z.object({ connections: z.array(connectionOverview), queues: z.array(queueDepth) }) },
    },
    async (ctx) => {
      ctx.body = { connections: await connectionOverviews(db), queues: await queueDepths(db) };
    },
  );
  // ?range=1h|24h|7d, or ?minutes=N (per-minute points, at most a day); ?end=ISO fixes the window's end.
  api.get(
    '/api/connections/:connection/series',
    {
      role: 'viewer',
      summary: "A connection's chart series over a time range",
      params: { connection: 'Connection name or id.' },
      query: z.object({
        range: z.enum(['1h', '24h', '7d']).optional().describe('A range of buckets; else per-minute points over `minutes`.'),
        minutes: z.string().optional().describe('Minutes back, 1 to 1440 (default 60), when no range is given.'),
        end: z.string().optional().describe('ISO timestamp the window ends at (default now).'),
      }),
      answers: { 200: series },
      problems: [400, 404],
    },
    async (ctx) => {
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
    },
  );
}
