// Gauges that describe state rather than events, refreshed from the database when /metrics is scraped,
// and the once-a-minute samples that let the console draw budget and lag over time.
import { sql } from 'kysely';
import type { Db } from '../db/index.ts';
import type { Logger } from '../log.ts';
import { metrics } from '../metrics.ts';
import { connectionOverviews, type ConnectionOverview } from './overview.ts';
import { queueDepths } from './queues.ts';

/** Sets queue depth, budget remaining and mirror lag from what the database says now. */
export async function refreshGauges(db: Db): Promise<void> {
  const [depths, conns] = await Promise.all([queueDepths(db), connectionOverviews(db)]);
  metrics.queueDepth.reset();
  for (const q of depths) metrics.queueDepth.set({ queue: q.queue }, q.queued);
  metrics.budgetRemaining.reset();
  metrics.mirrorLag.reset();
  for (const c of conns) {
    if (c.budget) metrics.budgetRemaining.set({ connection: c.name }, c.budget.remaining);
    metrics.mirrorLag.set({ connection: c.name }, c.lagSeconds);
  }
}

const SAMPLE_RETENTION_DAYS = 7;

/** Writes this minute's sample per connection (first writer of the minute wins) and prunes old ones. */
export async function sampleOnce(db: Db, conns?: ConnectionOverview[]): Promise<number> {
  const list = conns ?? await connectionOverviews(db);
  if (list.length) {
    await db.insertInto('console_samples').values(list.map((c) => ({
      connection_id: c.id, at: sql<Date>`date_trunc('minute', now())` as never,
      budget_remaining: c.budget?.remaining ?? null, budget_limit: c.budget?.limit ?? null,
      lag_seconds: c.lagSeconds, queued_deliveries: c.queuedDeliveries,
    }))).onConflict((oc) => oc.columns(['connection_id', 'at']).doNothing()).execute();
  }
  await db.deleteFrom('console_samples').where('at', '<', sql<Date>`now() - make_interval(days => ${SAMPLE_RETENTION_DAYS})`).execute();
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
