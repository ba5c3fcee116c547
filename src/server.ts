// The HTTP server every long-running role shares: health endpoints here, routers from the roles.
import http from 'node:http';
import Koa, { type Context, type Next } from 'koa';
import Router from '@koa/router';
import type pg from 'pg';
import type { Config } from './config.ts';
import type { ClientState } from './api/client-state.ts';
import { databaseReadiness, type Db, type OpenDatabase } from './db/index.ts';
import { refusedBody, refusedPath, refusedQuery } from './inputs.ts';
import type { Logger } from './log.ts';
import type { Boss } from './queue/boss.ts';
import { serverSpans } from './telemetry/http.ts';

export interface Server {
  app: Koa;
  http: http.Server;
  port: number;
  /** Stop accepting, let in-flight requests finish (up to graceMs), then close. */
  close(graceMs?: number): Promise<void>;
}

/** Answers a JSON API request with `{error}` and any extra fields (field problems, details). */
export function problem(ctx: Context, status: number, error: string, extra?: Record<string, unknown>): void {
  ctx.status = status;
  ctx.body = { error, ...extra };
}

export type ReadinessCheck = () => Promise<string | null>;

/**
 * What a role mounts onto: the process's config, logger, database, pg-boss, the shared Koa app and what its API
 * clients share (src/runtime.ts builds it, with the sync workers' memory; a feature's role never imports it).
 */
export interface ProcessRuntime {
  config: Config;
  log: Logger;
  database: OpenDatabase;
  boss: Boss;
  app: Koa;
  router: Router;
  /** What this runtime's API clients share: one budget gate per connection, the token key. */
  clients: ClientState;
  /** Set once the server listens: where the service should deliver webhooks. */
  publicUrl: string;
  /**
   * The built-in sandbox when this process runs it (demo mode): where it listens. Without OPERATOR_TOKEN the
   * console is open on localhost only while that sandbox is the only connection (src/console/auth.ts).
   */
  demo: false | { baseUrl: string; channel?: { url: string; posts(): DemoPost[] } | null };
  readiness: ReadinessCheck[];
  /** Run after the HTTP server listens (publicUrl is known then). */
  afterListen: (() => Promise<void>)[];
  /** Run at shutdown, in reverse order of registration, before pg-boss stops and the database closes. */
  onStop: (() => Promise<void>)[];
  /** Serves the app on `port` (0: a free one) and sets publicUrl; the caller runs afterListen then. */
  listen(port: number): Promise<Server>;
}

/** A POST the demo's channel endpoint received (src/demo/channel-endpoint.ts), for the console's Demo channel page. */
export interface DemoPost {
  at: string;
  /** Its webhook-id header. */
  id: string;
  type: string;
  /** Whether the `standardwebhooks` package verified its signature; `problem` says why not. */
  verified: boolean;
  problem: string | null;
  payload: unknown;
}

/** What a feature's routes use of a process's runtime (src/runtime.ts builds it): routes never import the runtime. */
export interface RouteDeps {
  database: { db: Db };
  config: Config;
  boss: Boss;
}

class InputRefused extends Error {}

/**
 * The one boundary every request passes before any route sees it (src/inputs.ts says what it refuses): a bad
 * path or query is answered 400 at once. Bodies are parsed by each route (koa-bodyparser, with the route's types
 * and limits), so their check sits where every parser puts what it parsed, request.body: a refused body is
 * answered 400 instead of reaching the handler.
 */
function inputBoundary(app: Koa) {
  const bodies = new WeakMap<object, unknown>();
  Object.defineProperty(app.request, 'body', {
    get(this: Koa.Request) {
      return bodies.get(this);
    },
    set(this: Koa.Request, body: unknown) {
      const refused = refusedBody(body, !!this.is('urlencoded'));
      if (refused) throw new InputRefused(refused);
      bodies.set(this, body);
    },
  });
  return async (ctx: Context, next: Next) => {
    const refused = refusedPath(ctx.path) ?? refusedQuery(ctx.query);
    if (refused) return problem(ctx, 400, refused);
    try {
      await next();
    } catch (err) {
      if (err instanceof InputRefused) return problem(ctx, 400, err.message);
      throw err;
    }
  };
}

