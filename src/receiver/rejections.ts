// Refused deliveries, counted per connection name (as the URL names it) and reason, so the alerts evaluator can say
// "deliveries to shop refused for their signature: 12 in the last 15 minutes". The receiver refuses before any
// database work, and a forged flood must not become a database flood: refusals are added up in memory and written
// every few seconds with one statement (src/db/rejections.ts), whatever their number. Names that cannot be a
// connection's, and names past the first 200 of a flush, are counted as `?`.
import type { Executor } from '../db/index.ts';
import { addRejections, type RejectionCount } from '../db/rejections.ts';
import type { Logger } from '../log.ts';

const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const MAX_NAMES = 200;
/** Counts kept while the database cannot take them (an outage under a forged flood must not grow the heap). */
const MAX_KEPT = 10_000;

export interface RejectionCounter {
  add(connectionName: string, reason: string): void;
  /** Writes what was counted since the last flush (kept for the next one when the write fails). */
  flush(): Promise<void>;
  /** Flushes every `everyMs` until stopped; the returned function stops and flushes once more. */
  start(everyMs?: number): () => Promise<void>;
}

export function rejectionCounter(db: Executor, log: Logger): RejectionCounter {
  let counts = new Map<string, RejectionCount>();
  const names = new Set<string>();
  const add = (connectionName: string, reason: string) => {
    let name = NAME.test(connectionName) ? connectionName : '?';
    if (!names.has(name) && names.size >= MAX_NAMES) name = '?';
    names.add(name);
    const now = new Date();
    const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
    const k = `${name}\u0000${reason}\u0000${minute.getTime()}`;
    const c = counts.get(k);
    if (c) {
      c.count++;
      c.lastAt = now;
    } else counts.set(k, { connectionName: name, reason, minute, count: 1, lastAt: now });
  };
  const flush = async () => {
    if (!counts.size) return;
    const batch = counts;
    counts = new Map();
    names.clear();
    try {
      await addRejections(db, [...batch.values()]);
    } catch (err) {
      // Kept for the next flush (the database may be away for a moment), up to MAX_KEPT counts.
      for (const [k, c] of batch) {
        if (counts.size >= MAX_KEPT) break;
        const now = counts.get(k);
        if (now) {
          now.count += c.count;
          if (c.lastAt > now.lastAt) now.lastAt = c.lastAt;
        } else counts.set(k, c);
        names.add(c.connectionName);
      }
      log.warn({ err: { message: (err as Error).message } }, 'refused deliveries could not be counted in the database; trying again');
    }
  };
  return {
    add,
    flush,
    start(everyMs = 5000) {
      const timer = setInterval(() => void flush(), everyMs);
      timer.unref();
      return async () => {
        clearInterval(timer);
        await flush();
      };
    },
  };
}
