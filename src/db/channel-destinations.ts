// The channel destinations store (migrations 0140, 0340): every statement on channel_destinations (where a channel's
// changes are POSTed, how far it has acknowledged, the sender's lease, pauses, how its POSTs go: failures in a row,
// failing since, the last answer) and channel_posts (its recent POSTs). What is sent and when: src/channels/dispatch.ts;
// the `destination` alert, the metrics, the console and `status` read the state.
import { type Insertable, sql, type Selectable } from 'kysely';
import type { Executor } from './index.ts';
import type { ChannelDestinationsTable, ChannelPostsTable, DestinationKind } from './schema.ts';

export type ChannelDestination = Selectable<ChannelDestinationsTable>;
export type ChannelPost = Selectable<ChannelPostsTable>;

/** A destination with what the console, `status` and the metrics say of it. */
export interface DestinationState {
  channel_id: number;
  channel: string;
  connection_id: number;
  connection: string;
  url: string;
  kinds: DestinationKind[];
  cursor: number;
  order_cursor: number;
  /** Changes (and order events, for a destination that wants them) after the cursors: 0 is caught up. */
  behind: number;
  /** Seconds since the oldest of those was recorded (0: caught up): the channel's lag. */
  lag_seconds: number;
  paused_at: Date | null;
  paused_reason: string | null;
  next_attempt_at: Date | null;
  /** How its POSTs go: failing since, POSTs failed in a row, the last answer. */
  failing_since: Date | null;
  failures: number;
  last_status: number | null;
  last_error: string | null;
  last_success_at: Date | null;
}

export type DestinationStatus = 'caught up' | 'behind' | 'failing' | 'paused';

/** What a destination's state comes to, in a word: paused, failing, behind or caught up. */
export function destinationStatus(d: Pick<DestinationState, 'paused_at' | 'failing_since' | 'behind'>): DestinationStatus {
  return d.paused_at ? 'paused' : d.failing_since ? 'failing' : d.behind ? 'behind' : 'caught up';
}

/** The name of a channel's destination in the `destination` alert's key and the metrics' labels. */
export const destinationName = (channelId: number) => `channel:${channelId}`;

