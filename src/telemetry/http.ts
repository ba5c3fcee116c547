// The server span of every HTTP request a role answers (receiver, console, /api): a small middleware of ours, since
// @opentelemetry/instrumentation-koa is unmaintained. It continues an operator's traceparent (the webhook endpoint
// only links a sender's), names the span by the
// matched route (never the raw path: ids would make every span name unique), and records method, route and status;
// never a body, a query string or a header value. Handlers add their own attributes to it (the receiver: connection,
// event, delivery).
import type { Context, Next } from 'koa';
import { context, ROOT_CONTEXT, SpanStatusCode } from '@opentelemetry/api';
import { extractTrace, inSpan, linkTo, SpanKind, tracing } from './spans.ts';

// Probes and scrapes are not traced: every few seconds each, they would bury the traces that matter.
const UNTRACED = /^\/(healthz|readyz|metrics)$/;

export function serverSpans() {
  return async (ctx: Context, next: Next) => {
    if (!tracing() || UNTRACED.test(ctx.path)) return next();
    const sent = extractTrace(ctx.headers);
    // The webhook endpoint is public, and its span starts before the signature is checked: a sender's trace is
    // linked, not continued (it cannot choose our trace id or sampling). Operators' API calls continue theirs.
    const publicRoute = ctx.path.startsWith('/webhooks/');
    const opts = {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': ctx.method },
      root: publicRoute,
      links: publicRoute ? linkTo(sent) : [],
    };
    return context.with(publicRoute ? ROOT_CONTEXT : sent, () =>
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
