// Forgetting what a connection mirrored, for `commerce-sync reset-mirror` (src/sync/account.ts): every row that
// stands for a record of its account, or for work about one. What stays is the connection's own: its channels and
// their settings, destinations, the quantities each channel was last told and their feed (so a channel hears only
// what differs once the account is read afresh), budget, sync log, alerts, audit and the deliveries received.
import { sql } from 'kysely';
import type { Executor } from './index.ts';

/** The tables cleared, children before parents; each has a connection_id. */
const FORGOTTEN = [
  // The mirror (src/catalog/index.ts names its resources) and the reads about it.
  'stock_levels',
  'compositions',
  'order_line_items',
  'fulfillment_line_items',
  'fulfillment_return_line_items',
  'purchase_order_line_items',
  'variants',
  'products',
  'locations',
  'orders',
  'fulfillments',
  'fulfillment_returns',
  'purchase_orders',
  'companies',
  'addresses',
  'contacts',
  'currencies',
  'other_records',
  'sync_cursors',
  'sweep_plans',
  'pending_fetches',
  'drain_pairs',
  // What was pushed to that account, and the channel orders it became: their ids are that account's.
  'channel_order_events',
  'channel_orders',
  'push_operations',
  'channel_hold_lines',
  'channel_holds',
] as const;

/** Deletes the connection's rows of every table above; the counts by table (only those with rows). */
export async function forgetMirror(db: Executor, connectionId: number): Promise<Record<string, number>> {
  const deleted: Record<string, number> = {};
  for (const table of FORGOTTEN) {
    const r = await sql`DELETE FROM ${sql.table(table)} WHERE connection_id = ${connectionId}`.execute(db);
    if (r.numAffectedRows) deleted[table] = Number(r.numAffectedRows);
  }
  return deleted;
}
