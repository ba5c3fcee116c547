// The pending_fetches store: the coalescing set between deliveries and API reads. Many marks of one record
// make one row; a drain claims up to 250 rows, reads them in one list call, and clears only rows nobody re-marked
// while it was reading (seq unchanged). A mark leaves a claim younger than a minute alone: the re-marked row is
// claimable again when the drain holding it clears it, so two drains do not read one record at once and an older
// read cannot land after a newer one (the mirror's guard compares updated_at, which need not move with stock).
// An older claim is freed by a mark: its drain waits for the budget, or died, and the change should not wait the
// rest of the lease.
import { type RawBuilder, sql } from 'kysely';
import type { Executor } from './index.ts';
import { STOCK_RESOURCES } from '../catalog/index.ts';
import { together, type Part } from './together.ts';

export interface Mark {
  connectionId: number;
  resource: string;
  id: number;
  deliveryRowId?: number | null;
  reason?: string | null;
}

export interface Claimed {
  id: number;
  seq: number;
  deliveryRowIds: number[];
  reason: string | null;
  /** How many marks the row gathered (a mark without a delivery, such as a follow-up, adds one but no row id). */
  marks: number;
}

/**
 * A new pair's claim tier (migration 0290), from `column`, its resource in the statement that makes it: 0 for stock
 * drains, which channel quantities are made of and are claimed first; 1 for the rest.
 */
export const tierOf = (column: string) =>
  sql<number>`CASE WHEN ${sql.ref(column)} = ANY(${[...STOCK_RESOURCES]}::text[]) THEN 0 ELSE 1 END`;

/** Records (connection, resource, id) rows to read; returns the distinct (connection, resource) pairs marked. */
export async function markPending(db: Executor, marks: Mark[]): Promise<{ connectionId: number; resource: string }[]> {
  if (!marks.length) return [];
  // Fold marks of the same record first: ON CONFLICT cannot touch one row twice in a statement.
  const folded = new Map<
    string,
    { connection_id: number; resource: string; id: number; delivery_row_ids: number[]; marks: number; reason: string | null }
  >();
  for (const m of marks) {
    const k = `${m.connectionId}/${m.resource}/${m.id}`;
    const f = folded.get(k) ?? {
      connection_id: m.connectionId,
      resource: m.resource,
      id: m.id,
      delivery_row_ids: [],
      marks: 0,
      reason: null,
    };
    f.marks += 1;
    if (m.deliveryRowId != null) f.delivery_row_ids.push(m.deliveryRowId);
    f.reason = m.reason ?? f.reason;
    folded.set(k, f);
  }
  const rows = [...folded.values()].map((f) => ({ ...f, delivery_row_ids: f.delivery_row_ids.slice(-20) }));
  // The pairs marked are due (again) once their window has passed (src/db/drain-pairs.ts): in the same statement.
  // A pair's claim is left alone: its worker renews it while it drains, and it lapses within half a minute if not.
  await sql`
    WITH marked AS (
    INSERT INTO pending_fetches AS p (connection_id, resource, id, marks, delivery_row_ids, reason)
    SELECT connection_id, resource, id, marks, delivery_row_ids, reason
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS x(connection_id bigint, resource text, id bigint, marks integer, delivery_row_ids bigint[], reason text)
    ORDER BY connection_id, resource, id
    ON CONFLICT (connection_id, resource, id) DO UPDATE SET
      seq = p.seq + 1, marks = p.marks + excluded.marks, marked_at = now(),
      claimed_until = CASE WHEN p.claimed_until > now() + make_interval(secs => ${LEASE_SECONDS - HELD_SECONDS}) THEN p.claimed_until END,
      delivery_row_ids = (p.delivery_row_ids || excluded.delivery_row_ids)[greatest(1, cardinality(p.delivery_row_ids || excluded.delivery_row_ids) - 19):],
      reason = COALESCE(excluded.reason, p.reason)
    RETURNING p.connection_id, p.resource)
    INSERT INTO drain_pairs AS d (connection_id, resource, tier)
    SELECT DISTINCT connection_id, resource, ${tierOf('resource')} FROM marked ORDER BY 1, 2
    ON CONFLICT (connection_id, resource) DO UPDATE SET marked_seq = d.marked_seq + 1`.execute(db);
  const pairs = new Map<string, { connectionId: number; resource: string }>();
  for (const r of rows) pairs.set(`${r.connection_id}/${r.resource}`, { connectionId: r.connection_id, resource: r.resource });
  return [...pairs.values()];
}

/** How long a claim lasts when its drain never clears it (a crash). */
const LEASE_SECONDS = 300;
/** How long a mark leaves a claim alone (a drain's read of 250 ids takes well under this unless it waits for budget). */
const HELD_SECONDS = 60;

type ClaimedRow = { id: number; seq: number; delivery_row_ids: number[]; reason: string | null; marks: number };

