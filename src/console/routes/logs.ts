// The sync log: its page, /api/logs pages, and the live tail as server-sent events.
import { idOf } from '../../inputs.ts';
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { describe } from '../pages/history.ts';
import { logPage } from '../pages/logs.ts';
import {
  exactTime,
  FilterError,
  latestSyncLogId,
  logEntry,
  parseLogFilter,
  querySyncLog,
  type LogFilter,
  type LogRow,
} from '../synclog.ts';
import { connectionNames, flatQuery, page, pageContext, type ConsoleDeps } from '../web.ts';
import { problem } from '../../server.ts';
import { z } from 'zod';
import { documented } from '../../openapi/registry.ts';

/** The filters of /api/logs and /api/tail (parseLogFilter in ../synclog.ts). */
const logQuery = z.object({
  connection: z.string().optional().describe('Connection name or id.'),
  resource: z.string().optional(),
  sku: z.string().optional(),
  action: z.string().optional(),
  outcome: z.enum(['ok', 'skipped', 'error', 'warning']).optional(),
  record: z.string().optional().describe('Record id.'),
  after: z.string().optional().describe('Entries after this id, oldest first (a tail resumes after it too).'),
  limit: z.string().optional().describe('1 to 1000 (default 100).'),
  from: z.string().optional().describe('ISO timestamp: entries at or after it.'),
  to: z.string().optional().describe('ISO timestamp: entries before it (with `before`, the next older page).'),
  before: z.string().optional().describe('With `to`: entries before this id at that time.'),
});

const HEARTBEAT_MS = 15_000;
/** Event streams one console process serves at once: each holds a socket and a tail subscription. */
export const MAX_TAIL_STREAMS = 50;
/**
 * What may wait in a stream's buffer for a client that does not read (a frozen tab, a stuck proxy) before the
 * stream is cut: its EventSource reconnects with Last-Event-ID and catches up from the database.
 */
const MAX_BUFFERED_BYTES = 1 << 20;
/** Entries a reconnecting stream is sent from the database before it follows live. */
const CATCH_UP_ROWS = 1000;

/** Open event streams and the server each one came in on. */
export type Streams = Map<ServerResponse, Server | undefined>;

/** Parses a log filter or answers 400; null when it answered. */
async function logFilter(ctx: Context, deps: ConsoleDeps): Promise<LogFilter | null> {
  try {
    return await parseLogFilter(deps.db, ctx.query);
  } catch (err) {
    if (err instanceof FilterError) {
      problem(ctx, 400, err.message);
      return null;
    }
    throw err;
  }
}

export function logRoutes(r: Router, deps: ConsoleDeps, streams: Streams): void {
  const { db } = deps;
  const api = documented(r);
  api.page.get('/tail', { role: 'viewer' }, (ctx) => {
    ctx.redirect(`/logs${ctx.querystring ? `?${ctx.querystring}` : ''}`);
  });
  api.page.get('/logs', { role: 'viewer' }, async (ctx) => {
    const q = flatQuery(ctx);
    let filter: LogFilter;
    try {
      filter = await parseLogFilter(db, ctx.query);
    } catch (err) {
      if (!(err instanceof FilterError)) throw err;
      return page(
        ctx,
        logPage(pageContext(deps, ctx, { problem: err.message }), {
          rows: [],
          connections: await connectionNames(db),
          query: q,
          stream: null,
          older: null,
        }),
        400,
      );
    }
    const latest = await latestSyncLogId(db); // read first: nothing written after it can be missed below
    const rows = await querySyncLog(db, { ...filter, afterId: undefined, limit: filter.limit ?? 200 });
    const params = new URLSearchParams();
    for (const k of ['connection', 'resource', 'sku', 'outcome', 'record', 'action'] as const) if (q[k]) params.set(k, q[k]);
    // The tail follows on from the newest entry shown (or the newest of all when none matched), so it
    // neither repeats nor misses what was written since this page was read.
    const after = rows.length ? Math.max(...rows.map((x) => x.id)) : latest;
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
    page(ctx, logPage(pageContext(deps, ctx), { rows, connections: await connectionNames(db), query: q, stream, older }));
  });
  api.get(
    '/api/logs',
    {
      role: 'viewer',
      summary: 'Sync-log entries, newest first (or oldest first after a cursor)',
      query: logQuery,
      answers: {
        200: z.object({
          entries: z.array(logEntry),
          next: z
            .union([z.object({ after: z.number().int() }), z.object({ to: z.string(), before: z.number().int() })])
            .nullable()
            .describe('The query for the next page (null on the last).'),
        }),
      },
      problems: [400, 404],
    },
    async (ctx) => {
      const filter = await logFilter(ctx, deps);
      if (!filter) return;
      const entries = await querySyncLog(db, filter);
      const last = entries[entries.length - 1];
      const full = entries.length === Math.min(Math.max(filter.limit ?? 100, 1), 1000);
      let next: { after: number } | { to: string; before: number } | null = null;
      if (full && last)
        next =
          filter.afterId !== undefined
            ? { after: last.id }
            : { to: (await exactTime(db, last.id)) ?? last.at.toISOString(), before: last.id };
      ctx.body = { entries, next };
    },
  );
  api.get(
    '/api/tail',
    {
      role: 'viewer',
      summary: 'The live tail: new sync-log entries as server-sent events',
      description:
        "Each `log` event's data is a LogEntry plus `summary`, the sentence the console shows; its id the largest entry id sent. " +
        'Resumes after Last-Event-ID (or ?after=).',
      query: logQuery,
      answers: { 200: { media: 'text/event-stream', description: 'Server-sent events (`event: log`).' } },
      problems: [400, 404, 503],
    },
    (ctx) => tailStream(ctx, deps, streams),
  );
}

