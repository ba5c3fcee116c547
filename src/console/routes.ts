// The console's HTTP surface: pages, /api JSON, the SSE live tail and /metrics, all behind operator auth
// (public: /login, /logout and the two static assets). Pages and API share the query functions, so the
// console shows nothing the API cannot answer.
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import Router from '@koa/router';
import bodyParser from 'koa-bodyparser';
import type { Context, Next } from 'koa';
import type { Config } from '../config.ts';
import type { Db } from '../db/index.ts';
import type { Logger } from '../log.ts';
import { registry } from '../metrics.ts';
import type { Boss } from '../queue/boss.ts';
import { css, js } from './assets.ts';
import { accessMode, requireOperator, sessionCookie, tokenMatches } from './auth.ts';
import { deliveryStates, listDeliveries } from './deliveries.ts';
import { refreshGauges } from './gauges.ts';
import type { Html } from './html.ts';
import { chartSeries, connectionOverviews, overview } from './overview.ts';
import * as pages from './pages.ts';
import { listDeadLetters, queueDepths } from './queues.ts';
import { findVariants, variantRecord } from './record.ts';
import { replayDeadLetter, replayDelivery, ReplayError } from './replay.ts';
import { connectionIdOf, exactTime, FilterError, latestSyncLogId, parseLogFilter, querySyncLog, type LogFilter, type LogRow } from './synclog.ts';
import type { SyncLogTail } from './tail.ts';

export interface ConsoleDeps {
  config: Config;
  log: Logger;
  db: Db;
  boss: Boss;
  tail: SyncLogTail;
  demo: () => boolean;
}

const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";
const HEARTBEAT_MS = 15_000;

type Query = Record<string, string>;
const flatQuery = (ctx: Context): Query => Object.fromEntries(Object.entries(ctx.query).map(([k, v]) => [k, (Array.isArray(v) ? v[0] : v) ?? '']));

function page(ctx: Context, body: Html, status = 200): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Content-Security-Policy', CSP);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Cache-Control', 'no-store');
  ctx.body = body.value;
}

function problem(ctx: Context, status: number, error: string): void {
  ctx.status = status;
  ctx.body = { error };
}

const wantsApi = (ctx: Context) => ctx.path.startsWith('/api/') || ctx.path === '/metrics';

/** Operator auth for every guarded route; refused page requests get the login form instead of JSON. */
function guard(deps: ConsoleDeps) {
  const auth = requireOperator(deps.config, deps.demo);
  return async (ctx: Context, next: Next) => {
    // A cookie or an open demo console must not let another site's page trigger replays.
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      const origin = ctx.get('origin');
      let foreign = ctx.get('sec-fetch-site') === 'cross-site';
      if (origin && origin !== 'null') { try { foreign ||= new URL(origin).host !== ctx.host; } catch { foreign = true; } }
      if (foreign) return problem(ctx, 403, 'cross-site request refused');
    }
    let passed = false;
    await auth(ctx, () => { passed = true; return next(); });
    if (passed || ctx.status !== 401 || wantsApi(ctx) || !ctx.accepts('html')) return;
    const mode = accessMode(deps.config, deps.demo());
    page(ctx, mode === 'closed' ? pages.closedPage() : pages.loginPage(undefined, ctx.originalUrl), 401);
  };
}

async function connectionNames(db: Db): Promise<string[]> {
  return (await db.selectFrom('connections').select('name').orderBy('name').execute()).map((r) => r.name);
}

/** Parses a log filter or answers 400; null when it answered. */
async function logFilter(ctx: Context, db: Db): Promise<LogFilter | null> {
  try {
    return await parseLogFilter(db, ctx.query);
  } catch (err) {
    if (err instanceof FilterError) { problem(ctx, 400, err.message); return null; }
    throw err;
  }
}

async function optionalConnection(ctx: Context, db: Db, name: string | undefined): Promise<number | undefined | null> {
  if (!name) return undefined;
  try { return await connectionIdOf(db, name); } catch (err) {
    if (err instanceof FilterError) { problem(ctx, 404, err.message); return null; }
    throw err;
  }
}

