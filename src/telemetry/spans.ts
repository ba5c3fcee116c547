// Our spans, through the OpenTelemetry API only: without an SDK registered (src/telemetry/tracing.ts starts one when
// OTEL_* asks for it) every call here is a no-op on a non-recording span, so an untraced process pays nothing but a
// few function calls. Work done for several deliveries at once (an intake batch, a coalesced drain) continues the
// trace of the first and links to the others: one stock move is then one trace from its POST to the channel's POST.
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
} from '@opentelemetry/api';

export { SpanKind, type Span };

const tracer = () => trace.getTracer('commerce-sync');

/**
 * A span's W3C traceparent, or null without a valid span (tracing off): what is stored to continue a trace later.
 * A span a sampler left out is stored too (flags 00), so the work it causes is left out with it, not sampled afresh.
 */
export function traceparentOf(span: Span | undefined = trace.getActiveSpan()): string | null {
  if (!span || !trace.isSpanContextValid(span.spanContext())) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier);
  return carrier.traceparent ?? null;
}

/** The active span's trace id, when tracing records it (the sync log's and the logs' `trace_id`). */
export function activeTraceId(): string | null {
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span.spanContext().traceId : null;
}

/** Puts the active trace's context into outgoing headers (traceparent, tracestate), so the receiver continues it. */
export function injectTrace(headers: Record<string, string>): void {
  propagation.inject(context.active(), headers);
}

/** The trace context headers carry (a request's, to link; a stored traceparent's, to continue), else none. */
export function extractTrace(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(ROOT_CONTEXT, headers);
}

/** The context a stored traceparent names. */
const contextOf = (traceparent: string): Context => extractTrace({ traceparent });

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /**
   * Traces this work continues (stored traceparents of the deliveries behind it): the first is the parent, the
   * others are links. Without any, the span is a child of the active one.
   */
  from?: (string | null | undefined)[];
  /** A root of its own (push operations, sweeps, alerts), linked to the active span it started from. */
  root?: boolean;
  links?: Link[];
}

/** A link to the span a context holds, if any (a caller's: no HTTP request continues its caller's trace). */
export function linkTo(ctx: Context): Link[] {
  const sc = trace.getSpanContext(ctx);
  return sc && trace.isSpanContextValid(sc) ? [{ context: sc }] : [];
}

/** Most links a span keeps: a drain of 250 deliveries need not name them all. */
const MAX_LINKS = 32;

/** Runs `fn` in a span that ends with it (an error marks it and goes on). */
export async function inSpan<T>(name: string, opts: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  let parent = context.active();
  const links: Link[] = [...(opts.links ?? [])];
  const from = [...new Set((opts.from ?? []).filter((p): p is string => !!p))];
  if (from.length) {
    parent = contextOf(from[0]!);
    for (const p of from.slice(1, MAX_LINKS + 1)) links.push(...linkTo(contextOf(p)));
  } else if (opts.root) links.push(...linkTo(parent));
  return tracer().startActiveSpan(
    name,
    { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes, links, root: !from.length && opts.root },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (err) {
        // The kind of error only: a message can quote the service's answer or a row's values.
        span.setAttribute('error.type', (err as Error)?.name ?? 'Error');
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

let on = false;

/** Whether an SDK was started here (tracing.ts): callers skip work only tracing needs (a lookup of stored traceparents). */
export function tracing(): boolean {
  return on;
}

/** Called by tracing.ts once its SDK is registered. */
export function tracingStarted(): void {
  on = true;
}
