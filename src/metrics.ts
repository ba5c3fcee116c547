// Prometheus metrics, one registry per process, served at /metrics by every process that serves HTTP (the
// console adds the database-wide gauges; receiver and worker processes serve their own counters).
// Every module increments these rather than defining its own, so names stay consistent.
import client from 'prom-client';

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

const counter = (name: string, help: string, labelNames: string[] = []) =>
  new client.Counter({ name, help, labelNames, registers: [registry] });
const gauge = (name: string, help: string, labelNames: string[] = []) =>
  new client.Gauge({ name, help, labelNames, registers: [registry] });

export const metrics = {
  deliveriesReceived: counter('commerce_sync_deliveries_received_total', 'Webhook deliveries stored', ['connection', 'event']),
  deliveriesRejected: counter('commerce_sync_deliveries_rejected_total', 'Webhook deliveries refused', ['reason']),
  deliveriesDuplicate: counter('commerce_sync_deliveries_duplicate_total', 'Deliveries seen before, acknowledged and dropped', [
    'connection',
  ]),
  ackLatency: new client.Histogram({
    name: 'commerce_sync_ack_latency_seconds',
    help: 'Time from request start to acknowledgement of a delivery',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  }),
  apiRequests: counter('commerce_sync_api_requests_total', 'Requests sent to the service, by answer status', [
    'connection',
    'method',
    'status',
  ]),
  apiAccountingErrors: counter('commerce_sync_api_accounting_errors_total', '429 answers received: the budget accounting was wrong', [
    'connection',
  ]),
  budgetRemaining: gauge('commerce_sync_api_budget_remaining', 'Requests left in the current rate window', ['connection']),
  queueDepth: gauge('commerce_sync_queue_depth', 'Jobs waiting per queue', ['queue']),
  mirrorLag: gauge(
    'commerce_sync_mirror_lag_seconds',
    'Age of the oldest change of any kind not yet mirrored, documents too (they wait in their windows by design): stock_lag is what channels feel',
    ['connection'],
  ),
  stockLag: gauge('commerce_sync_stock_lag_seconds', 'Stock lag: age of the oldest change of stock not yet mirrored', ['connection']),
  documentsLag: gauge(
    'commerce_sync_documents_lag_seconds',
    'Documents lag: age of the oldest other change not yet mirrored (orders, purchase orders...: they wait up to 120 s by design)',
    ['connection'],
  ),
  driftFound: counter(
    'commerce_sync_drift_found_total',
    'Records a sweep found changed that an event should have announced and no delivery did (missed webhooks)',
    ['connection', 'resource'],
  ),
  recordsFetched: counter('commerce_sync_records_fetched_total', 'Records read from the service', ['connection', 'resource']),
  pushOperations: counter('commerce_sync_push_operations_total', 'Outbound operations by final state', [
    'connection',
    'operation',
    'state',
  ]),
  // Alerts (src/alerts/, docs/alerts.md) and the conditions behind them; the gauges are set on scrape.
  alertsOpen: gauge('commerce_sync_alerts_open', 'Open alerts (condition, severity)', ['condition', 'severity']),
  alertNotifications: counter('commerce_sync_alert_notifications_total', 'Alert notices sent to ALERT_WEBHOOK_URL', ['kind', 'result']),
  connectionStatus: gauge('commerce_sync_connection_status', '1 for the status each connection is in', ['connection', 'status']),
  sweepDrift: gauge(
    'commerce_sync_sweep_drift',
    'Drift of the latest sweeps: changes an event should have announced that no delivery or queued read explained',
    ['connection'],
  ),
  driftExplained: counter('commerce_sync_drift_explained_total', 'Records a sweep changed that a delivery or a queued read explained', [
    'connection',
    'resource',
  ]),
  driftUnannounced: counter(
    'commerce_sync_drift_unannounced_total',
    'Records a sweep changed in a way no event the service sends announces (an order voided, a price): expected, not drift',
    ['connection', 'resource'],
  ),
  stockReadWait: gauge('commerce_sync_stock_read_wait_seconds', 'Age of the oldest stock read waiting', ['connection']),
  budgetWaiting: gauge('commerce_sync_api_budget_waiting', 'Processes waiting for API budget for webhook-driven reads', ['connection']),
  destinationFailures: gauge('commerce_sync_destination_failures', 'POSTs to a destination that failed in a row', ['destination']),
  channelDeliveryBehind: gauge(
    'commerce_sync_channel_delivery_behind',
    "Changes of a channel after its destination's cursor (0: caught up); paused 1 when paused",
    ['connection', 'channel', 'paused'],
  ),
  destinationPosts: counter('commerce_sync_destination_posts_total', 'POSTs to outbound destinations by result', ['destination', 'result']),
};

/** The /metrics answer: this process's registry in the Prometheus text format. */
export async function serveMetrics(ctx: { type: string; body: unknown }): Promise<void> {
  ctx.type = registry.contentType;
  ctx.body = await registry.metrics();
}