const int = (v: string | undefined) => (v && /^\d+$/.test(v) ? Number(v) : undefined);

/** Open event streams and the server each one came in on. */
export type Streams = Map<ServerResponse, Server | undefined>;

/**
 * Ends the event streams of a server that stopped listening. A shutdown closes the HTTP server before the
 * roles' onStop steps run, and an open stream would otherwise hold that close for its whole grace period.
 */
function watchStreams(streams: Streams): NodeJS.Timeout {
  const timer = setInterval(() => {
    for (const [stream, server] of streams) if (server && !server.listening) stream.end();
  }, 250);
  timer.unref();
  return timer;
}

export function consoleRouters(deps: ConsoleDeps): { open: Router; guarded: Router; streams: Streams; stop: () => void } {
  const { db, boss, log } = deps;
  const streams: Streams = new Map();
  const watcher = watchStreams(streams);
  const pc = (ctx: Context, extra: Partial<pages.PageContext> = {}): pages.PageContext => ({ access: accessMode(deps.config, deps.demo()), ...extra, ...noticeOf(ctx) });

  // --- public: assets and login ---
  const open = new Router();
  open.get('/assets/console.css', (ctx) => { ctx.type = 'text/css'; ctx.set('Cache-Control', 'max-age=300'); ctx.body = css; });
  open.get('/assets/console.js', (ctx) => { ctx.type = 'application/javascript'; ctx.set('Cache-Control', 'max-age=300'); ctx.body = js; });
  open.get('/login', (ctx) => page(ctx, pages.loginPage(undefined, safeNext(ctx.query.next))));
  open.post('/login', bodyParser({ enableTypes: ['form'], formLimit: '8kb' }), (ctx) => {
    const body = (ctx.request.body ?? {}) as Record<string, string>;
    const next = safeNext(body.next);
    if (!tokenMatches(deps.config, String(body.token ?? ''))) {
      return page(ctx, pages.loginPage(deps.config.OPERATOR_TOKEN ? 'That is not the operator token.' : 'Logging in needs OPERATOR_TOKEN to be set.', next), 401);
    }
    ctx.cookies.set('cs_operator', sessionCookie(deps.config), { httpOnly: true, sameSite: 'strict', secure: ctx.secure, path: '/', overwrite: true });
    ctx.redirect(next);
  });
  open.post('/logout', (ctx) => {
    ctx.cookies.set('cs_operator', null, { path: '/' });
    ctx.redirect('/login');
  });

  // --- guarded: everything else ---
  const guarded = new Router();
  guarded.use(guard(deps));

  guarded.get('/metrics', async (ctx) => {
    await refreshGauges(db).catch((err) => log.warn({ err }, 'refreshing gauges for /metrics failed'));
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });

  // Pages
  guarded.get('/', async (ctx) => {
    const o = await overview(db);
    const series = await Promise.all(o.connections.map(async (c) => ({ connection: c.name, ...(await chartSeries(db, c.id)) })));
    page(ctx, pages.overviewPage(pc(ctx), o.connections, series, o.queues));
  });
  guarded.get('/tail', (ctx) => { ctx.redirect(`/logs${ctx.querystring ? `?${ctx.querystring}` : ''}`); });
  guarded.get('/logs', async (ctx) => {
    const q = flatQuery(ctx);
    let filter: LogFilter;
    try { filter = await parseLogFilter(db, ctx.query); } catch (err) {
      if (!(err instanceof FilterError)) throw err;
      return page(ctx, pages.logPage(pc(ctx, { problem: err.message }), { rows: [], connections: await connectionNames(db), query: q, stream: null, older: null }), 400);
    }
    const latest = await latestSyncLogId(db); // read first: nothing written after it can be missed below
    const rows = await querySyncLog(db, { ...filter, afterId: undefined, limit: filter.limit ?? 200 });
    const params = new URLSearchParams();
    for (const k of ['connection', 'resource', 'sku', 'outcome', 'record', 'action'] as const) if (q[k]) params.set(k, q[k]);
    // The tail follows on from the newest entry shown (or the newest of all when none matched), so it
    // neither repeats nor misses what was written since this page was read.
    const after = rows.length ? Math.max(...rows.map((r) => r.id)) : latest;
    const stream = filter.to ? null : `/api/tail?${new URLSearchParams([...params, ['after', String(after)]])}`;
    const last = rows[rows.length - 1];
    let older: string | null = null;
    if (last && rows.length === (filter.limit ?? 200)) {
      const next = new URLSearchParams(params);
      if (q.from) next.set('from', q.from);
      next.set('to', (await exactTime(db, last.id)) ?? last.at.toISOString());
      next.set('before', String(last.id));
      if (q.limit) next.set('limit', q.limit);
      older = `/logs?${next}`;
    }
    page(ctx, pages.logPage(pc(ctx), { rows, connections: await connectionNames(db), query: q, stream, older }));
  });
  guarded.get('/deliveries', async (ctx) => {
    const q = flatQuery(ctx);
    const connectionId = await optionalConnection(ctx, db, q.connection);
    if (connectionId === null) return page(ctx, pages.notFoundPage(pc(ctx), `No connection named ${q.connection}.`), 404);
    const rows = await listDeliveries(db, { connectionId, state: (deliveryStates as readonly string[]).includes(q.state ?? '') ? q.state : undefined, resource: q.resource || undefined, before: int(q.before) });
    let older: string | null = null;
    if (rows.length === 100) {
      const next = new URLSearchParams(Object.entries(q).filter(([k, v]) => v && ['connection', 'state', 'resource'].includes(k)));
      next.set('before', String(rows[rows.length - 1]!.id));
      older = `/deliveries?${next}`;
    }
    page(ctx, pages.deliveriesPage(pc(ctx), rows, await connectionNames(db), q, older));
  });
  guarded.post('/deliveries/:id/replay', async (ctx) => {
    const id = int(ctx.params.id);
    const done = id === undefined ? null : await replayDelivery(db, boss, id);
    ctx.redirect(done ? `/deliveries?replayed=${id}` : '/deliveries?missing=1');
  });
  guarded.get('/dead-letters', async (ctx) => {
    const q = flatQuery(ctx);
    const [letters, queues] = await Promise.all([listDeadLetters(db, { queue: q.queue || undefined }), queueDepths(db)]);
    page(ctx, pages.deadLettersPage(pc(ctx), letters, queues.filter((x) => x.queue.endsWith('-dead'))));
  });
  guarded.post('/dead-letters/:queue/:id/replay', async (ctx) => {
    try {
      const done = await replayDeadLetter(db, boss, ctx.params.queue!, ctx.params.id!);
      ctx.redirect(done ? `/dead-letters?replayed=${encodeURIComponent(ctx.params.id!)}` : '/dead-letters?missing=1');
    } catch (err) {
      if (!(err instanceof ReplayError)) throw err;
      ctx.redirect('/dead-letters?missing=1');
    }
  });
  guarded.get('/variants', async (ctx) => {
    const q = flatQuery(ctx);
    const connectionId = await optionalConnection(ctx, db, q.connection);
    if (connectionId === null) return page(ctx, pages.notFoundPage(pc(ctx), `No connection named ${q.connection}.`), 404);
    const searching = Boolean(q.sku || int(q.id) !== undefined);
    const found = searching ? await findVariants(db, { connectionId, sku: q.sku || undefined, id: int(q.id) }) : null;
    if (found?.length === 1) return ctx.redirect(`/variants/${encodeURIComponent(found[0]!.connection)}/${found[0]!.id}`);
    page(ctx, pages.variantSearchPage(pc(ctx), q, found));
  });
  guarded.get('/variants/:connection/:id', async (ctx) => {
    const connectionId = await optionalConnection(ctx, db, ctx.params.connection);
    const id = int(ctx.params.id);
    const record = connectionId && id !== undefined ? await variantRecord(db, connectionId, id) : null;
    if (!record) return page(ctx, pages.notFoundPage(pc(ctx), `No variant ${ctx.params.id} on connection ${ctx.params.connection}.`), 404);
    page(ctx, pages.variantPage(pc(ctx), record));
  });

  // JSON API
  guarded.get('/api/overview', async (ctx) => { ctx.body = await overview(db); });
  guarded.get('/api/queues', async (ctx) => { ctx.body = { queues: await queueDepths(db) }; });
  guarded.get('/api/connections/:connection/series', async (ctx) => {
    const connectionId = await optionalConnection(ctx, db, ctx.params.connection);
    if (!connectionId) return;
    const minutes = Math.min(int(flatQuery(ctx).minutes) ?? 60, 24 * 60);
    ctx.body = await chartSeries(db, connectionId, Math.max(minutes, 1));
  });
  guarded.get('/api/status', async (ctx) => {
    ctx.body = { connections: await connectionOverviews(db), queues: await queueDepths(db) };
  });
  guarded.get('/api/logs', async (ctx) => {
    const filter = await logFilter(ctx, db);
    if (!filter) return;
    const entries = await querySyncLog(db, filter);
    const last = entries[entries.length - 1];
    const full = entries.length === Math.min(Math.max(filter.limit ?? 100, 1), 1000);
    let next: { after: number } | { to: string; before: number } | null = null;
    if (full && last) next = filter.afterId !== undefined ? { after: last.id } : { to: (await exactTime(db, last.id)) ?? last.at.toISOString(), before: last.id };
    ctx.body = { entries, next };
  });
  guarded.get('/api/tail', (ctx) => tailStream(ctx, deps, streams));
  guarded.get('/api/deliveries', async (ctx) => {
    const q = flatQuery(ctx);
    if (q.state && !(deliveryStates as readonly string[]).includes(q.state)) return problem(ctx, 400, `state must be one of ${deliveryStates.join(', ')}`);
    const connectionId = await optionalConnection(ctx, db, q.connection);
    if (connectionId === null) return;
    ctx.body = { deliveries: await listDeliveries(db, { connectionId, state: q.state || undefined, resource: q.resource || undefined, objectId: int(q.object), before: int(q.before), limit: int(q.limit) }) };
  });
  guarded.get('/api/deliveries/:id', async (ctx) => {
    const id = int(ctx.params.id);
    const row = id === undefined ? undefined : await db.selectFrom('webhook_deliveries as d').innerJoin('connections as c', 'c.id', 'd.connection_id')
      .selectAll('d').select('c.name as connection').where('d.id', '=', id).executeTakeFirst();
    if (!row) return problem(ctx, 404, `no delivery ${ctx.params.id}`);
    ctx.body = { delivery: row };
  });
  guarded.post('/api/deliveries/:id/replay', async (ctx) => {
    const id = int(ctx.params.id);
    const done = id === undefined ? null : await replayDelivery(db, boss, id);
    if (!done) return problem(ctx, 404, `no delivery ${ctx.params.id}`);
    ctx.status = 202;
    ctx.body = { replayed: { delivery: id, jobId: done.jobId } };
  });
  guarded.get('/api/dead-letters', async (ctx) => {
    const q = flatQuery(ctx);
    const connectionId = await optionalConnection(ctx, db, q.connection);
    if (connectionId === null) return;
    ctx.body = { deadLetters: await listDeadLetters(db, { queue: q.queue || undefined, connectionId, limit: int(q.limit) }) };
  });
  guarded.post('/api/dead-letters/:queue/:id/replay', async (ctx) => {
    try {
      const done = await replayDeadLetter(db, boss, ctx.params.queue!, ctx.params.id!);
      if (!done) return problem(ctx, 404, `no dead letter ${ctx.params.id} waiting in ${ctx.params.queue}`);
      ctx.status = 202;
      ctx.body = { replayed: { deadLetter: ctx.params.id, queue: ctx.params.queue, jobId: done.jobId } };
    } catch (err) {
      if (err instanceof ReplayError) return problem(ctx, 400, err.message);
      throw err;
    }
  });
  guarded.get('/api/variants', async (ctx) => {
    const q = flatQuery(ctx);
    if (!q.sku && int(q.id) === undefined) return problem(ctx, 400, 'give sku= or id=');
    const connectionId = await optionalConnection(ctx, db, q.connection);
    if (connectionId === null) return;
    ctx.body = { variants: await findVariants(db, { connectionId, sku: q.sku || undefined, id: int(q.id) }) };
  });
  guarded.get('/api/variants/:connection/:id', async (ctx) => {
    const connectionId = await optionalConnection(ctx, db, ctx.params.connection);
    if (connectionId === null) return;
    const id = int(ctx.params.id);
    const record = connectionId && id !== undefined ? await variantRecord(db, connectionId, id) : null;
    if (!record) return problem(ctx, 404, `no variant ${ctx.params.id} on connection ${ctx.params.connection}`);
    ctx.body = record;
  });

  return { open, guarded, streams, stop: () => clearInterval(watcher) };
}