export function createApp(pool: pg.Pool, log: Logger, extraChecks: ReadinessCheck[] = []): { app: Koa; router: Router } {
  const app = new Koa();
  app.proxy = true;
  app.on('error', (err: Error & { status?: number; code?: string }) => {
    // A client that timed out or went away is the client's problem, not ours: not an error line each.
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'ECONNRESET' || err.message === 'request aborted') {
      log.debug({ err: err.message }, 'request cut short');
    } else if (!err.status || err.status >= 500) log.error({ err }, 'http error');
  });
  app.use(serverSpans());
  app.use(inputBoundary(app));
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { ok: true };
  });
  router.get('/readyz', async (ctx) => {
    const reasons = (await Promise.all([() => databaseReadiness(pool), ...extraChecks].map((c) => c()))).filter(Boolean);
    ctx.status = reasons.length ? 503 : 200;
    ctx.body = reasons.length ? { ok: false, reasons } : { ok: true };
  });
  app.use(router.routes()).use(router.allowedMethods());
  return { app, router };
}

/** A server that listens before its app exists: see listenStarting. */
export interface StartingServer extends Server {
  /** Every request from now on goes to `app`. */
  serve(app: Koa): void;
}

/**
 * Listens at once, before the app exists (a process starting, its database maybe away): until `serve(app)`,
 * /healthz answers 200, /readyz 503 with `reason()`, and anything else 503 with Retry-After, so a delivery that
 * arrives meanwhile is retried by its sender, never refused for good.
 */
export async function listenStarting(
  port: number,
  host: string,
  reason: () => string,
  opts: { requestTimeoutMs?: number } = {},
): Promise<StartingServer> {
  let handle: http.RequestListener = (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const [status, body] =
      path === '/healthz'
        ? [200, { ok: true }]
        : path === '/readyz'
          ? [503, { ok: false, reasons: [reason()] }]
          : [503, { error: reason() }];
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...(status === 503 ? { 'retry-after': '5' } : {}) });
    res.end(JSON.stringify(body));
  };
  const server = await listenWith(new Koa(), (req, res) => handle(req, res), port, host, opts);
  let closing: Promise<void> | undefined;
  const close = server.close;
  return Object.assign(server, {
    serve(app: Koa) {
      server.app = app;
      handle = app.callback();
    },
    // Closed by whichever comes first: the runtime that serves on it, or the process's shutdown.
    close: (graceMs?: number) => (closing ??= close(graceMs)),
  });
}

export function listen(app: Koa, port: number, host: string, opts: { requestTimeoutMs?: number } = {}): Promise<Server> {
  return listenWith(app, app.callback(), port, host, opts);
}

function listenWith(
  app: Koa,
  handler: http.RequestListener,
  port: number,
  host: string,
  opts: { requestTimeoutMs?: number },
): Promise<Server> {
  // Node checks request timeouts every connectionsCheckingInterval (30 s by default): check every second.
  const server = http.createServer({ connectionsCheckingInterval: 1000 }, handler);
  // Longer than the idle timeout of the senders in front of us, so a sender never reuses a socket we have just
  // closed (a reset, and a delivery waiting for its retry): AWS load balancers 60 s, nginx upstreams 75 s, Go's
  // http.Transport 90 s; Node's undici 4 s and the sandbox 30 s.
  server.keepAliveTimeout = 95_000;
  // A sender that trickles its request (a slow-body attack, a stuck client) holds a socket only this long
  // (the service gives up on a delivery after 10 s anyway). Responses (SSE streams) are not limited.
  const requestTimeout = opts.requestTimeoutMs ?? 12_000;
  server.requestTimeout = requestTimeout;
  server.headersTimeout = Math.min(10_000, requestTimeout);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const bound = (server.address() as { port: number }).port;
      resolve({
        app,
        http: server,
        port: bound,
        close: (graceMs = 10_000) =>
          new Promise<void>((done) => {
            const timer = setTimeout(() => server.closeAllConnections(), graceMs);
            // Keep-alive sockets that finish their request while we wait are closed as soon as they go idle.
            const idle = setInterval(() => server.closeIdleConnections(), 100);
            timer.unref();
            server.close(() => {
              clearTimeout(timer);
              clearInterval(idle);
              done();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
}
