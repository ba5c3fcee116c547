// JSON lines by default; readable lines when a person is watching a terminal.
import { pino, type Logger } from 'pino';
import { trace } from '@opentelemetry/api';

export type { Logger };

// Field names whose values must never reach a log line.
const redact = {
  paths: [
    'token',
    'access_token',
    'refresh_token',
    'client_secret',
    'password',
    'authorization',
    '*.token',
    '*.access_token',
    '*.refresh_token',
    '*.client_secret',
    '*.password',
    '*.authorization',
    'headers.authorization',
    'req.headers.authorization',
    'req.headers["x-service-signature"]',
  ],
  censor: '[redacted]',
};

/** A line written in a traced span names it (`trace_id`, `span_id`), so a backend joins logs and traces. */
function traceFields(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

export function createLogger(level: string, opts: { pretty?: boolean; destination?: pino.DestinationStream } = {}): Logger {
  const pretty = opts.pretty ?? (process.stdout.isTTY === true && !opts.destination);
  if (pretty) {
    return pino({
      level,
      redact,
      mixin: traceFields,
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } },
    });
  }
  return pino({ level, redact, mixin: traceFields }, opts.destination ?? process.stdout);
}
