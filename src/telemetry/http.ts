// The server span of every HTTP request a role answers (receiver, console, /api): a small middleware of ours, since
// @opentelemetry/instrumentation-koa is unmaintained. It is the root of a trace of its own that links a caller's
// traceparent (never continues it, see below), names the span by the matched route (never the raw path: ids would
// make every span name unique), and records method, route and status; never a body, a query string or a header
// value. Handlers add their own attributes to it (the receiver: connection, event, delivery).
import type { Context, Next } from 'koa';
import { context, ROOT_CONTEXT, SpanStatusCode } from '@opentelemetry/api';
import { extractTrace, inSpan, linkTo, SpanKind, tracing } from './spans.ts';

// Probes and scrapes are not traced: every few seconds each, they would bury the traces that matter.
const UNTRACED = /^\/(healthz|readyz|metrics)$/;

export function serverSpans() {
  return async (ctx: Context, next: Next) => {
    if (!tracing() || UNTRACED.test(ctx.path)) return next();
    // Linked on every route, not only the public ones: the span starts before anyone is checked (a delivery's
    // signature, an operator's session or token), and strangers reach the webhooks, /login, /auth/oidc/* and any
    // /api request, under paths the router matches case-insensitively. Continued, a stranger would choose our
    // trace id and, by its sampled flag, whether we trace at all.
    const opts = {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': ctx.method },
      root: true,
      links: linkTo(extractTrace(ctx.headers)),
    };
    return context.with(ROOT_CONTEXT, () =>
      inSpan(ctx.method, opts, async (span) => {
        let status = 0;
        try {
          await next();
          status = ctx.status;
        } catch (err) {
          // Koa answers a thrown error after this middleware: its status, or 500.
          status = (err as { status?: number }).status ?? 500;
          throw err;
        } finally {
          const route = (ctx as Context & { _matchedRoute?: string | RegExp })._matchedRoute;
          if (route) {
            span.updateName(`${ctx.method} ${String(route)}`);
            span.setAttribute('http.route', String(route));
          }
          span.setAttribute('http.response.status_code', status);
          if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        }
      }),
    );
  };
}
