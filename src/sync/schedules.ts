// When sweeps run. No schedule per connection: the maintenance task `sweeps` asks every minute, in one statement,
// for the incremental sweeps that are due (src/db/sweep-plans.ts), and `full-sweeps` on FULL_SWEEP_CRON for a full
// sweep of every active connection. How often a connection is swept follows what its sweeps find: each sweep that
// found nothing only a sweep brings (drift, or changes the service sends no event for) while its webhooks are in
// place (subscriptions made, none of the swept resources' events refused) doubles its interval, from
// RECONCILE_INTERVAL_MINUTES up to RECONCILE_MAX_INTERVAL_MINUTES; what it found sets it back,
// and deliveries that stop (some arrived after its last sweep, then none for RECONCILE_INTERVAL_MINUTES) make the
// next one due at once. An idle account whose webhooks work is swept hourly; a busy one, or one whose webhooks miss
// changes, every RECONCILE_INTERVAL_MINUTES.
// Housekeeping schedules: retention, the pending-fetch safety net and holds every minute, this schedule sync every
// ten minutes (a first full sweep for new connections), lapsed connections, webhook subscriptions.
import type { Config } from '../config.ts';
import { listConnections } from '../db/connections.ts';
import { sweptConnections } from '../db/cursors.ts';
import type { Db, Executor } from '../db/index.ts';
import { webhookCoverage } from '../db/refusals.ts';
import { planNextSweep, takeDueSweeps } from '../db/sweep-plans.ts';
import type { Boss } from '../queue/boss.ts';
import { maintenanceQueue, reconcileQueue, requestSweep, type MaintenanceTask } from '../queue/contracts.ts';
import { resources } from './resources.ts';
import { normaliseEvent } from '../receiver/events.ts';

/** A cron expression for "every N minutes" (N from 1 to 1440). */
export function everyMinutes(n: number): string {
  if (n < 60) return `*/${n} * * * *`;
  if (n % 60 === 0 && n / 60 < 24) return `0 */${n / 60} * * *`;
  return '0 0 * * *';
}

export async function syncSchedules(db: Db, boss: Boss, config: Config): Promise<void> {
  const active = await listConnections(db, 'active');
  // No per-connection schedules (a database may still hold incremental-<id>, full-<id>): `sweeps` asks for them.
  for (const s of await boss.getSchedules(reconcileQueue.name)) await boss.unschedule(reconcileQueue.name, s.key);
  // A connection never swept (a newcomer's demo, a new account) gets its full sweep now, not at FULL_SWEEP_CRON.
  const swept = await sweptConnections(db);
  for (const c of active) {
    const id = c.id;
    if (swept.has(id)) continue;
    // Ahead of incremental sweeps (priority 1) in the queue: a new account's first load comes first. One per six
    // hours: with thousands of new accounts the first sweeps take longer than this task's ten minutes, and a
    // shorter slot would queue each of them again (the job retries on its own; a dead letter is tried again later).
    await requestSweep(boss, id, true, { singletonKey: `initial-${id}`, singletonSeconds: 6 * 3600, priority: 2 });
  }
  const housekeeping: [MaintenanceTask, string][] = [
    ['retention', '* * * * *'],
    ['pending', '* * * * *'],
    ['holds', '* * * * *'],
    ['order-watch', '* * * * *'],
    ['sweeps', '* * * * *'],
    ['full-sweeps', config.FULL_SWEEP_CRON],
    ['schedules', '*/10 * * * *'],
    ['probe-lapsed', '*/5 * * * *'],
    ['webhooks', everyMinutes(config.WEBHOOK_CHECK_MINUTES)],
  ];
  const have = new Map((await boss.getSchedules(maintenanceQueue.name)).map((s) => [s.key, s.cron]));
  // A schedule of a task not in this list is removed.
  for (const key of have.keys()) if (!housekeeping.some(([task]) => task === key)) await boss.unschedule(maintenanceQueue.name, key);
  for (const [task, cron] of housekeeping) {
    if (have.get(task) !== cron) await boss.schedule(maintenanceQueue.name, cron, { task }, { key: task, tz: 'UTC' });
  }
}

/** Asks for the incremental sweeps that are due, in one insert; returns how many. */
export async function requestDueSweeps(db: Db, boss: Boss, config: Config): Promise<number> {
  const due = await takeDueSweeps(
    db,
    config.RECONCILE_INTERVAL_MINUTES,
    config.RECONCILE_MAX_INTERVAL_MINUTES,
    config.RECONCILE_INTERVAL_MINUTES,
  );
  if (due.length)
    await reconcileQueue.insert(
      boss,
      due.map((d) => ({ data: { connectionId: d.connectionId, full: false }, group: { id: String(d.connectionId) }, priority: 1 })),
    );
  return due.length;
}

/** FULL_SWEEP_CRON: a full sweep of every active connection, below incremental sweeps in the queue. */
export async function requestFullSweeps(db: Db, boss: Boss): Promise<number> {
  const active = await listConnections(db, 'active');
  if (active.length)
    await reconcileQueue.insert(
      boss,
      active.map((c) => ({ data: { connectionId: c.id, full: true }, group: { id: String(c.id) }, priority: 0 })),
    );
  return active.length;
}

// Resources incremental sweeps list: a refusal of an event about one of them means only sweeps see its changes.
const swept = new Set(
  Object.values(resources)
    .filter((r) => r.incremental)
    .map((r) => r.name),
);

/**
 * Whether the connection's webhooks tell of every change its incremental sweeps look for: subscriptions made (a
 * webhook address) and no event about a swept resource refused by its service.
 */
export async function webhooksInPlace(db: Executor, connectionId: number): Promise<boolean> {
  const row = await webhookCoverage(db, connectionId);
  if (!row?.address) return false;
  return !row.events.some((e) => swept.has(normaliseEvent(e).resource ?? ''));
}

/** After a sweep that found `found` changes only a sweep brings: the next one's interval (see the top of this file). */
export async function planAfterSweep(db: Db, config: Config, connectionId: number, found: number): Promise<number> {
  const quiet = found === 0 && (await webhooksInPlace(db, connectionId));
  const { intervalMinutes } = await planNextSweep(
    db,
    connectionId,
    quiet,
    config.RECONCILE_INTERVAL_MINUTES,
    config.RECONCILE_MAX_INTERVAL_MINUTES,
  );
  return intervalMinutes;
}