/** Sets (or replaces) a channel's destination; the cursor stays where it was, or starts at `startAfter`. */
export async function saveDestination(
  db: Executor,
  channelId: number,
  d: { url: string; secrets: string; startAfter: number; orderStartAfter?: number; kinds?: DestinationKind[] },
): Promise<ChannelDestination> {
  const kinds = d.kinds ?? ['stock', 'orders'];
  return db
    .insertInto('channel_destinations')
    .values({ channel_id: channelId, url: d.url, secrets: d.secrets, cursor: d.startAfter, order_cursor: d.orderStartAfter ?? 0, kinds })
    .onConflict((oc) => oc.column('channel_id').doUpdateSet({ url: d.url, secrets: d.secrets, kinds, updated_at: sql`now()` }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function removeDestination(db: Executor, channelId: number): Promise<boolean> {
  const r = await db.deleteFrom('channel_destinations').where('channel_id', '=', channelId).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export async function destinationOf(db: Executor, channelId: number): Promise<ChannelDestination | undefined> {
  return db.selectFrom('channel_destinations').selectAll().where('channel_id', '=', channelId).executeTakeFirst();
}

/**
 * Takes the sender's lease of a channel for `seconds`: only when no other sender holds it, the destination is not
 * paused, no retry is scheduled later and its connection is not stopped as mismatched (its mirror another
 * account's: src/sync/account.ts; a change staged before the stop waits for reset-mirror). Undefined when any of
 * those says no.
 */
export async function claimDestination(db: Executor, channelId: number, seconds: number): Promise<ChannelDestination | undefined> {
  return (
    await sql<ChannelDestination>`
      UPDATE channel_destinations SET claimed_until = now() + make_interval(secs => ${seconds})
       WHERE channel_id = ${channelId} AND paused_at IS NULL
         AND (claimed_until IS NULL OR claimed_until < now())
         AND (next_attempt_at IS NULL OR next_attempt_at <= now())
         AND NOT EXISTS (SELECT 1 FROM channels ch JOIN connections c ON c.id = ch.connection_id
                          WHERE ch.id = ${channelId} AND c.status = 'mismatched')
      RETURNING *`.execute(db)
  ).rows[0];
}

/** Seconds until another sender's lease of the channel ends; null when nobody holds it (or it is paused). */
export async function leaseLeft(db: Executor, channelId: number): Promise<number | null> {
  const { rows } = await sql<{ seconds: number }>`
      SELECT extract(epoch FROM claimed_until - now())::float8 AS seconds FROM channel_destinations
       WHERE channel_id = ${channelId} AND paused_at IS NULL AND claimed_until > now()`.execute(db);
  return rows[0] ? Number(rows[0].seconds) : null;
}

export async function renewLease(db: Executor, channelId: number, seconds: number): Promise<void> {
  await sql`UPDATE channel_destinations SET claimed_until = now() + make_interval(secs => ${seconds}) WHERE channel_id = ${channelId}`.execute(
    db,
  );
}

/** Whether the channel has changes after its destination's cursor that may be sent now (not paused, not deferred). */
export async function hasWaiting(db: Executor, channelId: number): Promise<boolean> {
  return (await destinationsDue(db, channelId)).length > 0;
}

export async function releaseDestination(db: Executor, channelId: number): Promise<void> {
  await db.updateTable('channel_destinations').set({ claimed_until: null }).where('channel_id', '=', channelId).execute();
}

/** The POST in flight of this kind covers the changes (or order events) up to `through`: a retry sends the same ones. */
export async function setBatch(db: Executor, channelId: number, kind: DestinationKind, through: number): Promise<void> {
  const set = kind === 'stock' ? { batch_through: through } : { order_batch_through: through };
  await db.updateTable('channel_destinations').set(set).where('channel_id', '=', channelId).execute();
}

/** The destination acknowledged every change (or order event) of this kind up to `through`. */
export async function advanceCursor(db: Executor, channelId: number, kind: DestinationKind, through: number): Promise<void> {
  const set = kind === 'stock' ? { cursor: through, batch_through: null } : { order_cursor: through, order_batch_through: null };
  await db
    .updateTable('channel_destinations')
    .set({ ...set, next_attempt_at: null, updated_at: sql`now()` })
    .where('channel_id', '=', channelId)
    .where(kind === 'stock' ? 'cursor' : 'order_cursor', '<', through)
    .execute();
}

/** A failed POST: the next attempt waits `retryInMs`; with `pause`, the destination is paused for that reason. */
export async function deferDestination(db: Executor, channelId: number, retryInMs: number, pause: string | null): Promise<void> {
  await sql`UPDATE channel_destinations SET next_attempt_at = now() + make_interval(secs => ${retryInMs / 1000}),
      paused_at = CASE WHEN ${pause}::text IS NULL THEN paused_at ELSE now() END,
      paused_reason = coalesce(${pause}::text, paused_reason), updated_at = now()
    WHERE channel_id = ${channelId}`.execute(db);
}

export async function pauseDestination(db: Executor, channelId: number, reason: string): Promise<boolean> {
  const r = await db
    .updateTable('channel_destinations')
    .set({ paused_at: sql`now()`, paused_reason: reason, updated_at: sql`now()` })
    .where('channel_id', '=', channelId)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Resumes a paused destination at once (its failures are forgotten: the next POST is tried now). */
export async function resumeDestination(db: Executor, channelId: number): Promise<boolean> {
  const r = await db
    .updateTable('channel_destinations')
    .set({ paused_at: null, paused_reason: null, next_attempt_at: null, failures: 0, failing_since: null, updated_at: sql`now()` })
    .where('channel_id', '=', channelId)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/**
 * Records one POST's outcome: a success clears the failure count, a failure adds one (and starts failing_since).
 * Answers the count and since when; a destination removed while its POST was out counts this one alone.
 */
export async function recordOutcome(
  db: Executor,
  channelId: number,
  host: string,
  outcome: { ok: boolean; status: number | null; error: string | null },
): Promise<{ failures: number; failing_since: Date | null }> {
  const r = await sql<{ failures: number; failing_since: Date | null }>`
    UPDATE channel_destinations SET
      host = ${host},
      failures = CASE WHEN ${outcome.ok} THEN 0 ELSE failures + 1 END,
      failing_since = CASE WHEN ${outcome.ok} THEN NULL ELSE coalesce(failing_since, now()) END,
      last_attempt_at = now(), last_status = ${outcome.status}, last_error = ${outcome.error},
      last_success_at = CASE WHEN ${outcome.ok} THEN now() ELSE last_success_at END
    WHERE channel_id = ${channelId}
    RETURNING failures, failing_since`.execute(db);
  return r.rows[0] ?? { failures: outcome.ok ? 0 : 1, failing_since: outcome.ok ? null : new Date() };
}

/** A destination that has been POSTed to, with how its POSTs go (the `destination` alert and the metrics read these). */
export interface DestinationOutcome {
  /** `channel:<id>` (destinationName). */
  name: string;
  channel_id: number;
  channel: string;
  connection: string;
  connection_id: number;
  host: string;
  failures: number;
  failing_since: Date | null;
  last_attempt_at: Date;
  last_status: number | null;
  last_error: string | null;
  last_success_at: Date | null;
}

/** Every destination that has been POSTed to, by name. */
export async function destinationOutcomes(db: Executor): Promise<DestinationOutcome[]> {
  return (
    await sql<DestinationOutcome>`
      SELECT 'channel:' || d.channel_id AS name, d.channel_id, ch.name AS channel, n.name AS connection, n.id AS connection_id,
             d.host, d.failures, d.failing_since, d.last_attempt_at, d.last_status, d.last_error, d.last_success_at
        FROM channel_destinations d
        JOIN channels ch ON ch.id = d.channel_id
        JOIN connections n ON n.id = ch.connection_id
       WHERE d.last_attempt_at IS NOT NULL
       ORDER BY 1`.execute(db)
  ).rows;
}

export async function recordPost(db: Executor, post: Insertable<ChannelPostsTable>): Promise<void> {
  await db.insertInto('channel_posts').values(post).execute();
}

export async function recentPosts(db: Executor, channelId: number, limit = 20): Promise<ChannelPost[]> {
  return db.selectFrom('channel_posts').selectAll().where('channel_id', '=', channelId).orderBy('id', 'desc').limit(limit).execute();
}

/** The order-event POSTs of a channel that carried events from `fromEventId` on (the console's and the API's order view). */
export async function recentOrderPosts(db: Executor, channelId: number, fromEventId: number): Promise<ChannelPost[]> {
  return db
    .selectFrom('channel_posts')
    .selectAll()
    .where('channel_id', '=', channelId)
    .where('kind', '=', 'orders')
    .where('last_change', '>=', fromEventId)
    .orderBy('id')
    .limit(1000)
    .execute();
}

/** Retention: at most `limit` POST records older than `olderThanSeconds`; returns how many went. */
export async function prunePosts(db: Executor, olderThanSeconds: number, limit: number): Promise<number> {
  const r = await sql`DELETE FROM channel_posts WHERE id = ANY(ARRAY(
    SELECT id FROM channel_posts WHERE at < now() - make_interval(secs => ${olderThanSeconds}) ORDER BY id LIMIT ${limit}))`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** Every destination (or a connection's, or one channel's) with how far behind it is and how its POSTs went. */
export async function destinationStates(
  db: Executor,
  opts: { connectionId?: number; channelId?: number } = {},
): Promise<DestinationState[]> {
  return (
    await sql<DestinationState>`
      SELECT d.channel_id, ch.name AS channel, ch.connection_id, n.name AS connection, d.url, d.cursor,
             d.kinds, d.order_cursor,
             CASE WHEN 'stock' = ANY(d.kinds)
                  THEN (SELECT count(*)::int FROM channel_quantity_changes c WHERE c.channel_id = d.channel_id AND c.id > d.cursor) ELSE 0 END
             + CASE WHEN 'orders' = ANY(d.kinds)
                  THEN (SELECT count(*)::int FROM channel_order_events e WHERE e.channel_id = d.channel_id AND e.id > d.order_cursor) ELSE 0 END
               AS behind,
             coalesce(extract(epoch FROM now() - least(
               CASE WHEN 'stock' = ANY(d.kinds) THEN (SELECT c.at FROM channel_quantity_changes c
                 WHERE c.channel_id = d.channel_id AND c.id > d.cursor ORDER BY c.id LIMIT 1) END,
               CASE WHEN 'orders' = ANY(d.kinds) THEN (SELECT e.recorded_at FROM channel_order_events e
                 WHERE e.channel_id = d.channel_id AND e.id > d.order_cursor ORDER BY e.id LIMIT 1) END))::float8, 0) AS lag_seconds,
             d.paused_at, d.paused_reason, d.next_attempt_at,
             d.failing_since, d.failures, d.last_status, d.last_error, d.last_success_at
        FROM channel_destinations d
        JOIN channels ch ON ch.id = d.channel_id
        JOIN connections n ON n.id = ch.connection_id
       WHERE (${opts.connectionId ?? null}::bigint IS NULL OR ch.connection_id = ${opts.connectionId ?? null})
         AND (${opts.channelId ?? null}::bigint IS NULL OR d.channel_id = ${opts.channelId ?? null})
       ORDER BY n.name, ch.name`.execute(db)
  ).rows.map((r) => ({
    ...r,
    channel_id: r.channel_id,
    connection_id: r.connection_id,
    cursor: Number(r.cursor),
    order_cursor: Number(r.order_cursor),
    lag_seconds: Number(r.lag_seconds),
  }));
}

/** Of these channels, those with a destination that is not paused: where new changes have somewhere to go. */
export async function channelsSending(db: Executor, channelIds: number[]): Promise<number[]> {
  if (!channelIds.length) return [];
  return (
    await sql<{ channel_id: number }>`SELECT channel_id FROM channel_destinations
      WHERE channel_id = ANY(${channelIds}::bigint[]) AND paused_at IS NULL`.execute(db)
  ).rows.map((r) => r.channel_id);
}

/** Channels whose destination has changes after its cursor and may be sent to now (the maintenance safety net). */
export async function destinationsDue(db: Executor, channelId?: number): Promise<number[]> {
  return (
    await sql<{ channel_id: number }>`
      SELECT d.channel_id FROM channel_destinations d
       WHERE (${channelId ?? null}::bigint IS NULL OR d.channel_id = ${channelId ?? null})
         AND d.paused_at IS NULL AND (d.claimed_until IS NULL OR d.claimed_until < now())
         AND (d.next_attempt_at IS NULL OR d.next_attempt_at <= now())
         AND (('stock' = ANY(d.kinds) AND EXISTS (SELECT 1 FROM channel_quantity_changes c WHERE c.channel_id = d.channel_id AND c.id > d.cursor))
           OR ('orders' = ANY(d.kinds) AND EXISTS (SELECT 1 FROM channel_order_events e WHERE e.channel_id = d.channel_id AND e.id > d.order_cursor)))`.execute(
      db,
    )
  ).rows.map((r) => r.channel_id);
}
