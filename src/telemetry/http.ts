// The server span of every HTTP request a role answers (receiver, console, /api): a small middleware of ours, since
// @opentelemetry/instrumentation-koa is unmaintained. It continues a caller's traceparent, names the span by the
// matched route (never the raw path: ids would make every span name unique), and records method, route and status;
// never a body, a query string or a header value. Handlers add their own attributes to it (the receiver: connection,
// event, delivery).
import type { Context, Next } from 'koa';
import { context, SpanStatusCode } from '@opentelemetry/api';
import { extractTrace, inSpan, SpanKind, tracing } from './spans.ts';

export function serverSpans() {
  return async (ctx: Context, next: Next) => {
    if (!tracing()) return next();
    return context.with(extractTrace(ctx.headers), () =>
      inSpan(ctx.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method } }, async (span) => {
        try {
          await next();
        } finally {
          const route = (ctx as Context & { _matchedRoute?: string | RegExp })._matchedRoute;
          if (route) {
            span.updateName(`${ctx.method} ${String(route)}`);
            span.setAttribute('http.route', String(route));
          }
          span.setAttribute('http.response.status_code', ctx.status);
          if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        }
      }),
    );
  };
}
