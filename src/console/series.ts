// The numbers behind the overview's charts, over a chosen time range cut into equal buckets: deliveries per
// minute, sync-log entries per minute, stock lag, API budget used and left, queue depths (from the minute
// samples of console_samples) and the drift each sweep found (from the sweep entries of the sync log).
// `end` is injectable so a test never depends on the minute it runs in.
import { binOf } from '../db/bins.ts';
import { deliveriesPerBin } from '../db/delivery-reads.ts';
import { binnedSamples } from '../db/samples.ts';
import { sweepDrifts, syncLogPerBin } from '../db/synclog.ts';
import type { Db } from '../db/index.ts';

export interface Point {
  at: Date;
  value: number;
}

export const ranges = {
  '1h': { label: 'last hour', minutes: 60, stepMinutes: 1 },
  '24h': { label: 'last 24 hours', minutes: 24 * 60, stepMinutes: 15 },
  '7d': { label: 'last 7 days', minutes: 7 * 24 * 60, stepMinutes: 120 },
} as const;
export type RangeName = keyof typeof ranges;
export const isRange = (v: unknown): v is RangeName => typeof v === 'string' && Object.hasOwn(ranges, v);

export interface Window {
  start: Date;
  end: Date;
  stepMinutes: number;
}

/** Buckets of `stepMinutes` aligned to the epoch, the last one holding `end`; the window ends where it ends. */
export function timeWindow(minutes: number, stepMinutes: number, end: Date): Window {
  const step = stepMinutes * 60_000;
  const last = Math.floor(end.getTime() / step) * step;
  const count = Math.max(1, Math.round(minutes / stepMinutes));
  return { start: new Date(last - (count - 1) * step), end: new Date(last + step), stepMinutes };
}

export interface ConnectionSeries {
  window: Window;
  /** Deliveries received per minute (averaged over each bucket); one point per bucket. */
  throughput: Point[];
  /** Sync-log entries per minute; one point per bucket. */
  syncEvents: Point[];
  /** Stock lag in seconds (the oldest change of stock not yet mirrored: ConnectionOverview.stockLagSeconds), the worst sample of each bucket. */
  lag: Point[];
  /** API budget left, the lowest sample of each bucket. */
  budget: Point[];
  /** API requests used of the rate window, the highest sample of each bucket. */
  budgetUsed: Point[];
  /** Deliveries waiting to be processed, the highest sample of each bucket. */
  queuedDeliveries: Point[];
  /** Jobs waiting in the work queues, the highest sample of each bucket. */
  queuedJobs: Point[];
  /** Drift each sweep found (changes an event should have announced, none did), one point per sweep. */
  drift: Point[];
}

const perMinute = (count: number, stepMinutes: number) => Math.round((count / stepMinutes) * 10) / 10;

export async function chartSeries(db: Db, connectionId: number, w: Window): Promise<ConnectionSeries> {
  const [deliveries, events, samples, sweeps] = await Promise.all([
    deliveriesPerBin(db, connectionId, w),
    syncLogPerBin(db, connectionId, w),
    binnedSamples(db, connectionId, w, binOf(w, 'at')),
    sweepDrifts(db, connectionId, w),
  ]);
  const s = samples;
  const points = (pick: (r: (typeof s)[number]) => number | null) =>
    s.flatMap((r) => {
      const v = pick(r);
      return v === null ? [] : [{ at: r.at, value: Number(v) }];
    });
  return {
    window: w,
    throughput: deliveries.map((r) => ({ at: r.at, value: perMinute(r.n, w.stepMinutes) })),
    syncEvents: events.map((r) => ({ at: r.at, value: perMinute(r.n, w.stepMinutes) })),
    lag: points((r) => r.lag),
    budget: points((r) => r.left),
    budgetUsed: points((r) => r.used),
    queuedDeliveries: points((r) => r.deliveries),
    queuedJobs: points((r) => r.jobs),
    drift: sweeps.map((r) => ({ at: r.at, value: r.drift })),
  };
}
