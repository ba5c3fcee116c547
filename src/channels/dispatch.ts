// Dispatch to a channel's destination (the channel-delivery queue's handler): POSTs a channel's quantity changes
// to its destination. Driven by a cursor over the channel's changes (channel_quantity_changes, in id order), not
// by a job per change: a job names only the channel, and whichever worker holds the channel's lease sends
// everything after the cursor, up to CHANNEL_DELIVERY_BATCH changes a POST, one POST at a time, so a quantity is
// never overtaken by an older one. Each POST is signed per Standard Webhooks (src/channels/sender.ts; `whsec_`
// secrets, several while one rotates); its webhook-id names the channel and the range of changes, so a retry of
// the same range carries the same id. A POST that fails leaves the cursor where it was and is retried with
// backoff; a destination failing for CHANNEL_DELIVERY_PAUSE_MINUTES in a row is paused with the reason, and
// resumed (console, CLI, API) loses nothing.
import { decryptToken, encryptToken } from '../api/secrets.ts';
import { changesAfter, changeTraceparents, channelById, channelNames, type FeedItem } from '../db/channels.ts';
import {
  advanceCursor,
  channelsSending,
  claimDestination,
  deferDestination,
  destinationName,
  destinationOf,
  destinationsDue,
  hasWaiting,
  leaseLeft,
  releaseDestination,
  renewLease,
  saveDestination,
  recordOutcome,
  recordPost,
  setBatch,
  type ChannelDestination,
} from '../db/channel-destinations.ts';
import type { Db, Executor } from '../db/index.ts';
import { orderEventsAfter, orderEventTraceparents } from '../db/channel-order-events.ts';
import type { DestinationKind } from '../db/schema.ts';
import { orderEventsBody, presentOrderEvent } from './order-feed.ts';
import { metrics } from '../metrics.ts';
import type { Config } from '../config.ts';
import type { Boss } from '../queue/boss.ts';
import { channelDeliveryQueue, requestDelivery } from '../queue/contracts.ts';
import type { NewChange } from '../stock/recompute.ts';
import { defineHandler, type WorkerDeps } from '../queue/handler.ts';
import { parseAllowedHosts } from './address-guard.ts';
import { hostOf, parseSecrets, sendWebhook } from './sender.ts';
import { inSpan, SpanKind, tracing } from '../telemetry/spans.ts';

/** How long a sender holds a channel: longer than a POST's timeout, renewed with every POST. */
const LEASE_SECONDS = 60;
/** A job sends for at most this long, then hands on (a backlog does not hold a worker slot for ever). */
const TURN_MS = 20_000;
const POST_TIMEOUT_MS = 10_000;

/** What announcing changes needs: the database, the queue, and whether CHANNEL_WEBHOOK_URL is set. */
export type Announcer = { db: Executor; boss: Boss; config: Pick<Config, 'CHANNEL_WEBHOOK_URL'> };

/**
 * After changes committed: one request per channel they touched that has somewhere to send them. A channel
 * without a destination (or with a paused one) gets no job: most channels are read through the feed, and a job for
 * each of their changes would cost pg-boss an insert, a fetch and a completion per merchant operation for nothing,
 * and queue up behind the few delivery slots. With CHANNEL_WEBHOOK_URL set every channel is asked, since a
 * `default` channel adopts it at its first delivery. A destination set or resumed later is caught up by its own
 * request and by the maintenance minute.
 */
export async function announceChanges(deps: Announcer, changes: Pick<NewChange, 'channel_id'>[]): Promise<void> {
  const touched = [...new Set(changes.map((c) => c.channel_id))];
  const sending = deps.config.CHANNEL_WEBHOOK_URL ? touched : await channelsSending(deps.db, touched);
  for (const id of sending) await requestDelivery(deps.boss, id);
}

/** The maintenance minute's safety net: every destination with changes waiting and nothing in the way gets a job. */
export async function requestDueDeliveries(db: Db, boss: Boss): Promise<number> {
  const due = await destinationsDue(db);
  for (const id of due) await requestDelivery(boss, id);
  return due.length;
}

/**
 * CHANNEL_WEBHOOK_URL (with CHANNEL_WEBHOOK_SECRET) is the destination of a `default` channel that has none of its
 * own: set at its first delivery, from the first change kept. True when it was set now.
 */
export async function adoptWebhookSetting(deps: Pick<WorkerDeps, 'db' | 'config' | 'clients'>, channelId: number): Promise<boolean> {
  const { db, config } = deps;
  if (!config.CHANNEL_WEBHOOK_URL) return false;
  const channel = await channelById(db, channelId);
  if (channel?.name !== 'default' || (await destinationOf(db, channelId))) return false;
  const secrets = encryptToken(deps.clients.key(config), config.CHANNEL_WEBHOOK_SECRET);
  await saveDestination(db, channelId, { url: config.CHANNEL_WEBHOOK_URL, secrets, startAfter: 0 });
  return true;
}

