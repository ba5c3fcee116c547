// JSON lines by default; readable lines when a person is watching a terminal.
import { pino, type Logger } from 'pino';

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

export function createLogger(level: string, opts: { pretty?: boolean; destination?: NodeJS.WritableStream } = {}): Logger {
  const pretty = opts.pretty ?? (process.stdout.isTTY === true && !opts.destination);
  if (pretty) {
    return pino({
      level,
      redact,
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } },
    });
  }
  return pino({ level, redact }, (opts.destination ?? process.stdout) as pino.DestinationStream);
}
