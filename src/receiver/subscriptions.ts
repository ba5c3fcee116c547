// Webhook subscriptions of a connection: every event in SUBSCRIBED_EVENTS at
// {PUBLIC_URL}/webhooks/{connection name}, and none of ours left over. "Ours" is any address under our
// PUBLIC_URL's /webhooks/ path: subscriptions other integrations made on the same account are never touched.
import type { ApiClient } from '../api/index.ts';
import type { Config } from '../config.ts';
import { publicUrl as derivedPublicUrl } from '../config.ts';
import type { Db } from '../db/index.ts';
import type { Connection } from '../db/schema.ts';
import type { Logger } from '../log.ts';
import { SUBSCRIBED_EVENTS } from './events.ts';

export interface SubscriptionDeps { db: Db; config: Config; log: Logger }

export interface Webhook { id: number; event: string; address: string }

export interface SyncResult {
  connection: string;
  address: string;
  kept: Webhook[];
  created: Webhook[];
  removed: Webhook[];
}

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

const asWebhook = (w: any): Webhook => ({ id: Number(w.id), event: String(w.event), address: String(w.address) });

/** The connection name an address of ours delivers to, or null when the address is not ours. */
function ourConnectionName(base: string, address: string): string | null {
  const prefix = `${base}/webhooks/`;
  if (!address.startsWith(prefix)) return null;
  const rest = address.slice(prefix.length);
  try { return decodeURIComponent(rest); } catch { return rest; }
}

/**
 * Subscribes `connection` to every event we handle at our address and deletes our stale subscriptions:
 * ours for this connection with an event we no longer want, duplicates, and ours naming a connection that no
 * longer exists. Subscriptions of ours that name another existing connection are left alone (two connections
 * on one account must not undo each other).
 */
export async function syncWebhooks(deps: SubscriptionDeps, connection: Connection, publicUrl?: string): Promise<SyncResult> {
  const base = baseUrl(deps.config, publicUrl);
  const address = deliveryAddress(base, connection.name);
  const client = await clientOf(deps, connection);
  const existing = (await client.listWebhooks()).map(asWebhook);
  const names = new Set((await deps.db.selectFrom('connections').select('name').execute()).map((r) => r.name));
  const wanted = new Set<string>(SUBSCRIBED_EVENTS);
  const result: SyncResult = { connection: connection.name, address, kept: [], created: [], removed: [] };
  const have = new Set<string>();
  const stale: Webhook[] = [];
  for (const w of existing) {
    const owner = ourConnectionName(base, w.address);
    if (owner === null) continue;
    if (owner === connection.name) {
      if (w.address === address && wanted.has(w.event) && !have.has(w.event)) { have.add(w.event); result.kept.push(w); }
      else stale.push(w);
    } else if (!names.has(owner)) stale.push(w);
  }
  for (const event of wanted) {
    if (have.has(event)) continue;
    result.created.push(asWebhook(await client.createWebhook({ address, event })));
  }
  for (const w of stale) {
    await client.deleteWebhook(w.id);
    result.removed.push(w);
  }
  deps.log.info({ connection: connection.name, address, kept: result.kept.length, created: result.created.length,
    removed: result.removed.length }, 'webhook subscriptions synced');
  return result;
}

/** The connection's subscriptions as the service lists them, each marked whether it is ours. */
export async function listWebhooks(deps: SubscriptionDeps, connection: Connection, publicUrl?: string): Promise<(Webhook & { ours: boolean })[]> {
  const base = baseUrl(deps.config, publicUrl);
  const client = await clientOf(deps, connection);
  return (await client.listWebhooks()).map(asWebhook).map((w) => ({ ...w, ours: ourConnectionName(base, w.address) !== null }));
}
