// Reads of the webhook_deliveries store beside the receiver's and the handler's: the operators' listings, counts
// per connection and per time bin, the latest delivery, and which records deliveries announced (for sweeps).
import { type Selectable, sql } from 'kysely';
import { type BinWindow, countsPerBin } from './bins.ts';
import type { Executor } from './index.ts';
import { pendingLag, tierOf } from './pending.ts';
import type { WebhookDeliveriesTable } from './schema.ts';

/** A stored delivery as the console lists it, with its connection's name. */
export type DeliveryRow = Pick<
  Selectable<WebhookDeliveriesTable>,
  | 'id'
  | 'connection_id'
  | 'delivery_id'
  | 'event'
  | 'resource'
  | 'action'
  | 'object_id'
  | 'state'
  | 'error'
  | 'job_id'
  | 'received_at'
  | 'processed_at'
> & { connection: string };

const rowColumns = [
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
] as const;

export interface DeliveryFilter {
  connectionId?: number;
  state?: string;
  resource?: string;
  objectId?: number;
  /** Rows with a smaller id (the next page). */
  before?: number;
  limit?: number;
}

/**
 * Newest first (index webhook_deliveries_received or webhook_deliveries_state, depending on the filter); at most
 * `maxLimit` (1000: the console's pages; the `deliveries` command lists as many as asked).
 */
export async function listDeliveries(db: Executor, f: DeliveryFilter = {}, maxLimit = 1000): Promise<DeliveryRow[]> {
  let q = db.selectFrom('webhook_deliveries as d').innerJoin('connections as c', 'c.id', 'd.connection_id').select(rowColumns);
  if (f.connectionId !== undefined) q = q.where('d.connection_id', '=', f.connectionId);
  if (f.state) q = q.where('d.state', '=', f.state as DeliveryRow['state']);
  if (f.resource) q = q.where('d.resource', '=', f.resource);
  if (f.objectId !== undefined) q = q.where('d.object_id', '=', f.objectId);
  if (f.before !== undefined) q = q.where('d.id', '<', f.before);
  const limit = Math.min(Math.max(f.limit ?? 100, 1), maxLimit);
  return (await q.orderBy('d.received_at', 'desc').orderBy('d.id', 'desc').limit(limit).execute()) as DeliveryRow[];
}

/** One stored delivery, body included, with its connection's name. */
export async function deliveryWithConnection(db: Executor, id: number) {
  return (
    db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('connections as c', 'c.id', 'd.connection_id')
      .select([...rowColumns, 'd.event_at', 'd.resource_url', 'd.body', 'd.traceparent'])
      // The body's SHA-256 as hex, from the bytes (migration 0370) or, in a row written before them, the hex kept.
      .select(sql<string | null>`coalesce(encode(d.body_sha256, 'hex'), d.body_digest)`.as('body_digest'))
      .where('d.id', '=', id)
      .executeTakeFirst()
  );
}

export interface DeliveryCounts {
  connection_id: number;
  /** Received in the last 5 minutes, and the last hour. */
  last5: number;
  last60: number;
  queued: number;
  failed: number;
  /**
   * Seconds since the oldest change not yet in the mirror (a queued delivery or a pending fetch; 0: none) of stock,
   * what channel quantities are made of (claim tier 0: src/db/pending.ts tierOf), and of everything else.
   */
  stock_lag: number;
  documents_lag: number;
}

/** Per connection: deliveries received lately, waiting and failed, and the lags (the overview). */
export async function deliveryCounts(db: Executor, connectionIds: number[]): Promise<DeliveryCounts[]> {
  const lag = (tier: 0 | 1) => sql`greatest(
      coalesce((SELECT extract(epoch FROM now() - min(d.received_at))::float8 FROM webhook_deliveries d
                 WHERE d.connection_id = c.id AND d.state = 'queued' AND ${tierOf('d.resource')} = ${tier}), 0),
      coalesce(${pendingLag('c.id', tier)}, 0))`;
  return (
    await sql<DeliveryCounts>`
      SELECT c.id AS connection_id,
             (SELECT count(*)::int FROM webhook_deliveries d WHERE d.connection_id = c.id AND d.received_at > now() - interval '5 minutes') AS last5,
             (SELECT count(*)::int FROM webhook_deliveries d WHERE d.connection_id = c.id AND d.received_at > now() - interval '1 hour') AS last60,
             (SELECT count(*)::int FROM webhook_deliveries d WHERE d.connection_id = c.id AND d.state = 'queued') AS queued,
             (SELECT count(*)::int FROM webhook_deliveries d WHERE d.connection_id = c.id AND d.state = 'failed') AS failed,
             ${lag(0)} AS stock_lag, ${lag(1)} AS documents_lag
        FROM connections c WHERE c.id = ANY(${connectionIds})`.execute(db)
  ).rows;
}

/** Deliveries of a connection received per bucket of the window (the console's throughput chart). */
export function deliveriesPerBin(db: Executor, connectionId: number, w: BinWindow): Promise<{ at: Date; n: number }[]> {
  return countsPerBin(db, 'webhook_deliveries', 'received_at', connectionId, w);
}

/** Per connection, when its latest delivery was stored (connections with none are left out): the signature alert. */
export async function latestReceived(db: Executor, connectionIds: number[]): Promise<Map<number, Date>> {
  if (!connectionIds.length) return new Map();
  const r = await sql<{ id: number; at: Date }>`SELECT c.id, d.at FROM unnest(${connectionIds}::bigint[]) AS c(id)
    CROSS JOIN LATERAL (SELECT received_at AS at FROM webhook_deliveries w WHERE w.connection_id = c.id
      ORDER BY received_at DESC LIMIT 1) d`.execute(db);
  return new Map(r.rows.map((x) => [x.id, new Date(x.at)]));
}

/**
 * Which of these records (id and the updated_at a sweep read) a delivery about them announced: one received for the
 * same record whose event time (its `timestamp`, else when it arrived) is no more than `marginMs` before the
 * updated_at the sweep read (both are the service's clock), in any state; or one still queued, whatever its time,
 * whose read is still to come. Such a change was on its way to the mirror through the drain anyway, so it is not
 * drift (docs/alerts.md). Only deliveries received within `lookBackSeconds` are looked at (an index range on
 * received_at); an older one left a pending row if its read still waits.
 */
export async function announcedAmong(
  db: Executor,
  connectionId: number,
  resource: string,
  records: { id: number; updatedAt: string }[],
  marginMs: number,
  lookBackSeconds = 3600,
): Promise<Set<number>> {
  if (!records.length) return new Set();
  const json = JSON.stringify(records.map((r) => ({ id: r.id, u: r.updatedAt })));
  const r = await sql<{ id: number }>`
    SELECT DISTINCT x.id FROM jsonb_to_recordset(${json}::jsonb) AS x(id bigint, u timestamptz)
    JOIN webhook_deliveries d ON d.object_id = x.id
      AND (d.state = 'queued' OR coalesce(d.event_at, d.received_at) >= x.u - make_interval(secs => ${marginMs / 1000}))
    WHERE d.connection_id = ${connectionId} AND d.resource = ${resource}
      AND d.received_at > now() - make_interval(secs => ${lookBackSeconds})`.execute(db);
  return new Set(r.rows.map((x) => x.id));
}
