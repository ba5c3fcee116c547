// The last line of a long-running process's defence against a database outage (`start`, `receiver`, `worker`).
// Each pool, listening connection and pg-boss instance handles its own errors (src/db/index.ts createPool,
// src/console/tail.ts, src/queue/boss.ts), so a lost connection fails the statements that were using it and
// nothing else. Should a rejection or an 'error' event from a lost connection still escape them (a code path
// that let a failed statement go unawaited), Node's default would end the process, and with it every delivery
// and job in flight, for an outage the process recovers from by itself. Here such an error is logged as the
// bug it is and the process carries on. Anything else that escapes still ends the process, as Node would (exit
// status 1): its state is unknown, and a supervisor restarting it is the safe course.
import { errorSummary, isConnectionError } from './db/index.ts';
import type { Logger } from './log.ts';

let installed = false;

/** Installs the handlers once per process. */
export function guardProcess(log: Logger): void {
  if (installed) return;
  installed = true;
  const escaped = (err: unknown, origin: string) => {
    if (isConnectionError(err)) {
      log.error(
        { err: errorSummary(err), origin },
        `${origin} from a lost database connection (a bug: nothing handled it); the process carries on`,
      );
      return;
    }
    const stack = err instanceof Error ? err.stack : undefined;
    log.fatal({ err: { ...errorSummary(err), stack }, origin }, `${origin}; exiting`);
    process.exit(1);
  };
  process.on('unhandledRejection', (reason) => escaped(reason, 'unhandled rejection'));
  process.on('uncaughtException', (err) => escaped(err, 'uncaught exception'));
}
