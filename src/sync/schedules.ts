// pg-boss schedules: per active connection an incremental sweep every RECONCILE_INTERVAL_MINUTES and a
// full sweep on FULL_SWEEP_CRON; housekeeping (retention every minute, a pending-fetch safety net every
// minute, this schedule sync every ten minutes so new connections get theirs, a first full sweep, and the webhook
// subscription check every WEBHOOK_CHECK_MINUTES).
import type { Config } from '../config.ts';
import { listConnections } from '../db/connections.ts';
import { sweptConnections } from '../db/cursors.ts';
import type { Db } from '../db/index.ts';
import type { Boss } from '../queue/boss.ts';
import { maintenanceJob, type MaintenanceTask } from '../jobs/maintenance.ts';
import { reconcileJob, requestSweep, type ReconcileData } from '../jobs/reconcile.ts';

/** A cron expression for "every N minutes" (N from 1 to 1440). */
export function everyMinutes(n: number): string {
  if (n < 60) return `*/${n} * * * *`;
  if (n % 60 === 0 && n / 60 < 24) return `0 */${n / 60} * * *`;
  return '0 0 * * *';
}

export async function syncSchedules(db: Db, boss: Boss, config: Config): Promise<void> {
  const active = await listConnections(db, 'active');
  const want = new Map<string, { cron: string; data: ReconcileData }>();
  for (const c of active) {
    const id = Number(c.id);
    want.set(`incremental-${id}`, { cron: everyMinutes(config.RECONCILE_INTERVAL_MINUTES), data: { connectionId: id, full: false } });
    want.set(`full-${id}`, { cron: config.FULL_SWEEP_CRON, data: { connectionId: id, full: true } });
  }
  const existing = await boss.getSchedules(reconcileJob.name);
  for (const s of existing) {
    const w = want.get(s.key);
    if (!w) await boss.unschedule(reconcileJob.name, s.key);
    else if (s.cron === w.cron) want.delete(s.key);
  }
  for (const [key, w] of want) {
    await boss.schedule(reconcileJob.name, w.cron, w.data, { key, tz: 'UTC', group: { id: String(w.data.connectionId) } });
  }
  // A connection never swept (a newcomer's demo, a new account) gets its full sweep now, not at FULL_SWEEP_CRON.
  const swept = await sweptConnections(db);
  for (const c of active) {
    const id = Number(c.id);
    if (swept.has(id)) continue;
    await requestSweep(boss, id, true, { singletonKey: `initial-${id}`, singletonSeconds: 900 });
  }
  const housekeeping: [MaintenanceTask, string][] = [
    ['retention', '* * * * *'],
    ['pending', '* * * * *'],
    ['holds', '* * * * *'],
    ['schedules', '*/10 * * * *'],
    ['probe-lapsed', '*/5 * * * *'],
    ['webhooks', everyMinutes(config.WEBHOOK_CHECK_MINUTES)],
  ];
  const have = new Map((await boss.getSchedules(maintenanceJob.name)).map((s) => [s.key, s.cron]));
  // A task no longer scheduled (prune-sync-log, which retention replaced) loses its schedule.
  for (const key of have.keys()) if (!housekeeping.some(([task]) => task === key)) await boss.unschedule(maintenanceJob.name, key);
  for (const [task, cron] of housekeeping) {
    if (have.get(task) !== cron) await boss.schedule(maintenanceJob.name, cron, { task }, { key: task, tz: 'UTC' });
  }
}
