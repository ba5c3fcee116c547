// The conditions a person must act on, each one cheap look at tables we keep anyway (docs/alerts.md has the table).
// A check returns the findings that hold now; the evaluator (evaluate.ts) opens an alert per finding's key and
// resolves the alerts of a check that no longer finds them. Every message says what is wrong and names the setting
// or the action that fixes it. No message holds a secret or a URL (a URL's path may be one): hosts at most.
import { rollover } from '../api/budget.ts';
import { eventsIn } from '../catalog/index.ts';
import type { Config } from '../config.ts';
import { listBudgets, liveWaiters } from '../db/budgets.ts';
import { listConnections } from '../db/connections.ts';
import { driftByConnection } from '../db/cursors.ts';
import { latestReceived } from '../db/delivery-reads.ts';
import { destinationOutcomes } from '../db/channel-destinations.ts';
import type { Finding } from '../db/alerts.ts';
import type { Db } from '../db/index.ts';
import { oldestPendingOf } from '../db/pending.ts';
import { refusalsByConnection } from '../db/refusals.ts';
import { rejectionsByConnection } from '../db/rejections.ts';
import type { Connection } from '../db/schema.ts';
import { recentWebhookRepairs } from '../db/synclog.ts';
import { queueDepths } from '../queue/depths.ts';
import { isDeadLetter } from '../queue/queue.ts';
import { freshnessOf } from '../catalog/index.ts';
import { catalog } from '../catalog/index.ts';

export interface CheckContext {
  db: Db;
  config: Config;
  /** Every connection, read once per evaluation. */
  connections: Connection[];
}

