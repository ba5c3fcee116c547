// The maintenance queue's handler: retention (retention.ts), schedules and channel rules, lapsed connections,
// webhook subscriptions, and the safety net for pending fetches whose drain job was lost.
import { probeLapsed } from '../api/index.ts';
import { connectionByName } from '../db/connections.ts';
import type { Db } from '../db/index.ts';
import { metrics } from '../metrics.ts';
import type { MaintenanceTask } from '../queue/contracts.ts';
import { checkAllWebhooks } from '../receiver/subscriptions.ts';
import type { WorkerDeps } from '../queue/handler.ts';
import { applyRulesIfChanged, rulesDue } from '../stock/recompute.ts';
import { activeConnectionsChannels } from '../db/channels.ts';
import { announceChanges, requestDueDeliveries } from '../channels/dispatch.ts';
import { logSync } from '../db/synclog.ts';
import { enforceRetention } from './retention.ts';
import { markPending, pendingLagByConnection } from '../db/pending.ts';
import { duePendingPairs } from '../db/drain-pairs.ts';
import { expireHolds } from '../channels/holds.ts';
import { requestDueSweeps, requestFullSweeps, syncSchedules } from './schedules.ts';
import { webhookChecksDue } from '../db/sweep-plans.ts';
import { dueWatches, setWatches } from '../db/channel-order-events.ts';
import { deliveriesFlowing } from '../db/deliveries.ts';
import { nextWatch } from '../channels/order-events.ts';
import { CHANNEL_ORDER } from '../catalog/index.ts';

export async function handleMaintenance(deps: WorkerDeps, task: MaintenanceTask): Promise<void> {
  const { db, boss, config, log } = deps;
  switch (task) {
    case 'retention': {
      const run = await enforceRetention(db, config);
      if (!run) break; // another worker's run holds the lock
      const deleted = Object.fromEntries(Object.entries(run.deleted).filter(([, n]) => n > 0));
      if (run.done) log.debug({ deleted, batches: run.batches, ms: run.ms }, 'retention');
      else log.info({ deleted, batches: run.batches, ms: run.ms }, 'retention: rows past their window remain; the next run goes on');
      break;
    }
    case 'schedules':
      await syncSchedules(db, boss, config);
      await applyRules(deps);
      break;
    case 'sweeps': {
      const n = await requestDueSweeps(db, boss, config);
      if (n) log.debug({ sweeps: n }, 'incremental sweeps due');
      break;
    }
    case 'full-sweeps':
      log.info({ sweeps: await requestFullSweeps(db, boss) }, 'full sweeps asked for (FULL_SWEEP_CRON)');
      break;
    case 'probe-lapsed': {
      const resumed = await probeLapsed(deps);
      for (const name of resumed) {
        const c = await connectionByName(db, name);
        await logSync(db, { connectionId: c?.id ?? null, action: 'connection.resumed', detail: { was: 'lapsed' } });
      }
      // Sweeps were unscheduled while it was lapsed; the first one repairs whatever changed meanwhile.
      if (resumed.length) await syncSchedules(db, boss, config);
      break;
    }
    case 'webhooks':
      // The service deletes a subscription after 3 days of failed deliveries: recreate what is missing. Deliveries
      // arriving show the subscriptions work: only connections without any for a while are checked, and an idle one
      // no more often than its sweeps (src/db/sweep-plans.ts).
      await checkAllWebhooks(deps, await webhookChecksDue(db, config.WEBHOOK_CHECK_MINUTES));
      break;
    case 'holds': {
      // Holds past CHANNEL_HOLD_MINUTES end; those whose order is known but whose variants' last reads predate it
      // get those variants read again (src/channels/holds.ts).
      const r = await expireHolds(db);
      await announceChanges(deps, r.changes);
      for (const [connectionId, ids] of r.toRead) {
        await markPending(
          db,
          ids.map((id) => ({ connectionId, resource: 'variant', id, reason: 'held order committed' })),
        );
      }
      if (r.expired) log.info({ expired: r.expired }, 'holds expired');
      break;
    }
    case 'order-watch': {
      const n = await watchChannelOrders(deps);
      if (n) log.debug({ orders: n }, 'channel orders read back');
      break;
    }
    case 'pending':
      // Safety net: rows a killed drain had claimed, whose claim has lapsed, are due again.
      await duePendingPairs(db);
      // And channel destinations with changes waiting whose job was lost, or whose retry is due.
      await requestDueDeliveries(db, boss);
      await updateLag(db);
      break;
  }
}

/**
 * Channel orders due for a read-back (src/channels/order-events.ts: voids, tracking added later and returns
 * received later come with no webhook): their orders, fulfilments and open returns are marked for the drains,
 * which read them 250 a request within the budget's pacing, behind stock. Answers how many orders.
 */
async function watchChannelOrders(deps: WorkerDeps): Promise<number> {
  const due = await dueWatches(deps.db, 2000);
  if (!due.length) return 0;
  const marks = due.flatMap((o) => [
    { connectionId: o.connection_id, resource: CHANNEL_ORDER, id: o.order_id, reason: 'order.watch' },
    ...o.fulfillment_ids.map((id) => ({ connectionId: o.connection_id, resource: 'fulfillment', id, reason: 'fulfillment.watch' })),
    ...o.return_ids.map((id) => ({
      connectionId: o.connection_id,
      resource: 'fulfillment_return',
      id,
      reason: 'fulfillment_return.watch',
    })),
  ]);
  const now = new Date();
  const flowing = new Map<number, boolean>();
  for (const id of new Set(due.map((o) => o.connection_id))) flowing.set(id, await deliveriesFlowing(deps.db, id));
  await deps.db.transaction().execute(async (tx) => {
    await markPending(tx, marks);
    await setWatches(
      tx,
      due.map((o) => ({
        connection_id: o.connection_id,
        order_id: o.order_id,
        watch_at: nextWatch(o.created_at, now, o, flowing.get(o.connection_id)),
      })),
    );
  });
  return due.length;
}

/**
 * Channel rules changed (settings, or a channel_rules row): recompute the connection's quantities. Every active
 * connection's channels are checked in one statement, and only a connection with a channel due (or none yet) costs
 * more: at thousands of connections, a check per connection made a worker's start take minutes, and each
 * schedules run thousands of statements.
 */
export async function applyRules(deps: WorkerDeps): Promise<void> {
  const due = (await activeConnectionsChannels(deps.db)).filter((c) => !c.channels.length || c.channels.some(rulesDue));
  for (const c of due) {
    const n = await applyRulesIfChanged(deps.db, deps.config, c.id, (changes) => announceChanges(deps, changes));
    if (n !== null) deps.log.info({ connection: c.name, changes: n }, 'channel rules applied');
  }
}

/** The lag gauges from the reads still waiting, per connection: stock's, the rest's, and the older of the two. */
async function updateLag(db: Db): Promise<void> {
  for (const r of await pendingLagByConnection(db)) {
    metrics.stockLag.set({ connection: r.name }, r.stock);
    metrics.documentsLag.set({ connection: r.name }, r.documents);
    metrics.mirrorLag.set({ connection: r.name }, Math.max(r.stock, r.documents));
  }
}
