// Webhook subscriptions of a connection: every event in SUBSCRIBED_EVENTS at
// {PUBLIC_URL}/webhooks/{connection name}, and none of ours left over. "Ours" is any address under our
// PUBLIC_URL's /webhooks/ path: subscriptions other integrations made on the same account are never touched.
// A subscription the service refuses (a service that only knows the spec's eight events answers 422 for the
// documented others) is logged, skipped and remembered per connection in the database (webhook_refusals,
// src/db/refusals.ts): every process's syncs and checks skip it for a day, then ask once more (the service may
// have learned the event); `webhooks sync` (retryRefused) asks at once. The address is kept on the connection, so the scheduled check
// (checkAllWebhooks) repairs subscriptions the service deleted after 3 days of failures, at the same address.
import { ApiError, type ApiClient, type ClientDeps, type WebhookRecord } from '../api/index.ts';
import type { Config } from '../config.ts';
import { publicUrl as derivedPublicUrl } from '../config.ts';
import type { Connection } from '../db/schema.ts';
import { connectionNames, getConnection, setWebhooks, subscribedConnectionIds } from '../db/connections.ts';
import { forgetRefusals, recentRefusals, saveRefusals } from '../db/refusals.ts';
import { logSync } from '../db/synclog.ts';
import { SUBSCRIBED_EVENTS } from './events.ts';

/** What subscription sync needs: the API layer's dependencies (it calls the service). */
export type SubscriptionDeps = ClientDeps;

export interface Webhook {
  id: number;
  event: string;
  address: string;
}

export interface SyncResult {
  connection: string;
  address: string;
  kept: Webhook[];
  created: Webhook[];
  removed: Webhook[];
  /** Events the service refused to subscribe (it does not know them): skipped. */
  refused: { event: string; reason: string }[];
  /** Events not asked for because the service refused them less than a day ago (webhook_refusals). */
  remembered: string[];
}

export interface SyncOptions {
  /** Ask again for every event, even those the service refused within the last day (`webhooks sync`). */
  retryRefused?: boolean;
}

/** How long a refused subscription is not asked for again. */
export const REFUSAL_RETRY_SECONDS = 24 * 60 * 60;

/** The base URL deliveries reach us at: the given one, PUBLIC_URL, or http://HOST:PORT. */
export function baseUrl(config: Config, given?: string): string {
  return (given || derivedPublicUrl(config, config.PORT)).replace(/\/+$/, '');
}

export function deliveryAddress(base: string, connectionName: string): string {
  return `${base}/webhooks/${encodeURIComponent(connectionName)}`;
}

// The API client is loaded on first use: the receiver process itself never needs it.
async function clientOf(deps: SubscriptionDeps, connection: Connection): Promise<ApiClient> {
  const { clientFor } = await import('../api/connections.ts');
  return clientFor(deps, connection);
}

const asWebhook = (w: WebhookRecord): Webhook => ({ id: Number(w.id), event: String(w.event), address: String(w.address) });

/** The connection name an address of ours delivers to, or null when the address is not ours. */
function ourConnectionName(base: string, address: string): string | null {
  const prefix = `${base}/webhooks/`;
  if (!address.startsWith(prefix)) return null;
  const rest = address.slice(prefix.length);
  try {
    return decodeURIComponent(rest);
  } catch {
    return rest;
  }
}

/**
 * Subscribes `connection` to every event we handle at our address and deletes our stale subscriptions:
 * ours for this connection with an event we no longer want, duplicates, and ours naming a connection that no
 * longer exists. Subscriptions of ours that name another existing connection are left alone (two connections
 * on one account must not undo each other).
 */