/** The body of one POST: Standard Webhooks' {type, timestamp, data}. */
export function deliveryBody(channel: { connection: string; channel: string }, changes: FeedItem[], through: number): string {
  return JSON.stringify({
    type: 'channel.stock.changed',
    timestamp: new Date().toISOString(),
    data: {
      connection: channel.connection,
      channel: channel.channel,
      // What the receiver acknowledges by answering 2xx: every change of the channel up to this id.
      cursor: through,
      changes: changes.map((c) => ({
        id: c.id,
        variant_id: c.variant_id,
        sku: c.sku,
        quantity: c.quantity,
        tracked: c.tracked,
        backorderable: c.backorderable,
        listed: c.listed,
        at: c.at,
      })),
    },
  });
}

/** The latest change per variant of a range, in id order: a POST carries each variant once, at its newest. */
export function newestPerVariant(changes: FeedItem[]): FeedItem[] {
  const last = new Map<number, FeedItem>();
  for (const c of changes) last.set(c.variant_id, c);
  return [...last.values()].sort((a, b) => a.id - b.id);
}

/** Backoff after `failures` POSTs failed in a row: 5 s doubling, at most 5 minutes, with jitter. */
export function retryDelayMs(failures: number): number {
  const base = Math.min(300_000, 5000 * 2 ** Math.max(0, failures - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

async function deliverChannel(deps: WorkerDeps, channelId: number): Promise<void> {
  const { db, config } = deps;
  if (await adoptWebhookSetting(deps, channelId))
    deps.log.info({ channelId }, 'CHANNEL_WEBHOOK_URL is the destination of this default channel');
  const dest = await claimDestination(db, channelId, LEASE_SECONDS);
  if (!dest) {
    // No destination, paused, or waiting for its retry (which is scheduled); or another sender has it. A live one
    // asks again when it is done, a killed one never will: so ask for a delivery when its lease ends, rather than
    // leave the channel to the maintenance minute after it.
    const left = await leaseLeft(db, channelId);
    if (left !== null) await requestDelivery(deps.boss, channelId, left + 1);
    return;
  }
  const started = Date.now();
  try {
    const secrets = parseSecrets(decryptToken(deps.clients.key(config), dest.secrets));
    // Each kind has its own cursor and its own range in flight: stock and order events never overtake their own
    // kind, and one kind's backlog does not hold up the other's POSTs for long (they alternate).
    const at: Record<DestinationKind, { cursor: number; batchThrough: number | null }> = {
      stock: { cursor: Number(dest.cursor), batchThrough: dest.batch_through === null ? null : Number(dest.batch_through) },
      orders: {
        cursor: Number(dest.order_cursor),
        batchThrough: dest.order_batch_through === null ? null : Number(dest.order_batch_through),
      },
    };
    const kinds = KINDS.filter((k) => dest.kinds.includes(k));
    while (Date.now() - started < TURN_MS) {
      let sentAny = false;
      for (const kind of kinds) {
        const sent = await postNext(deps, dest, secrets, kind, at[kind].cursor, at[kind].batchThrough);
        if (sent === 'failed') return; // its retry is scheduled
        if (sent === 'none') continue;
        at[kind] = { cursor: sent, batchThrough: null };
        sentAny = true;
      }
      if (!sentAny) break;
      await renewLease(db, channelId, LEASE_SECONDS);
    }
  } finally {
    await releaseDestination(db, channelId);
  }
  // The turn ended with changes left, or a change committed while this sender ran found the lease taken.
  if (await hasWaiting(db, channelId)) await requestDelivery(deps.boss, channelId);
}

const KINDS: DestinationKind[] = ['stock', 'orders'];

/** One POST's range of a kind: the rows after the cursor, how each is sent, and the POST's id and body. */
interface Range {
  first: number;
  through: number;
  /** What the POST carries: stock, each variant once at its newest; orders, every event. */
  count: number;
  body: string;
}

/** The next range of `kind` after `cursor` (at most `limit` rows, at most `batchThrough` when a range is in flight). */
async function nextRange(
  db: Db,
  channelId: number,
  kind: DestinationKind,
  cursor: number,
  batchThrough: number | null,
  limit: number,
): Promise<Range | null> {
  if (kind === 'stock') {
    // A range in flight held at most `limit` of the channel's changes (ids become visible in order): the same read finds it.
    const read = (await changesAfter(db, { since: cursor, limit, channelId })).slice(0, limit);
    const range = batchThrough === null ? read : read.filter((c) => c.id <= batchThrough);
    if (!range.length) return null;
    const through = Number(range[range.length - 1]!.id);
    const changes = newestPerVariant(range);
    const body = deliveryBody({ connection: range[0]!.connection, channel: range[0]!.channel }, changes, through);
    return { first: Number(range[0]!.id), through, count: changes.length, body };
  }
  const read = (await orderEventsAfter(db, { channelId, since: cursor, limit })).slice(0, limit);
  const range = batchThrough === null ? read : read.filter((e) => e.id <= batchThrough);
  if (!range.length) return null;
  const through = Number(range[range.length - 1]!.id);
  const channel = await channelNames(db, channelId);
  return {
    first: Number(range[0]!.id),
    through,
    count: range.length,
    body: orderEventsBody(channel, range.map(presentOrderEvent), through),
  };
}

/**
 * Sends the next POST of `kind`: the range in flight (`batchThrough`, a retry) or the next CHANNEL_DELIVERY_BATCH
 * rows. Answers the new cursor, 'none' when caught up, 'failed' when the POST failed (the retry is scheduled).
 */
async function postNext(
  deps: WorkerDeps,
  dest: ChannelDestination,
  secrets: string[],
  kind: DestinationKind,
  cursor: number,
  batchThrough: number | null,
): Promise<number | 'none' | 'failed'> {
  const { db, config, log } = deps;
  const channelId = dest.channel_id;
  const range = await nextRange(db, channelId, kind, cursor, batchThrough, config.CHANNEL_DELIVERY_BATCH);
  if (!range) return 'none';
  const { through } = range;
  if (batchThrough === null) await setBatch(db, channelId, kind, through);
  // The same range of the same kind carries the same id on every retry (receivers deduplicate by it).
  const id = `${kind === 'stock' ? 'chd' : 'cho'}_${channelId}_${cursor}_${through}`;
  const started = Date.now();
  // Traced, the POST continues the trace of the write that made its first change or event (a drain's mirror write
  // or a push outcome) and links the others', and tells the channel so.
  const from = !tracing()
    ? []
    : kind === 'stock'
      ? await changeTraceparents(db, channelId, range.first, through)
      : await orderEventTraceparents(db, channelId, range.first, through);
  const attributes = {
    'server.address': hostOf(dest.url),
    'commerce.channel_id': channelId,
    'commerce.webhook_id': id,
    'commerce.kind': kind,
    'commerce.count': range.count,
  };
  const outcome = await inSpan('POST channel destination', { kind: SpanKind.CLIENT, from, attributes }, async (span) => {
    const sent = await sendWebhook(
      { url: dest.url, id, body: range.body, secrets },
      { attempts: 1, timeoutMs: POST_TIMEOUT_MS, allowHosts: parseAllowedHosts(config.OUTBOUND_ALLOWED_HOSTS) },
    );
    if (sent.status !== null) span.setAttribute('http.response.status_code', sent.status);
    return sent;
  });
  const name = destinationName(channelId);
  await recordPost(db, {
    channel_id: channelId,
    webhook_id: id,
    kind,
    first_change: range.first,
    last_change: through,
    changes: range.count,
    ok: outcome.ok,
    status: outcome.status,
    error: outcome.error,
    attempts: outcome.attempts,
    ms: Date.now() - started,
  });
  const state = await recordOutcome(db, channelId, hostOf(dest.url), outcome);
  metrics.destinationPosts.inc({ destination: name, result: outcome.ok ? 'ok' : 'failed' });
  if (outcome.ok) {
    await advanceCursor(db, channelId, kind, through);
    return through;
  }
  const failures = state.failures;
  const failingFor = state.failing_since ? Date.now() - new Date(state.failing_since).getTime() : 0;
  const pause =
    config.CHANNEL_DELIVERY_PAUSE_MINUTES > 0 && failingFor >= config.CHANNEL_DELIVERY_PAUSE_MINUTES * 60_000
      ? `failing since ${new Date(state.failing_since!).toISOString()} (${failures} POSTs in a row, last: ${outcome.error}); resume it once the endpoint answers`
      : null;
  const delay = retryDelayMs(failures);
  await deferDestination(db, channelId, delay, pause);
  if (pause) log.warn({ channelId, host: hostOf(dest.url), reason: pause }, 'channel destination paused');
  else await requestDelivery(deps.boss, channelId, delay / 1000);
  log.warn({ channelId, host: hostOf(dest.url), error: outcome.error, retryInMs: delay }, 'channel delivery failed; it is retried');
  return 'failed';
}

export const channelDeliveryHandler = defineHandler({
  queue: channelDeliveryQueue,
  // With jobs waiting, a slot takes the next at once: after a short job (caught up, or another sender has the
  // channel) pg-boss would otherwise pause half a second, and two slots would take four jobs a second at most.
  work: () => ({
    batchSize: 1,
    localConcurrency: 2,
    pollingIntervalSeconds: 0.5,
    // A POST's latency: a job that came while both slots were busy waits for this poll at most.
    notifyPollingIntervalSeconds: 1,
    burstWhenReadyExceeds: 1,
  }),
  async handle(deps, [job]) {
    await deliverChannel(deps, job!.data.channelId);
  },
});