export interface Check {
  /** The conditions it looks for (the first part of each finding's key): their alerts resolve when not found. */
  conditions: string[];
  run(ctx: CheckContext): Promise<Finding[]>;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const REFUSAL_DAY = 24 * 60 * 60;
/** How long a repair of deleted subscriptions stays an alert. */
const REPAIR_HOURS = 24;

/** Deliveries refused for their signature, with none stored since: the signing secret is wrong. */
export const signature: Check = {
  conditions: ['signature'],
  async run({ db, config }) {
    const refused = await rejectionsByConnection(db, 'signature', config.ALERT_WINDOW_MINUTES);
    const stored = await latestReceived(
      db,
      refused.map((r) => r.connectionId),
    );
    return refused
      .filter((r) => r.count >= config.ALERT_SIGNATURE_FAILURES)
      .filter((r) => {
        const last = stored.get(r.connectionId);
        return !last || last < r.lastAt;
      })
      .map((r) => ({
        key: `signature:${r.name}`,
        condition: 'signature',
        connectionId: r.connectionId,
        severity: 'critical',
        count: r.count,
        message:
          `${plural(r.count, 'delivery', 'deliveries')} to ${r.name} refused for their signature in the last ${config.ALERT_WINDOW_MINUTES} minutes, none stored since: ` +
          'check COMMERCE_CLIENT_SECRET (and COMMERCE_CLIENT_SECRET_PREVIOUS during a rotation): it must be the client secret the service signs deliveries with.',
      }));
  },
};

/** A connection the service no longer accepts (401, 402), or whose account is not its mirror's (src/sync/account.ts). */
export const connectionStatus: Check = {
  conditions: ['unauthorized', 'lapsed', 'mismatched'],
  async run({ connections }) {
    const out: Finding[] = [];
    for (const c of connections) {
      const why = c.status_reason ? ` (${c.status_reason})` : '';
      if (c.status === 'unauthorized')
        out.push({
          key: `unauthorized:${c.name}`,
          condition: 'unauthorized',
          connectionId: c.id,
          severity: 'critical',
          count: 1,
          message: `Connection ${c.name} is unauthorized${why}: the service refuses its token. Reconnect it (console: Connections, ${c.name}, Reconnect; or commerce-sync connect --name ${c.name}).`,
        });
      else if (c.status === 'lapsed')
        out.push({
          key: `lapsed:${c.name}`,
          condition: 'lapsed',
          connectionId: c.id,
          severity: 'critical',
          count: 1,
          message: `The account of connection ${c.name} has lapsed${why}: the service answers 402 to every call and nothing syncs. Renew the account's subscription with the service; commerce-sync tries it every 5 minutes and resumes by itself.`,
        });
      else if (c.status === 'mismatched')
        out.push({
          key: `mismatched:${c.name}`,
          condition: 'mismatched',
          connectionId: c.id,
          severity: 'critical',
          count: 1,
          message: `Connection ${c.name} stopped before sending anything: ${c.status_reason ?? 'its service answers for another account than its mirror was made from'}. Nothing syncs until then; channels keep what they were last told.`,
        });
    }
    return out;
  },
};

/** Jobs that failed every retry and wait in a dead-letter queue. */
export const deadLetters: Check = {
  conditions: ['dead-letters'],
  async run({ db }) {
    return (await queueDepths(db))
      .filter((q) => isDeadLetter(q.queue) && q.queued > 0)
      .map((q) => ({
        key: `dead-letters:${q.queue}`,
        condition: 'dead-letters',
        connectionId: null,
        severity: 'warning',
        count: q.queued,
        message: `${plural(q.queued, 'job')} in ${q.queue} failed every retry: see why on the console's Dead letters page (or commerce-sync deliveries), fix the cause, then replay them there.`,
      }));
  },
};

/**
 * Changes the latest sweeps found that an event should have announced and no delivery or queued read explains,
 * above ALERT_DRIFT_THRESHOLD. Changes the service sends no event for are not counted (src/sync/drift.ts).
 */
export const drift: Check = {
  conditions: ['drift'],
  async run({ db, config, connections }) {
    const active = connections.filter((c) => c.status === 'active');
    const drifts = await driftByConnection(db);
    const out: Finding[] = [];
    for (const c of active) {
      const n = drifts.get(c.id) ?? 0;
      if (n > config.ALERT_DRIFT_THRESHOLD)
        out.push({
          key: `drift:${c.name}`,
          condition: 'drift',
          connectionId: c.id,
          severity: 'warning',
          count: n,
          message: `The latest sweeps of ${c.name} found ${plural(n, 'change')} that an event should have announced and no delivery did (ALERT_DRIFT_THRESHOLD is ${config.ALERT_DRIFT_THRESHOLD}; changes the service sends no event for, such as an order voided or a variant's price, are not counted): webhooks are being missed. Check the subscriptions (commerce-sync webhooks list) and that PUBLIC_URL reaches the receiver.`,
        });
    }
    return out;
  },
};

/**
 * Webhook subscriptions the service deleted (the scheduled check had to recreate them within the last day: the
 * service deletes one after 3 days of failed deliveries, or on a 410) or refused for an event of the spec's own list
 * (every service knows those, so the refusal is about us: the address, most likely). A refused event of the
 * documented list only is a service that does not know it, nothing to act on, and opens nothing.
 */
export const webhooks: Check = {
  conditions: ['webhooks'],
  async run({ db, connections }) {
    const spec = new Set(eventsIn('spec'));
    const [refusals, repairs] = await Promise.all([refusalsByConnection(db, REFUSAL_DAY), recentWebhookRepairs(db, REPAIR_HOURS)]);
    const out: Finding[] = [];
    for (const c of connections) {
      if (c.status === 'disabled') continue;
      const refused = (refusals.get(c.id) ?? []).filter((r) => spec.has(r.event));
      const repaired = repairs.get(c.id);
      if (!refused.length && !repaired) continue;
      const parts: string[] = [];
      if (repaired)
        parts.push(
          `the service had deleted ${plural(repaired.created.length, 'subscription')} of ${c.name} (${repaired.created.join(', ')}), recreated at ${repaired.at.toISOString()}: it deletes one after 3 days of failed deliveries or a 410, so check that PUBLIC_URL reaches the receiver`,
        );
      if (refused.length)
        parts.push(
          `the service refuses to subscribe ${c.name} to ${refused.map((r) => r.event).join(', ')}${refused[0]?.reason ? ` (${refused[0].reason})` : ''}: check PUBLIC_URL (the address subscriptions point at), then run commerce-sync webhooks sync`,
        );
      const text = parts.join('; and ');
      out.push({
        key: `webhooks:${c.name}`,
        condition: 'webhooks',
        connectionId: c.id,
        severity: refused.length ? 'critical' : 'warning',
        count: refused.length + (repaired?.created.length ?? 0),
        message: `${text[0]!.toUpperCase()}${text.slice(1)}.`,
      });
    }
    return out;
  },
};

/** Stock reads that have waited longer than ALERT_STOCK_WAIT_SECONDS while the API budget is spent. */
export const starvedStockReads: Check = {
  conditions: ['budget'],
  async run({ db, config, connections }) {
    const stock = Object.values(catalog)
      .filter((s) => freshnessOf(s.name) === 'stock')
      .map((s) => s.name);
    const [waits, budgets, waiting] = await Promise.all([
      oldestPendingOf(db, [...stock, 'composition']),
      listBudgets(db),
      liveWaiters(db, 1),
    ]);
    const now = Date.now();
    const out: Finding[] = [];
    // By connection: a search of every row for each of thousands of connections was the round's CPU.
    const waitOf = new Map(waits.map((w) => [w.connectionId, w]));
    const budgetOf = new Map(budgets.map((x) => [x.connection_id, x]));
    for (const c of connections.filter((x) => x.status === 'active')) {
      const wait = waitOf.get(c.id);
      if (!wait || wait.seconds < config.ALERT_STOCK_WAIT_SECONDS) continue;
      const b = budgetOf.get(c.id);
      if (!b) continue;
      const s = rollover(
        { limit: b.request_limit, remaining: b.remaining, resetAt: new Date(b.reset_at).getTime(), resetKnown: b.reset_known },
        now,
      );
      const left = Math.max(0, s.remaining - b.in_flight);
      // Short of budget: a process waits for a slot for webhook reads now, or a tenth of the window or less is left.
      const short = (waiting.get(c.id) ?? 0) > 0 || left <= Math.ceil(s.limit / 10);
      if (!short) continue;
      const seconds = Math.round(wait.seconds);
      out.push({
        key: `budget:${c.name}`,
        condition: 'budget',
        connectionId: c.id,
        severity: 'warning',
        count: seconds,
        message: `Stock reads of ${c.name} have waited ${seconds} s for API budget (${left} of ${s.limit} requests left in this window; ALERT_STOCK_WAIT_SECONDS is ${config.ALERT_STOCK_WAIT_SECONDS}): something else spends the account's rate limit. Look at commerce_sync_api_requests_total and commerce-sync status for what does (another application on the account, large pushes); BUDGET_RESERVE keeps part of each window for stock reads.`,
      });
    }
    return out;
  },
};

/** A channel's destination that has failed ALERT_DESTINATION_FAILURES POSTs in a row. */
export const destinations: Check = {
  conditions: ['destination'],
  async run({ db, config }) {
    return (await destinationOutcomes(db))
      .filter((d) => d.failures >= config.ALERT_DESTINATION_FAILURES && d.failing_since)
      .map((d) => ({
        key: `destination:${d.name}`,
        condition: 'destination',
        connectionId: d.connection_id,
        severity: 'critical' as const,
        count: d.failures,
        message: `The destination of channel ${d.connection}/${d.channel} (host ${d.host}) has failed ${plural(d.failures, 'POST')} in a row since ${new Date(d.failing_since!).toISOString()}, last: ${d.last_error ?? 'failed'}. Changes wait and are retried, in order, from the last one it acknowledged (after CHANNEL_DELIVERY_PAUSE_MINUTES it is paused); check that endpoint and its secret (commerce-sync channels destination).`,
      }));
  },
};

export const checks: Check[] = [signature, connectionStatus, deadLetters, drift, webhooks, starvedStockReads, destinations];

/** Every connection: the checks share one read. */
export async function checkContext(db: Db, config: Config): Promise<CheckContext> {
  return { db, config, connections: await listConnections(db) };
}