export async function syncWebhooks(
  deps: SubscriptionDeps,
  connection: Connection,
  publicUrl?: string,
  opts: SyncOptions = {},
): Promise<SyncResult> {
  // Read again: the row passed in may predate the last sync.
  const stored = (await getConnection(deps.db, connection.id))?.webhook_address ?? null;
  const base = publicUrl || !stored ? baseUrl(deps.config, publicUrl) : stored.slice(0, stored.lastIndexOf('/webhooks/'));
  const address = deliveryAddress(base, connection.name);
  const client = await clientOf(deps, connection);
  const existing = (await client.listWebhooks()).map(asWebhook);
  // The other connections whose addresses are on this account (several connections to one account): do they still
  // exist? Only those names are looked up; reading every name for each connection's check was quadratic.
  const others = existing.map((w) => ourConnectionName(base, w.address)).filter((o): o is string => o !== null && o !== connection.name);
  const names = new Set(await connectionNames(deps.db, [...new Set(others)]));
  const wanted = new Set<string>(SUBSCRIBED_EVENTS);
  const result: SyncResult = { connection: connection.name, address, kept: [], created: [], removed: [], refused: [], remembered: [] };
  const have = new Set<string>();
  const stale: Webhook[] = [];
  for (const w of existing) {
    const owner = ourConnectionName(base, w.address);
    if (owner === null) continue;
    if (owner === connection.name) {
      if (w.address === address && wanted.has(w.event) && !have.has(w.event)) {
        have.add(w.event);
        result.kept.push(w);
      } else stale.push(w);
    } else if (!names.has(owner)) stale.push(w);
  }
  const remembered = opts.retryRefused
    ? new Set<string>()
    : await recentRefusals(deps.db, connection.id, connection.base_url, REFUSAL_RETRY_SECONDS);
  try {
    for (const event of wanted) {
      if (have.has(event)) continue;
      if (remembered.has(event)) {
        result.remembered.push(event);
        continue;
      }
      try {
        result.created.push(asWebhook(await client.createWebhook({ address, event })));
      } catch (err) {
        if (!(err instanceof ApiError) || ![400, 422].includes(err.status ?? 0)) throw err;
        result.refused.push({ event, reason: err.message });
        deps.log.warn({ connection: connection.name, event, err: err.message }, 'the service refused a webhook subscription; skipped');
      }
    }
  } finally {
    // Kept even when a later subscription failed otherwise: the next check need not ask these again.
    await saveRefusals(deps.db, connection.id, connection.base_url, result.refused);
  }
  // An event the service accepts now is no longer refused.
  if (result.created.length)
    await forgetRefusals(
      deps.db,
      connection.id,
      result.created.map((w) => w.event),
    );
  for (const w of stale) {
    await client.deleteWebhook(w.id);
    result.removed.push(w);
  }
  // What the service has now, kept for the console (a page view asks the service nothing).
  const gone = new Set(result.removed.map((w) => w.id));
  await setWebhooks(deps.db, connection.id, address, [...existing.filter((w) => !gone.has(w.id)), ...result.created]);
  deps.log.info(
    {
      connection: connection.name,
      address,
      kept: result.kept.length,
      created: result.created.length,
      removed: result.removed.length,
      refused: result.refused.length,
    },
    'webhook subscriptions synced',
  );
  if (result.created.length || result.removed.length || result.refused.length) {
    // A first subscription is not a repair, nor is a refusal alone; anything created or removed after that is.
    const repaired = !!stored && (result.created.length > 0 || result.removed.length > 0);
    await logSync(deps.db, {
      connectionId: connection.id,
      action: repaired ? 'webhooks.repaired' : 'webhooks.synced',
      outcome: repaired && result.created.length ? 'warning' : 'ok',
      detail: {
        address,
        kept: result.kept.length,
        created: result.created.map((w) => w.event),
        removed: result.removed.map((w) => w.event),
        refused: result.refused.map((r) => r.event),
      },
    });
  }
  return result;
}

/**
 * The scheduled check: each active connection whose subscriptions were made once (or those of `ids`, the ones due a
 * check) is synced again at its stored address, which recreates what the service deleted. A failure of one
 * connection is logged, never fatal.
 */
export async function checkAllWebhooks(deps: SubscriptionDeps, ids?: number[]): Promise<SyncResult[]> {
  const out: SyncResult[] = [];
  for (const id of ids ?? (await subscribedConnectionIds(deps.db))) {
    const connection = await getConnection(deps.db, id);
    if (!connection) continue;
    try {
      out.push(await syncWebhooks(deps, connection));
    } catch (err) {
      deps.log.warn({ err, connection: connection.name }, 'webhook subscription check failed; the next check tries again');
      await logSync(deps.db, {
        connectionId: connection.id,
        action: 'webhooks.check',
        outcome: 'error',
        error: (err as Error).message,
      }).catch(() => {});
    }
  }
  return out;
}

/** Per connection, the newest subscription repair in the sync log (for `commerce-sync status`): db/synclog.ts. */

/** Subscriptions, each marked whether it delivers to this deployment. */
export const markOurs = (config: Config, publicUrl: string | undefined, webhooks: Webhook[]): (Webhook & { ours: boolean })[] => {
  const base = baseUrl(config, publicUrl);
  return webhooks.map((w) => ({ ...w, ours: ourConnectionName(base, w.address) !== null }));
};

/** The connection's subscriptions as the service lists them now (a request), each marked whether it is ours. */
export async function listWebhooks(
  deps: SubscriptionDeps,
  connection: Connection,
  publicUrl?: string,
): Promise<(Webhook & { ours: boolean })[]> {
  const client = await clientOf(deps, connection);
  return markOurs(deps.config, publicUrl, (await client.listWebhooks()).map(asWebhook));
}