const claimedOf = (r: ClaimedRow): Claimed => ({
  id: r.id,
  seq: Number(r.seq),
  deliveryRowIds: (r.delivery_row_ids ?? []).map(Number),
  reason: r.reason,
  marks: Number(r.marks),
});

/** Claims up to `limit` unclaimed rows, oldest mark first, for LEASE_SECONDS. */
const claiming = (connectionId: number, resource: string, limit: number) => sql`
    UPDATE pending_fetches p SET claimed_until = now() + make_interval(secs => ${LEASE_SECONDS}), attempts = p.attempts + 1
    FROM (
      SELECT id FROM pending_fetches
      WHERE connection_id = ${connectionId} AND resource = ${resource} AND (claimed_until IS NULL OR claimed_until < now())
      ORDER BY marked_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
    ) c
    WHERE p.connection_id = ${connectionId} AND p.resource = ${resource} AND p.id = c.id
    RETURNING p.id, p.seq, p.delivery_row_ids, p.reason, p.marks`;

/** What a drain judges its claimed rows by (src/sync/drain.ts deliveriesOf). */
export interface ClaimStamps {
  /** The deliveries behind the claimed rows. */
  deliveries: { id: number; delivery_id: string | null; event_at: Date | null; traceparent: string | null }[];
  /** For variants: the claimed variants' updated_at and last read (read_as_of), as the mirror has them. */
  variants: { id: number; updated_at: string | null; read_as_of: Date | null }[];
}

/**
 * Claims up to `limit` unclaimed rows, oldest mark first, with what the drain judges them by, in the same statement: their deliveries' ids,
 * event times and traceparents, and for variants the mirror's stamps of the claimed ids.
 */
export async function claimWithStamps(
  db: Executor,
  connectionId: number,
  resource: string,
  limit: number,
): Promise<{ claimed: Claimed[] } & ClaimStamps> {
  const { rows } = await sql<ClaimedRow & { kind: 'c' | 'd' | 'v'; text: string | null; at: Date | null; tp: string | null }>`
    WITH c AS (${claiming(connectionId, resource, limit)})
    SELECT 'c' AS kind, id, seq, delivery_row_ids, reason AS text, marks, NULL::timestamptz AS at, NULL::text AS tp FROM c
    UNION ALL
    SELECT 'd', d.id, NULL, NULL, d.delivery_id, NULL, d.event_at, d.traceparent FROM webhook_deliveries d
    WHERE d.id IN (SELECT unnest(c.delivery_row_ids) FROM c)
    UNION ALL
    SELECT 'v', v.id, NULL, NULL, v.raw->>'updated_at', NULL, v.read_as_of, NULL FROM variants v
    WHERE ${resource} = 'variant' AND v.connection_id = ${connectionId} AND v.id IN (SELECT c.id FROM c)`.execute(db);
  const out: { claimed: Claimed[] } & ClaimStamps = { claimed: [], deliveries: [], variants: [] };
  for (const r of rows) {
    if (r.kind === 'c') out.claimed.push(claimedOf({ ...r, reason: r.text }));
    else if (r.kind === 'd') out.deliveries.push({ id: r.id, delivery_id: r.text, event_at: r.at, traceparent: r.tp });
    else out.variants.push({ id: r.id, updated_at: r.text, read_as_of: r.at });
  }
  return out;
}

/**
 * Deletes the claimed rows that were not re-marked since the claim. A re-marked row stays for the next read,
 * unclaimed, with only the marks made since the claim: what was read is no longer its cause, so the next drain judges the new
 * marks alone (a late delivery about a variant read meanwhile needs no read, see src/sync/drain.ts).
 */
export async function clearPending(db: Executor, connectionId: number, resource: string, claimed: Claimed[]): Promise<number> {
  const [gone] = await together(db, [clearing(connectionId, resource, claimed)]);
  return keepRemarked(db, connectionId, resource, claimed, Number(gone ?? 0));
}

const readRows = (claimed: Claimed[]) =>
  sql`jsonb_to_recordset(${JSON.stringify(claimed.map((c) => ({ id: c.id, seq: c.seq, marks: c.marks, rows: c.deliveryRowIds })))}::jsonb)
    AS x(id bigint, seq bigint, marks integer, rows bigint[])`;

/**
 * clearPending's first statement, as a part of a drain's last statement (src/db/together.ts): deletes the claimed
 * rows nobody re-marked and answers how many. keepRemarked must follow it, in its own statement.
 */
export function clearing(connectionId: number, resource: string, claimed: Claimed[]): Part<number> | null {
  if (!claimed.length) return null;
  return {
    write: sql`DELETE FROM pending_fetches p USING ${readRows(claimed)}
      WHERE p.connection_id = ${connectionId} AND p.resource = ${resource} AND p.id = x.id AND p.seq = x.seq RETURNING 1`,
    answer: (rows) => sql<number>`(SELECT count(*)::int FROM ${rows})`,
  };
}

