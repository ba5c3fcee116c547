// Stored webhook deliveries for the console and API, newest first (index webhook_deliveries_received or
// webhook_deliveries_state, depending on the filter).
import type { Db } from '../db/index.ts';

export const deliveryStates = ['queued', 'processed', 'unhandled', 'rejected', 'failed'] as const;

export interface DeliveryRow {
  id: number;
  connection_id: number;
  connection: string;
  delivery_id: string;
  event: string | null;
  resource: string | null;
  action: string | null;
  object_id: number | null;
  state: string;
  error: string | null;
  job_id: string | null;
  received_at: Date;
  processed_at: Date | null;
}

export async function listDeliveries(
  db: Db,
  f: { connectionId?: number; state?: string; resource?: string; objectId?: number; before?: number; limit?: number } = {},
): Promise<DeliveryRow[]> {
  let q = db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('connections as c', 'c.id', 'd.connection_id')
    .select([
      'd.id',
      'd.connection_id',
      'c.name as connection',
      'd.delivery_id',
      'd.event',
      'd.resource',
      'd.action',
      'd.object_id',
      'd.state',
      'd.error',
      'd.job_id',
      'd.received_at',
      'd.processed_at',
    ]);
  if (f.connectionId !== undefined) q = q.where('d.connection_id', '=', f.connectionId);
  if (f.state) q = q.where('d.state', '=', f.state as DeliveryRow['state'] as never);
  if (f.resource) q = q.where('d.resource', '=', f.resource);
  if (f.objectId !== undefined) q = q.where('d.object_id', '=', f.objectId);
  if (f.before !== undefined) q = q.where('d.id', '<', f.before);
  const limit = Math.min(Math.max(f.limit ?? 100, 1), 1000);
  return (await q.orderBy('d.received_at', 'desc').orderBy('d.id', 'desc').limit(limit).execute()) as DeliveryRow[];
}
