// Gauges that describe state rather than events, refreshed from the database when /metrics is scraped,
// and the once-a-minute samples that let the console draw budget and lag over time.
import { refreshAlertGauges } from '../alerts/gauges.ts';
import { saveSamples } from '../db/samples.ts';
import type { Db } from '../db/index.ts';
import type { Logger } from '../log.ts';
import { metrics } from '../metrics.ts';
import { connectionOverviews, type ConnectionOverview } from './overview.ts';
import { isDeadLetter } from '../queue/queue.ts';
import { queueDepths } from '../queue/depths.ts';

/** Sets queue depth, budget remaining and the lags from what the database says now. */
export async function refreshGauges(db: Db): Promise<void> {
  const [depths, conns] = await Promise.all([queueDepths(db), connectionOverviews(db)]);
  metrics.queueDepth.reset();
  for (const q of depths) metrics.queueDepth.set({ queue: q.queue }, q.queued);
  metrics.budgetRemaining.reset();
  for (const g of [metrics.mirrorLag, metrics.stockLag, metrics.documentsLag]) g.reset();
  for (const c of conns) {
    if (c.budget) metrics.budgetRemaining.set({ connection: c.name }, c.budget.remaining);
    metrics.mirrorLag.set({ connection: c.name }, c.lagSeconds);
    metrics.stockLag.set({ connection: c.name }, c.stockLagSeconds);
    metrics.documentsLag.set({ connection: c.name }, c.documentsLagSeconds);
  }
  await refreshAlertGauges(db);
}

/**
 * Writes the sample of the minute holding `now` per connection (the first writer of a minute wins). Samples older
 * than CONSOLE_SAMPLE_RETENTION_DAYS go with the worker's retention run (src/sync/retention.ts). `now` is
 * injectable so tests do not depend on the minute they run in.
 */
export async function sampleOnce(db: Db, opts: { conns?: ConnectionOverview[]; now?: Date } = {}): Promise<number> {
  const now = opts.now ?? new Date();
  const [list, depths] = await Promise.all([opts.conns ?? connectionOverviews(db), queueDepths(db)]);
  const queuedJobs = depths.filter((q) => !isDeadLetter(q.queue)).reduce((n, q) => n + q.queued, 0);
  const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
  await saveSamples(
    db,
    list.map((c) => ({
      connection_id: c.id,
      at: minute,
      budget_remaining: c.budget?.remaining ?? null,
      budget_limit: c.budget?.limit ?? null,
      // The lag chart is stock's, what channels feel (samples of 0.2.0 and before hold the oldest change of any kind).
      lag_seconds: c.stockLagSeconds,
      queued_deliveries: c.queuedDeliveries,
      queued_jobs: queuedJobs,
    })),
  );
  return list.length;
}

/** Samples every minute until stopped. */
export function startSampler(db: Db, log: Logger, everyMs = 60_000): () => void {
  const tick = () => sampleOnce(db).catch((err) => log.warn({ err }, 'console sample failed'));
  void tick();
  const timer = setInterval(tick, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
