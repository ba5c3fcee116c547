// A logger whose lines a test can read back (and that stays quiet otherwise).
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/log.ts';

export function captureLogger(level = 'debug'): { log: Logger; lines: () => Record<string, unknown>[]; text: () => string } {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(String(chunk));
      cb();
    },
  });
  const log = createLogger(level, { destination: sink, pretty: false });
  const text = () => chunks.join('');
  return {
    log,
    text,
    lines: () =>
      text()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
  };
}