/**
 * After `clearing` deleted `gone` of the claimed rows: the re-marked ones are unclaimed, keeping only the marks made
 * since the claim, and first marked when the claim began: what was marked before was read. The lag counts from the
 * oldest change not yet read, not from a row's first mark, which a record marked again during each read would keep
 * for ever (a mark that freed the claim left no start: the first mark stays). A statement of its own, not a part of
 * the DELETE's: a mark committing while the DELETE waits for its row lock is seen by the DELETE's recheck (seq
 * moved: kept) but not by a sibling UPDATE in the same statement (one snapshot), which would leave the re-marked row
 * claimed until the lease ends. This one's fresh snapshot sees it. Answers `gone`.
 */
export async function keepRemarked(
  db: Executor,
  connectionId: number,
  resource: string,
  claimed: Claimed[],
  gone: number,
): Promise<number> {
  if (gone < claimed.length)
    await sql`UPDATE pending_fetches p SET marks = greatest(p.marks - x.marks, 1), claimed_until = NULL,
        first_marked_at = greatest(p.first_marked_at, p.claimed_until - make_interval(secs => ${LEASE_SECONDS})),
        delivery_row_ids = ARRAY(SELECT d FROM unnest(p.delivery_row_ids) WITH ORDINALITY u(d, o) WHERE d <> ALL(x.rows) ORDER BY o)
      FROM ${readRows(claimed)} WHERE p.connection_id = ${connectionId} AND p.resource = ${resource} AND p.id = x.id AND p.seq <> x.seq`.execute(
      db,
    );
  return gone;
}

/** Gives claimed rows back (after a failed read) so the retry or another drain takes them. */
export async function releasePending(db: Executor, connectionId: number, resource: string, ids: number[]): Promise<void> {
  if (!ids.length) return;
  await sql`UPDATE pending_fetches SET claimed_until = NULL
    WHERE connection_id = ${connectionId} AND resource = ${resource} AND id = ANY(${ids}::bigint[])`.execute(db);
}

/**
 * Seconds since the oldest mark still pending of claim tier `tier` (tierOf: 0 stock, 1 the rest) for the connection
 * whose id is the column `connectionIdColumn` of the enclosing statement (NULL: none pending): a correlated subquery,
 * so a read of another store can show the lag in its own statement (db/delivery-reads.ts deliveryCounts).
 */
export function pendingLag(connectionIdColumn: string, tier: 0 | 1): RawBuilder<number | null> {
  return sql<number | null>`(SELECT extract(epoch FROM now() - min(p.first_marked_at))::float8 FROM pending_fetches p
    WHERE p.connection_id = ${sql.ref(connectionIdColumn)} AND ${tierOf('p.resource')} = ${tier})`;
}

/** Per connection name, seconds since its oldest pending mark of stock and of the rest (0: none pending): the lag metrics. */
export async function pendingLagByConnection(db: Executor): Promise<{ name: string; stock: number; documents: number }[]> {
  const age = (tier: 0 | 1) =>
    sql<number>`coalesce(extract(epoch FROM now() - min(p.first_marked_at) FILTER (WHERE ${tierOf('p.resource')} = ${tier}))::float8, 0)`;
  const rows = await sql<{ name: string; stock: number; documents: number }>`
    SELECT n.name, ${age(0)} AS stock, ${age(1)} AS documents
      FROM connections n LEFT JOIN pending_fetches p ON p.connection_id = n.id GROUP BY n.id, n.name`.execute(db);
  return rows.rows.map((r) => ({ name: r.name, stock: Number(r.stock), documents: Number(r.documents) }));
}

/** Per connection with any pending, seconds since the oldest mark of these resources (the alerts' stock-read wait). */
export async function oldestPendingOf(db: Executor, resources: string[]): Promise<{ connectionId: number; seconds: number }[]> {
  const rows = await sql<{ connection_id: number; seconds: number }>`
    SELECT connection_id, extract(epoch FROM now() - min(first_marked_at))::float8 AS seconds FROM pending_fetches
    WHERE resource = ANY(${resources}::text[]) GROUP BY connection_id`.execute(db);
  return rows.rows.map((r) => ({ connectionId: r.connection_id, seconds: Number(r.seconds) }));
}

/**
 * Which of `ids` of the resource have a read queued (a pending row) now: a sweep that changed them only did what
 * the drain was about to (the sweep's drift counts only what no delivery or queued read explains: docs/alerts.md).
 */
export async function pendingAmong(db: Executor, connectionId: number, resource: string, ids: number[]): Promise<Set<number>> {
  if (!ids.length) return new Set();
  const rows = await sql<{ id: number }>`SELECT id FROM pending_fetches
    WHERE connection_id = ${connectionId} AND resource = ${resource} AND id = ANY(${ids}::bigint[])`.execute(db);
  return new Set(rows.rows.map((r) => r.id));
}
