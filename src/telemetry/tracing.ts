// The OpenTelemetry SDK of a process, started by the CLI before any command module is loaded (so pg's client is
// instrumented when it is first imported), and only when the standard variables ask for traces: an exporter
// (OTEL_TRACES_EXPORTER other than `none`) or an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). Everything else is the SDK's own reading of OTEL_*: protocol, headers,
// sampler, service name and resource attributes, batch sizes. Metrics stay Prometheus (/metrics) and logs stay pino,
// so the SDK's metrics and logs exporters are off unless asked for by name.
import { tracingStarted } from './spans.ts';

/** Whether the environment asks for traces (and has not switched the SDK off). */
export function tracesWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporter) return exporter !== 'none';
  return !!(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/** Starts the SDK (global tracer provider, W3C propagators, pg instrumentation); answers its shutdown, which flushes. */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<() => Promise<void>> {
  env.OTEL_SERVICE_NAME ??= 'commerce-sync';
  env.OTEL_METRICS_EXPORTER ??= 'none';
  env.OTEL_LOGS_EXPORTER ??= 'none';
  // W3C trace context only, not baggage: what a caller puts in baggage must not ride on our jobs (pg-boss stores the
  // propagated context) or on to channel destinations and the alert URL.
  env.OTEL_PROPAGATORS ??= 'tracecontext';
  const [{ NodeSDK }, { PgInstrumentation }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-pg'),
  ]);
  // requireParentSpan: pollers (pg-boss's fetch loop, the budget's housekeeping) make no traces of their own.
  const sdk = new NodeSDK({ instrumentations: [new PgInstrumentation({ requireParentSpan: true })] });
  sdk.start();
  tracingStarted();
  return () => sdk.shutdown();
}
