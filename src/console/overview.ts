// What an operator asks first, per connection: is data arriving, is anything stuck, how far behind are
// we, how much API budget is left, what did the last sweep find, what failed. Shared by the console's
// overview page, /api/overview, /metrics and `commerce-sync status`.
import { destinationStates, destinationStatus, type DestinationStatus } from '../db/channel-destinations.ts';
import { hostOf } from '../channels/sender.ts';
import { rollover } from '../api/budget.ts';
import { listBudgets } from '../db/budgets.ts';
import { connectionSummaries } from '../db/connections.ts';
import { listCursors } from '../db/cursors.ts';
import { deliveryCounts } from '../db/delivery-reads.ts';
import type { Db } from '../db/index.ts';
import { errorCountsLastHour, recentErrors } from '../db/synclog.ts';
import { openAlerts, type AlertView } from '../db/alerts.ts';
import { queueDepths, type QueueDepth } from '../queue/depths.ts';
import { LONGEST_WINDOW_SECONDS } from '../sync/pacing.ts';

/** A connection's budget as the console shows it (the model itself is src/api/budget.ts BudgetState). */
export interface BudgetView {
  limit: number;
  /** Requests that may still be sent in this window: the service's count (the whole limit once a known reset
   * has passed) less the requests in flight. */
  remaining: number;
  resetAt: Date;
  inFlight: number;
  accountingErrors: number;
}

export interface SweepState {
  resource: string;
  lastSweepAt: Date | null;
  lastFullSweepAt: Date | null;
  drift: number;
}

export interface ConnectionOverview {
  id: number;
  name: string;
  accountName: string | null;
  baseUrl: string;
  status: string;
  statusReason: string | null;
  /** ok | degraded (errors, or stock or documents behind) | down (connection not active). */
  health: 'ok' | 'degraded' | 'down';
  deliveriesPerMinute: number;
  deliveriesLastHour: number;
  queuedDeliveries: number;
  failedDeliveries: number;
  /**
   * Stock lag, what a channel feels: seconds since the oldest change of stock (a variant and its stock levels, a
   * bundle's makeup, a shipment, a channel's order) not yet in the mirror, a queued delivery or a pending read; 0
   * when none waits.
   */
  stockLagSeconds: number;
  /**
   * Documents lag: the same for everything else (orders, purchase orders, customers...), whose reads wait in their
   * coalescing windows by design, up to `documentsWindowSeconds` (src/sync/pacing.ts).
   */
  documentsLagSeconds: number;
  documentsWindowSeconds: number;
  /** The greater of the two, the oldest change of any kind: kept for a release for those who read it (CHANGELOG). */
  lagSeconds: number;
  budget: BudgetView | null;
  /** Its channels' destinations: caught up, behind by N, failing since, paused. */
  destinations: DestinationSummary[];
  lastSweepAt: Date | null;
  lastFullSweepAt: Date | null;
  /** Drift the latest sweep of each resource found, summed. */
  lastDrift: number;
  sweeps: SweepState[];
  errorsLastHour: number;
  recentErrors: { id: number; at: Date; action: string; resource: string | null; sku: string | null; error: string | null }[];
}

/** A channel's destination as the overview and `status` show it (docs/channels.md). */
export interface DestinationSummary {
  channel: string;
  host: string;
  state: DestinationStatus;
  behind: number;
  /** The channel's lag: seconds since the oldest change it has not acknowledged was made (0: caught up). */
  lagSeconds: number;
  failingSince: Date | null;
  failures: number;
  lastError: string | null;
  pausedReason: string | null;
}

export interface Overview {
  at: Date;
  /** Open alerts (docs/alerts.md), critical first. */
  alerts: AlertView[];
  connections: ConnectionOverview[];
  queues: QueueDepth[];
}

/** The names of the two lags on the overview and in `status`, the same in both (tests look for them). */
export const STOCK_LAG = 'Stock lag';
export const documentsLag = (windowSeconds: number) => `Documents lag (orders, purchase orders: wait up to ${windowSeconds} s by design)`;

/** Seconds behind after which a connection counts as degraded (documents: beyond their window). */
const LAG_DEGRADED_SECONDS = 120;

