// The gauges behind deploy/prometheus/alerts.yml and deploy/grafana/commerce-sync.json that describe the alert
// conditions, set from the database when the console's /metrics is scraped (src/console/gauges.ts calls this).
import { catalog } from '../catalog/index.ts';
import { openAlertCounts } from '../db/alerts.ts';
import { liveWaiters } from '../db/budgets.ts';
import { listConnections } from '../db/connections.ts';
import { driftByConnection } from '../db/cursors.ts';
import { destinationOutcomes, destinationStates } from '../db/channel-destinations.ts';
import type { Db } from '../db/index.ts';
import { oldestPendingOf } from '../db/pending.ts';
import { metrics } from '../metrics.ts';
import { freshnessOf } from '../catalog/index.ts';

const STATUSES = ['active', 'unauthorized', 'lapsed', 'disabled', 'mismatched'] as const;
const CONDITIONS = ['signature', 'unauthorized', 'lapsed', 'mismatched', 'dead-letters', 'drift', 'webhooks', 'budget', 'destination'];

export async function refreshAlertGauges(db: Db): Promise<void> {
  const stock = Object.values(catalog)
    .filter((s) => freshnessOf(s.name) === 'stock')
    .map((s) => s.name);
  const [open, connections, destinations, waits, waiting, drifts] = await Promise.all([
    openAlertCounts(db),
    listConnections(db),
    destinationOutcomes(db),
    oldestPendingOf(db, [...stock, 'composition']),
    liveWaiters(db, 1),
    driftByConnection(db),
  ]);
  metrics.alertsOpen.reset();
  // Every condition has a series, 0 when nothing is open, so a rule or panel on it never sees "no data".
  for (const condition of CONDITIONS) for (const severity of ['critical', 'warning']) metrics.alertsOpen.set({ condition, severity }, 0);
  for (const o of open) metrics.alertsOpen.set({ condition: o.condition, severity: o.severity }, o.n);
  metrics.connectionStatus.reset();
  metrics.sweepDrift.reset();
  metrics.stockReadWait.reset();
  metrics.budgetWaiting.reset();
  const waitOf = new Map(waits.map((w) => [w.connectionId, w.seconds]));
  for (const c of connections) {
    for (const s of STATUSES) metrics.connectionStatus.set({ connection: c.name, status: s }, c.status === s ? 1 : 0);
    metrics.sweepDrift.set({ connection: c.name }, drifts.get(c.id) ?? 0);
    metrics.stockReadWait.set({ connection: c.name }, waitOf.get(c.id) ?? 0);
    metrics.budgetWaiting.set({ connection: c.name }, waiting.get(c.id) ?? 0);
  }
  metrics.destinationFailures.reset();
  for (const d of destinations) metrics.destinationFailures.set({ destination: d.name }, d.failures);
  metrics.channelDeliveryBehind.reset();
  for (const d of await destinationStates(db))
    metrics.channelDeliveryBehind.set({ connection: d.connection, channel: d.channel, paused: d.paused_at ? '1' : '0' }, d.behind);
}
