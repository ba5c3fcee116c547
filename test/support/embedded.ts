// A test's own embedded PostgreSQL that it kills and starts again (the crash and readiness tests).
import { startEmbedded, type EmbeddedDatabase } from '../../src/db/embedded.ts';
import type { Logger } from '../../src/log.ts';

/** Starts (or restarts) the embedded server, retrying while the killed one's backends let go of its folder. */
export async function startEmbeddedRetrying(
  dir: string,
  log: Logger,
  database: string,
  retry: { attempts: number; delayMs: number },
): Promise<EmbeddedDatabase> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEmbedded(dir, log, database);
    } catch (err) {
      if (attempt >= retry.attempts) throw err;
      await new Promise((r) => setTimeout(r, retry.delayMs));
    }
  }
}