function noticeOf(ctx: Context): Partial<pages.PageContext> {
  const q = flatQuery(ctx);
  if (q.replayed) return { notice: `Replayed ${q.replayed}: it is queued again.` };
  if (q.missing) return { problem: 'Nothing to replay: it is gone or no longer waiting.' };
  return {};
}

/** Only local paths: a login must not redirect to another site. */
function safeNext(v: unknown): string {
  const s = typeof v === 'string' ? v : '';
  return s.startsWith('/') && !s.startsWith('//') && !s.startsWith('/\\') ? s : '/';
}

/**
 * Server-sent events of new sync-log entries matching the query's filters. Resumes after Last-Event-ID
 * (or ?after=ID, which the page passes on its first connect). The event id is the largest entry id sent
 * on this stream, so a late-committing entry with a smaller id never makes a reconnect go backwards.
 */
async function tailStream(ctx: Context, deps: ConsoleDeps, streams: Streams): Promise<void> {
  const filter = await logFilter(ctx, deps.db);
  if (!filter) return;
  const resumeRaw = ctx.get('last-event-id') || flatQuery(ctx).after;
  const resume = resumeRaw && /^\d+$/.test(resumeRaw) ? Number(resumeRaw) : undefined;
  const live: LogFilter = { ...filter, afterId: undefined, limit: undefined, from: undefined, to: undefined };

  // The response is written directly (not as a Koa body stream): a browser leaving the page is the normal
  // end of an event stream, not an error to report.
  const res = ctx.res;
  ctx.respond = false;
  streams.set(res, (ctx.req.socket as Socket & { server?: Server }).server);
  ctx.req.socket.setTimeout(0);
  ctx.req.socket.setNoDelay(true);
  ctx.req.socket.setKeepAlive(true);
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    'X-Accel-Buffering': 'no',
    // The stream is the connection's only use: when it ends, the socket goes too (no idle keep-alive
    // connection left to hold a server close).
    Connection: 'close',
  });
  const send = (text: string) => { if (!res.writableEnded && !res.destroyed) res.write(text); };

  let maxSent = resume ?? 0;
  const write = (row: LogRow) => {
    maxSent = Math.max(maxSent, row.id);
    send(`id: ${maxSent}\nevent: log\ndata: ${JSON.stringify(row)}\n\n`);
  };
  let buffer: LogRow[] | null = [];
  const unsubscribe = deps.tail.subscribe(live, (row) => { if (buffer) buffer.push(row); else write(row); });
  const heartbeat = setInterval(() => send(': keep-alive\n\n'), HEARTBEAT_MS);
  heartbeat.unref();
  const close = () => {
    clearInterval(heartbeat);
    unsubscribe();
    streams.delete(res);
    if (!res.writableEnded) res.end();
  };
  res.on('close', close);
  send('retry: 2000\n\n');
  try {
    const sent = new Set<number>();
    if (resume !== undefined) {
      for (const row of await querySyncLog(deps.db, { ...live, afterId: resume, limit: 1000 })) { write(row); sent.add(row.id); }
    }
    const pending = buffer;
    buffer = null;
    for (const row of pending) if (!sent.has(row.id)) write(row);
  } catch (err) {
    deps.log.warn({ err }, 'tail catch-up failed');
    close();
  }
}
