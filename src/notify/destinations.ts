// Outbound destinations: what became of each POST to a destination we deliver to (today `channel`, the channel
// changes POSTed to CHANNEL_WEBHOOK_URL by src/stock/feed.ts), kept in outbound_destinations (src/db/destinations.ts)
// so the `destination` alert, /metrics and the console can say "failing since 10:02, 5 POSTs in a row, last answer
// 500". Only the host is stored: the URL's path or query may be a secret.
import { recordDestinationOutcome } from '../db/destinations.ts';
import type { Executor } from '../db/index.ts';
import type { Logger } from '../log.ts';
import { metrics } from '../metrics.ts';
import { hostOf } from './sender.ts';

/** The destination name of the channel POSTs to CHANNEL_WEBHOOK_URL. */
export const CHANNEL_DESTINATION = 'channel';

/** What a failed POST says without its URL: `answered 500`, or the kind of network error. */
export function failureOf(err: unknown): { status: number | null; error: string } {
  const message = String((err as Error)?.message ?? err);
  const answered = /answered (\d{3})/.exec(message);
  if (answered) return { status: Number(answered[1]), error: `answered ${answered[1]}` };
  const e = err as { name?: string; code?: string; cause?: { code?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return { status: null, error: 'no answer in time' };
  const code = e?.cause?.code ?? e?.code;
  return { status: null, error: code ? `network error (${code})` : 'network error' };
}

/**
 * Runs `post` (which throws on failure) and records its outcome for destination `name`; the error is rethrown, so
 * the caller's retries (pg-boss's, for the channel) go on as before. A failure to record is logged, never thrown.
 */
export async function trackPost<T>(db: Executor, log: Logger, name: string, url: string, post: () => Promise<T>): Promise<T> {
  const host = hostOf(url);
  const record = (outcome: { ok: boolean; status: number | null; error: string | null }) =>
    recordDestinationOutcome(db, name, host, outcome).catch((err) =>
      log.warn({ err: { message: (err as Error).message }, destination: name }, 'could not record the outcome of a POST'),
    );
  try {
    const out = await post();
    metrics.destinationPosts.inc({ destination: name, result: 'ok' });
    await record({ ok: true, status: null, error: null });
    return out;
  } catch (err) {
    const f = failureOf(err);
    metrics.destinationPosts.inc({ destination: name, result: 'failed' });
    await record({ ok: false, status: f.status, error: f.error });
    throw err;
  }
}
