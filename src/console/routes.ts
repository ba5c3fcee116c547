// The console's HTTP surface, assembled from one module per page family (src/console/routes/): pages,
// /api JSON, the SSE live tail and /metrics, all behind operator auth (public: /login, /logout and the two
// static assets). Pages and API share the query functions, so the console shows nothing the API cannot answer.
import Router from '@koa/router';
import type { Context, Next } from 'koa';
import type { Actor, Caller } from '../audit.ts';
import { auditRequest } from './audit.ts';
import { allows, leastRole } from './roles.ts';
import { accessMode, accessOf, clientAddress, OperatorAccess, requireKnownHost } from './auth.ts';
import { closedPage, loginPage, NOT_FOUND, notFoundPage } from './pages/layout.ts';
import { auditRoutes } from './routes/audit.ts';
import { tokenRoutes } from './routes/tokens.ts';
import { channelOrderRoutes } from './routes/channel-orders.ts';
import { channelRoutes } from './routes/channels.ts';
import { connectionRoutes } from './routes/connections.ts';
import { deliveryRoutes } from './routes/deliveries.ts';
import { demoChannelRoutes } from './routes/demo-channel.ts';
import { logRoutes, watchStreams, type Streams } from './routes/logs.ts';
import { operationRoutes } from './routes/operations.ts';
import { orderRoutes } from './routes/orders.ts';
import { overviewRoutes } from './routes/overview.ts';
import { sessionRoutes } from './routes/session.ts';
import { variantRoutes } from './routes/variants.ts';
import { page, type ConsoleDeps } from './web.ts';
import { problem } from '../server.ts';
import { AnswerChecker, answerCheck } from '../openapi/check.ts';
import { type OpenApiDocument, openApiAnswer, openApiDocument } from '../openapi/document.ts';
import { documented, operationsOf } from '../openapi/registry.ts';

export type { ConsoleDeps } from './web.ts';
export type { Streams } from './routes/logs.ts';

const wantsApi = (ctx: Context) => ctx.path.startsWith('/api/') || ctx.path === '/metrics';

/** Operator auth for every guarded route; refused page requests get the login form instead of JSON. */
function guard(
  access: OperatorAccess,
  { db, config }: Pick<ConsoleDeps, 'db' | 'config'>,
  router: Router,
  routeOf: (ctx: Context) => string,
) {
  const auth = access.guard();
  return async (ctx: Context, next: Next) => {
    // A cookie or an open demo console must not let another site's page trigger an action.
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      const origin = ctx.get('origin');
      let foreign = ctx.get('sec-fetch-site') === 'cross-site';
      if (origin && origin !== 'null') {
        try {
          foreign ||= new URL(origin).host !== ctx.host;
        } catch {
          foreign = true;
        }
      }
      if (foreign) return problem(ctx, 403, 'cross-site request refused');
    }
    let passed = false;
    await auth(ctx, async () => {
      passed = true;
      // Each route's least role, given where it was mounted (roles.ts); a route mounted without one is refused to everyone.
      const actor = ctx.state.actor as Actor;
      ctx.state.caller = {
        actor,
        source: ctx.path.startsWith('/api/') ? 'api' : 'console',
        address: clientAddress(ctx, config.TRUST_PROXY),
      } satisfies Caller;
      const route = routeOf(ctx);
      const need = leastRole(router, ctx.method, route);
      if (!need) return problem(ctx, 403, `${ctx.method} ${route} was mounted without a role (src/console/roles.ts): refused to everyone`);
      if (!allows(actor.role, need))
        return problem(ctx, 403, `${ctx.method} ${route} needs the ${need} role; ${actor.name} has ${actor.role}`, {
          role: actor.role,
          needs: need,
        });
      return next();
    });
    if (passed) await auditRequest(ctx, db, config);
    if (passed || ctx.status !== 401 || wantsApi(ctx) || !ctx.accepts('html')) return;
    page(ctx, accessOf(ctx) === 'closed' ? closedPage() : loginPage(undefined, ctx.originalUrl, config.OIDC_ISSUER), 401);
  };
}

/**
 * What no route answered (Koa's own answer is a bare "Not Found"): a JSON problem for /api, /metrics and a client
 * that takes no HTML, else a console page with a way back. Mounted before the routers, it sees what they leave.
 */
function notFound(deps: ConsoleDeps) {
  return async (ctx: Context, next: Next) => {
    await next();
    if (ctx.status !== 404 || ctx.body != null) return;
    if (wantsApi(ctx) || !ctx.accepts('html')) return problem(ctx, 404, `no route for ${ctx.method} ${ctx.path}`);
    page(ctx, notFoundPage({ access: await accessMode(deps) }, NOT_FOUND.page), 404);
  };
}

export function consoleRouters(deps: ConsoleDeps): {
  open: Router;
  guarded: Router;
  notFound: (ctx: Context, next: Next) => Promise<void>;
  streams: Streams;
  stop: () => void;
} {
  const streams: Streams = new Map();
  const watcher = watchStreams(streams);
  const access = new OperatorAccess(deps);
  const open = new Router();
  open.use(requireKnownHost(deps.publicUrl));
  sessionRoutes(open, access, deps);
  const guarded = new Router();
  // The route a request is for: the router's own match (its route layers, not this guard's), for its role.
  const routeOf = (ctx: Context) =>
    guarded
      .match(ctx.path, ctx.method)
      .pathAndMethod.filter((l) => l.methods.length)
      .at(-1)
      ?.path.toString() ?? ctx.path;
  // The OpenAPI document of every route declared on this router (and the webhook endpoint), built once all are
  // mounted (the stock and push areas mount theirs after this returns, src/console/role.ts).
  let doc: OpenApiDocument | undefined;
  let checker: AnswerChecker | undefined;
  const document = () => (doc ??= openApiDocument(operationsOf(guarded)));
  // First, so it also sees the guard's own answers.
  if (deps.config.OPENAPI_CHECK_ANSWERS) guarded.use(answerCheck(() => (checker ??= new AnswerChecker(document())), routeOf, deps.log));
  guarded.use(guard(access, deps, guarded, routeOf));
  documented(guarded).get(
    '/api/openapi.json',
    { role: 'viewer', summary: 'This OpenAPI document: every /api route and the webhook endpoint', answers: { 200: openApiAnswer } },
    (ctx) => {
      ctx.body = document();
    },
  );
  overviewRoutes(guarded, deps);
  logRoutes(guarded, deps, streams);
  deliveryRoutes(guarded, deps);
  variantRoutes(guarded, deps);
  channelRoutes(guarded, deps);
  channelOrderRoutes(guarded, deps);
  orderRoutes(guarded, deps);
  operationRoutes(guarded, deps);
  connectionRoutes(guarded, deps);
  auditRoutes(guarded, deps);
  tokenRoutes(guarded, deps);
  demoChannelRoutes(guarded, deps);
  return { open, guarded, notFound: notFound(deps), streams, stop: () => clearInterval(watcher) };
}
