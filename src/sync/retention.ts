// Retention: the tables that grow with traffic lose the rows older than their setting, a small batch at a time.
// The maintenance queue runs it every minute (task `retention`, src/sync/schedules.ts), so a run deletes about a
// minute's worth of rows. Each batch is one DELETE of at most RETENTION_BATCH rows, its own short transaction
// (row locks on those rows only, nothing that blocks writers); a run stops after RETENTION_BUDGET_MS and the next
// minute's run goes on where it stopped. pg-boss deletes its own finished jobs and old dead letters itself
// (how long: src/queue/queues.ts; how often: src/queue/boss.ts). What stays whatever its age, and why: docs/data.md.
import type { Config } from '../config.ts';
import { pruneChannelChanges } from '../db/channels.ts';
import { pruneOrderEvents } from '../db/channel-order-events.ts';
import { pruneAudit } from '../db/audit.ts';
import { pruneHolds } from '../db/holds.ts';
import { prunePosts } from '../db/channel-destinations.ts';
import { pruneDeliveries, pruneDeliveryWaits } from '../db/deliveries.ts';
import type { Db, Executor } from '../db/index.ts';
import { withRetentionLock } from '../db/locks.ts';
import { pruneOperations } from '../db/operations.ts';
import { pruneSamples } from '../db/samples.ts';
import { pruneSyncLog } from '../db/synclog.ts';

/** Rows one DELETE takes at most. */
export const RETENTION_BATCH = 5000;
/** Longest a run keeps starting batches; the next run (a minute later) goes on. */
export const RETENTION_BUDGET_MS = 20_000;

export type RetentionSettings = Pick<
  Config,
  | 'DELIVERY_RETENTION_DAYS'
  | 'DEAD_LETTER_RETENTION_DAYS'
  | 'SYNC_LOG_RETENTION_DAYS'
  | 'AUDIT_RETENTION_DAYS'
  | 'CHANNEL_CHANGE_RETENTION_DAYS'
  | 'OPERATION_RETENTION_DAYS'
  | 'CONSOLE_SAMPLE_RETENTION_DAYS'
>;

interface Family {
  name: string;
  /** Age in seconds (database clock) past which a row may go. */
  seconds: number;
  /** One batch: deletes at most `limit` rows, returns how many went. */
  prune(db: Executor, seconds: number, limit: number): Promise<number>;
}

const days = (n: number) => n * 86_400;

/** What goes after how long. Families the run takes in turn, one batch each. */
export function retentionFamilies(c: RetentionSettings): Family[] {
  return [
    {
      name: 'webhook_deliveries',
      seconds: days(c.DELIVERY_RETENTION_DAYS),
      prune: (db, s, n) => pruneDeliveries(db, ['processed', 'unhandled', 'rejected'], s, n),
    },
    // A failed delivery is what its dead letter replays: kept as long as the letter.
    {
      name: 'webhook_deliveries (failed)',
      seconds: days(c.DEAD_LETTER_RETENTION_DAYS),
      prune: (db, s, n) => pruneDeliveries(db, ['failed'], s, n),
    },
    // A deliveries job that never started leaves its wait row behind; rows stop joining it after 30 s.
    { name: 'delivery_waits', seconds: days(1), prune: pruneDeliveryWaits },
    { name: 'sync_log', seconds: days(c.SYNC_LOG_RETENTION_DAYS), prune: pruneSyncLog },
    { name: 'audit_log', seconds: days(c.AUDIT_RETENTION_DAYS), prune: pruneAudit },
    { name: 'channel_quantity_changes', seconds: days(c.CHANNEL_CHANGE_RETENTION_DAYS), prune: pruneChannelChanges },
    { name: 'channel_order_events', seconds: days(c.CHANNEL_CHANGE_RETENTION_DAYS), prune: pruneOrderEvents },
    { name: 'push_operations', seconds: days(c.OPERATION_RETENTION_DAYS), prune: pruneOperations },
    // An ended hold is history, as its sync-log entries are.
    { name: 'channel_holds (ended)', seconds: days(c.SYNC_LOG_RETENTION_DAYS), prune: pruneHolds },
    { name: 'channel_posts', seconds: days(c.SYNC_LOG_RETENTION_DAYS), prune: prunePosts },
    { name: 'console_samples', seconds: days(c.CONSOLE_SAMPLE_RETENTION_DAYS), prune: pruneSamples },
  ];
}

export interface RetentionRun {
  /** Rows deleted per family. */
  deleted: Record<string, number>;
  batches: number;
  /** Every family is down to its window; false: the budget ran out first (the next run goes on). */
  done: boolean;
  ms: number;
}

/**
 * One retention run: a batch per family in turn, each family until a batch takes fewer than `batch` rows, all
 * until the budget is spent (the first batch always runs). Undefined when another process's run holds the lock.
 */
export async function enforceRetention(
  db: Db,
  settings: RetentionSettings,
  opts: { batch?: number; budgetMs?: number } = {},
): Promise<RetentionRun | undefined> {
  const batch = opts.batch ?? RETENTION_BATCH;
  const budgetMs = opts.budgetMs ?? RETENTION_BUDGET_MS;
  return withRetentionLock(db, async (conn) => {
    const started = Date.now();
    const deleted: Record<string, number> = {};
    let batches = 0;
    let open = retentionFamilies(settings);
    for (const f of open) deleted[f.name] = 0;
    do {
      const more: Family[] = [];
      for (const f of open) {
        if (batches > 0 && Date.now() - started >= budgetMs) {
          more.push(f);
          continue;
        }
        const n = await f.prune(conn, f.seconds, batch);
        batches++;
        deleted[f.name]! += n;
        if (n >= batch) more.push(f);
      }
      open = more;
    } while (open.length && Date.now() - started < budgetMs);
    return { deleted, batches, done: open.length === 0, ms: Date.now() - started };
  });
}
