// channel-stock: one job per channel quantity change, for whatever publishes to the sales channel: a publisher
// of the operator's, or with CHANNEL_WEBHOOK_URL set, this worker's signed POST of up to 100 changes at a time.
// GET /api/channel-stock keeps the history by cursor (CHANNEL_CHANGE_RETENTION_DAYS).
import { CHANNEL_DESTINATION, trackPost } from '../notify/destinations.ts';
import type { Boss } from '../queue/boss.ts';
import type { ChannelChange } from '../stock/channel.ts';
import { postChannelChanges } from '../stock/feed.ts';
import { defineJob } from './job.ts';

export type ChannelStockData = ChannelChange;

export const channelStockJob = defineJob<ChannelStockData>({
  name: 'channel-stock',
  // Taken only by a publisher: without one, changes would pile up for 14 days. A day by default;
  // JOB_RETENTION_HOURS where the settings are given (createQueues).
  policy: { retryLimit: 10, retryDelay: 5, retryBackoff: true, retentionSeconds: 86_400 },
  runs: (config) => config.CHANNEL_WEBHOOK_URL !== '',
  work: () => ({ batchSize: 100 }),
  async handle({ db, log, config }, jobs) {
    // Each POST's outcome is recorded (src/notify/destinations.ts): the `destination` alert reads it.
    await trackPost(db, log, CHANNEL_DESTINATION, config.CHANNEL_WEBHOOK_URL, () =>
      postChannelChanges(
        config.CHANNEL_WEBHOOK_URL,
        config.CHANNEL_WEBHOOK_SECRET,
        jobs.map((j) => j.data),
      ),
    );
  },
});

/** Puts channel changes on the queue, 500 a statement. */
export async function publishChanges(boss: Boss, changes: ChannelStockData[]): Promise<void> {
  for (let i = 0; i < changes.length; i += 500) {
    await channelStockJob.insert(
      boss,
      changes.slice(i, i + 500).map((data) => ({ data })),
    );
  }
}