/**
 * Ends the event streams of a server that stopped listening. A shutdown closes the HTTP server before the
 * roles' onStop steps run, and an open stream would otherwise hold that close for its whole grace period.
 */
export function watchStreams(streams: Streams): NodeJS.Timeout {
  const timer = setInterval(() => {
    for (const [stream, server] of streams) if (server && !server.listening) stream.end();
  }, 250);
  timer.unref();
  return timer;
}

/**
 * Server-sent events of new sync-log entries matching the query's filters. Resumes after Last-Event-ID
 * (or ?after=ID, which the page passes on its first connect). The event id is the largest entry id sent
 * on this stream, so a late-committing entry with a smaller id never makes a reconnect go backwards.
 * Each event is the /api/logs entry plus `summary`, the sentence the page shows.
 */
async function tailStream(ctx: Context, deps: ConsoleDeps, streams: Streams): Promise<void> {
  const filter = await logFilter(ctx, deps);
  if (!filter) return;
  if (streams.size >= MAX_TAIL_STREAMS) {
    ctx.set('Retry-After', '10');
    return problem(ctx, 503, `${MAX_TAIL_STREAMS} live-tail streams are open on this console already; try again later`);
  }
  const resumeRaw = ctx.get('last-event-id') || flatQuery(ctx).after;
  const resume = idOf(resumeRaw);
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
  // A client that stops reading is cut once MAX_BUFFERED_BYTES wait for it, before a write rather than after,
  // so one large entry alone never cuts a stream (a reconnect would meet it again).
  const send = (text: string) => {
    if (res.writableEnded || res.destroyed) return;
    if (res.writableLength > MAX_BUFFERED_BYTES)
      res.destroy(); // 'close' below cleans up
    else res.write(text);
  };
  let maxSent = resume ?? 0;
  const write = (row: LogRow) => {
    maxSent = Math.max(maxSent, row.id);
    send(`id: ${maxSent}\nevent: log\ndata: ${JSON.stringify({ ...row, summary: describe(row) })}\n\n`);
  };
  // Live entries wait here while the catch-up is written (at most as many as a catch-up reads).
  let buffer: LogRow[] | null = [];
  const unsubscribe = deps.tail.subscribe(live, (row) => {
    if (!buffer) write(row);
    else if (buffer.push(row) > CATCH_UP_ROWS) res.destroy();
  });
  const heartbeat = setInterval(() => send(': keep-alive\n\n'), HEARTBEAT_MS);
  heartbeat.unref();
  const close = () => {
    clearInterval(heartbeat);
    unsubscribe();
    streams.delete(res);
    if (!res.writableEnded) res.end();
  };
  res.on('close', close);
  // The catch-up is written at the client's pace: all at once it would be cut as a client that does not read.
  const drained = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done).off('close', done);
        resolve();
      };
      res.on('drain', done).on('close', done);
    });
  const sent = new Set<number>();
  const writeAll = async (rows: LogRow[]) => {
    for (const row of rows) {
      if (res.destroyed) return;
      if (sent.has(row.id)) continue;
      write(row);
      sent.add(row.id);
      if (res.writableNeedDrain) await drained();
    }
  };
  send('retry: 2000\n\n');
  try {
    if (resume !== undefined) await writeAll(await querySyncLog(deps.db, { ...live, afterId: resume, limit: CATCH_UP_ROWS }));
    while (buffer.length) await writeAll(buffer.splice(0));
    buffer = null;
  } catch (err) {
    deps.log.warn({ err }, 'tail catch-up failed');
    close();
  }
}