export async function connectionOverviews(db: Db, onlyId?: number): Promise<ConnectionOverview[]> {
  const conns = await connectionSummaries(db, onlyId);
  if (!conns.length) return [];
  const ids = conns.map((c) => c.id);
  const [deliveries, budgets, sweeps, errors, recent, destinations] = await Promise.all([
    deliveryCounts(db, ids),
    listBudgets(db, ids),
    listCursors(db, ids),
    errorCountsLastHour(db, ids),
    recentErrors(db, ids),
    destinationStates(db, onlyId === undefined ? {} : { connectionId: onlyId }),
  ]);
  const now = Date.now();
  // By connection: a search of every row for each connection was seconds of CPU at thousands of them (a scrape of /metrics).
  const one = <T extends { connection_id: number }>(rows: T[]) => new Map(rows.map((r) => [r.connection_id, r]));
  const [deliveryOf, budgetOf, errorsOf] = [one(deliveries), one(budgets), one(errors)];
  const [sweepsOf, recentOf, destinationsOf] = [
    Map.groupBy(sweeps, (r) => r.connection_id),
    Map.groupBy(recent, (r) => r.connection_id),
    Map.groupBy(destinations, (d) => d.connection_id),
  ];
  return conns.map((c) => {
    const d = deliveryOf.get(c.id);
    const b = budgetOf.get(c.id);
    const s = sweepsOf.get(c.id) ?? [];
    const errorsLastHour = errorsOf.get(c.id)?.n ?? 0;
    const stockLagSeconds = Math.round(Number(d?.stock_lag ?? 0));
    const documentsLagSeconds = Math.round(Number(d?.documents_lag ?? 0));
    const behind = stockLagSeconds > LAG_DEGRADED_SECONDS || documentsLagSeconds > LAG_DEGRADED_SECONDS + LONGEST_WINDOW_SECONDS;
    const latest = (xs: (Date | null)[]) => xs.reduce<Date | null>((m, x) => (x && (!m || x > m) ? x : m), null);
    let budget: BudgetView | null = null;
    if (b) {
      // The client's own model (src/api/budget.ts): a known reset that has passed starts a fresh window, and
      // requests in flight are spent already.
      const s = rollover(
        { limit: b.request_limit, remaining: b.remaining, resetAt: new Date(b.reset_at).getTime(), resetKnown: b.reset_known },
        now,
      );
      budget = {
        limit: s.limit,
        remaining: Math.max(0, s.remaining - b.in_flight),
        resetAt: new Date(b.reset_at),
        inFlight: b.in_flight,
        accountingErrors: b.accounting_errors,
      };
    }
    return {
      id: c.id,
      name: c.name,
      accountName: c.account_name,
      baseUrl: c.base_url,
      status: c.status,
      statusReason: c.status_reason,
      health: c.status !== 'active' ? 'down' : errorsLastHour > 0 || behind ? 'degraded' : 'ok',
      deliveriesPerMinute: Math.round(((d?.last5 ?? 0) / 5) * 10) / 10,
      deliveriesLastHour: d?.last60 ?? 0,
      queuedDeliveries: d?.queued ?? 0,
      failedDeliveries: d?.failed ?? 0,
      stockLagSeconds,
      documentsLagSeconds,
      documentsWindowSeconds: LONGEST_WINDOW_SECONDS,
      lagSeconds: Math.max(stockLagSeconds, documentsLagSeconds),
      budget,
      lastSweepAt: latest(s.map((r) => r.last_sweep_at as Date | null)),
      lastFullSweepAt: latest(s.map((r) => r.last_full_sweep_at as Date | null)),
      lastDrift: s.reduce((n, r) => n + r.last_drift, 0),
      sweeps: s.map((r) => ({
        resource: r.resource,
        lastSweepAt: r.last_sweep_at as Date | null,
        lastFullSweepAt: r.last_full_sweep_at as Date | null,
        drift: r.last_drift,
      })),
      errorsLastHour,
      recentErrors: (recentOf.get(c.id) ?? []).map(({ connection_id: _, ...e }) => e),
      destinations: (destinationsOf.get(c.id) ?? []).map((d) => ({
        channel: d.channel,
        host: hostOf(d.url),
        state: destinationStatus(d),
        behind: d.behind,
        lagSeconds: Math.round(d.lag_seconds),
        failingSince: d.failing_since,
        failures: d.failures,
        lastError: d.last_error,
        pausedReason: d.paused_reason,
      })),
    };
  });
}

export async function overview(db: Db): Promise<Overview> {
  const [connections, queues, alerts] = await Promise.all([connectionOverviews(db), queueDepths(db), openAlerts(db)]);
  return { at: new Date(), alerts, connections, queues };
}
