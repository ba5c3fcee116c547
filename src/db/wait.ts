// A long-running process whose PostgreSQL (an external DATABASE_URL) is away while it starts waits for it instead of
// exiting: Compose's start order, a pod scheduled before its database, a failover during a rollout. The process's
// start-up (src/process.ts: migrations, pg-boss, the roles' mounts) is tried again, with backoff, for as long as it
// fails because the database cannot be reached or went away; anything else (a wrong password, a missing database, a
// migration that fails) still ends the start at once with its own message.
import type { Logger } from '../log.ts';
import { errorSummary, isConnectionError } from './index.ts';

/** Whether `err` (or what caused it) says the database is away: refused, cut, restarting, or its name not there yet. */
export function databaseAway(err: unknown, depth = 0): boolean {
  if (err == null || depth > 4) return false;
  // A name that does not resolve yet: a Compose service whose container is not created, a headless Service
  // without a ready pod. A misspelt host waits too, saying so every few seconds.
  if (isConnectionError(err) || (err as { code?: unknown }).code === 'ENOTFOUND') return true;
  const { cause, errors } = err as { cause?: unknown; errors?: unknown };
  // Node's AggregateError (every address of a host refused) and errors that wrap another (a migration's).
  if (Array.isArray(errors) && errors.some((e) => databaseAway(e, depth + 1))) return true;
  return databaseAway(cause, depth + 1);
}

/** HOST:PORT of a postgres:// URL, for log lines (never its user or password). */
export function databaseAddress(url: string): string {
  try {
    const u = new URL(url);
    const host = u.searchParams.get('host') || u.hostname || 'localhost';
    return `${host}:${u.searchParams.get('port') || u.port || '5432'}`;
  } catch {
    return 'DATABASE_URL';
  }
}

/** What an error says, for a log line or /readyz: its message, else its code (an AggregateError's message is empty). */
function said(err: unknown): string {
  const { message, code } = errorSummary(err);
  if (message) return message;
  const first = (err as { errors?: unknown[] } | null)?.errors?.[0];
  return (first ? errorSummary(first).message : '') || code || 'unknown error';
}

export interface WaitOptions {
  /** Told what the process waits for (null: a try is under way), for /readyz while it starts. */
  onWait?(reason: string | null): void;
  /** Resolves once the process is told to stop: a wait between tries ends at once. */
  stopping?: Promise<unknown>;
  /** Called before each try; throws to stop trying (src/shutdown.ts `check`). */
  check?(): void;
  /** The first wait between tries, doubled after each failure up to maxDelayMs. */
  firstDelayMs?: number;
  maxDelayMs?: number;
  /** At most one "waiting" line per this long. */
  logEveryMs?: number;
}

/**
 * Runs `attempt` until it succeeds, trying again while it fails because the database at `url` is away (waiting 0.5 s,
 * doubling to 5 s, between tries; one warning line at most every 5 s). `attempt` undoes what it started before it
 * throws. Any other error is thrown at once.
 */
export async function whileDatabaseAway<T>(url: string, log: Logger, attempt: () => Promise<T>, opts: WaitOptions = {}): Promise<T> {
  const where = databaseAddress(url);
  const maxDelayMs = opts.maxDelayMs ?? 5000;
  const logEveryMs = opts.logEveryMs ?? 5000;
  const since = Date.now();
  let delayMs = opts.firstDelayMs ?? 500;
  let loggedAt = Number.NEGATIVE_INFINITY;
  let tries = 0;
  for (;;) {
    opts.check?.();
    opts.onWait?.(null);
    try {
      const result = await attempt();
      if (tries) log.info({ waited_s: Math.round((Date.now() - since) / 1000), tries }, `PostgreSQL at ${where} answers; started`);
      return result;
    } catch (err) {
      if (!databaseAway(err)) throw err;
      tries++;
      const why = said(err);
      opts.onWait?.(`starting: waiting for the database at ${where} (${why})`);
      if (Date.now() - loggedAt >= logEveryMs) {
        loggedAt = Date.now();
        log.warn(
          { err: errorSummary(err), waited_s: Math.round((loggedAt - since) / 1000), tries },
          `waiting for PostgreSQL at ${where}: ${why}; retrying`,
        );
      }
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise((r) => (timer = setTimeout(r, delayMs)));
      await (opts.stopping ? Promise.race([waited, opts.stopping]) : waited);
      clearTimeout(timer);
      delayMs = Math.min(delayMs * 2, maxDelayMs);
    }
  }
}
