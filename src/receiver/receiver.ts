// POST /webhooks/:connection: read the raw body (bounded), verify the signature, find the connection,
// check the payload, store delivery + job in a group commit, and answer only after COMMIT.
import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import type { Config } from '../config.ts';
import type pg from 'pg';
import { connectionByName } from '../db/connections.ts';
import type { Db } from '../db/index.ts';
import { storable } from '../inputs.ts';
import type { Logger } from '../log.ts';
import { metrics } from '../metrics.ts';
import type { Boss } from '../queue/boss.ts';
import { createBatcher, BatcherClosed, BatcherOverloaded, type Batcher } from './batcher.ts';
import { BodyTooLarge, readRawBody } from './body.ts';
import { parseDelivery, timestampRefusal } from './payload.ts';
import type { RejectionCounter } from './rejections.ts';
import { isDataError, isDeadlock, storeDeliveries, type IncomingDelivery, type StoreOutcome } from './store.ts';
import { signingSecrets, verifySignature } from './verify.ts';
import { inSpan, traceparentOf } from '../telemetry/spans.ts';
import { trace } from '@opentelemetry/api';

export interface ReceiverDeps {
  /** The receiver's own pool (sized for WEBHOOK_COMMIT_CONCURRENCY), and a database handle on it. */
  pool: pg.Pool;
  db: Db;
  boss: Boss;
  config: Config;
  log: Logger;
  /** Where refusals are counted per connection and reason (the alerts' signature condition reads them). */
  rejections?: RejectionCounter;
}

export interface Receiver {
  /** The Koa handler for POST /webhooks/:connection. */
  handle(ctx: Context): Promise<void>;
  /** Readiness: null when deliveries can be verified and stored. */
  readiness(): Promise<string | null>;
  /** Items waiting for or in a commit. */
  readonly pending: number;
  /** Stop accepting, commit everything already accepted. */
  close(): Promise<void>;
}

interface ConnectionInfo {
  id: number;
  disabled: boolean;
}
interface CachedConnection {
  connection: ConnectionInfo | null;
  until: number;
}

// A connection's id by name, cached for a minute: a delivery should not cost a lookup query, and with thousands
// of quiet connections (a delivery a minute each) a shorter time cost one per delivery. A connection disabled
// meanwhile has its deliveries stored for that minute, and not drained (only active connections are); its
// subscriptions go with the first 410, answered only on a fresh read. Unknown names are cached for less, so a
// connection added a moment ago starts receiving soon.
const KNOWN_TTL_MS = 60_000;
const UNKNOWN_TTL_MS = 1_000;

/** Commits of one batch when PostgreSQL keeps ending it to break deadlocks (each time, another commit went through). */
const DEADLOCK_ATTEMPTS = 5;

export function createReceiver(deps: ReceiverDeps): Receiver {
  const { pool, db, boss, config, log } = deps;
  const cache = new Map<string, CachedConnection>();

  // An Error in place of an outcome: that item alone could not be stored.
  const commit = async (items: IncomingDelivery[]): Promise<(StoreOutcome | Error)[]> => {
    try {
      // Two commits holding copies of the same deliveries in opposite orders (a service that sends a delivery twice
      // at once) can deadlock on the unique index: PostgreSQL ends one; it runs again (all or nothing, so safe).
      for (let attempt = 1; ; attempt++) {
        try {
          return await storeDeliveries(pool, boss, items);
        } catch (err) {
          if (!isDeadlock(err) || attempt === DEADLOCK_ATTEMPTS) throw err;
          log.info({ batch: items.length, attempt }, 'commit ended by a deadlock with another: committing it again');
        }
      }
    } catch (err) {
      // One bad item must not fail its neighbours: retry them one by one, so only it is refused.
      if (items.length > 1 && isDataError(err)) {
        log.warn({ err, batch: items.length }, 'batch refused by the database: storing its deliveries one by one');
        const out: (StoreOutcome | Error)[] = [];
        for (const item of items)
          out.push(
            await storeDeliveries(pool, boss, [item]).then(
              ([o]) => o!,
              (e: Error) => e,
            ),
          );
        return out;
      }
      throw err;
    }
  };
  const batcher: Batcher<IncomingDelivery, StoreOutcome | Error> = createBatcher(commit, {
    maxBatch: config.WEBHOOK_BATCH_SIZE,
    maxWaitMs: config.WEBHOOK_BATCH_WAIT_MS,
    concurrency: config.WEBHOOK_COMMIT_CONCURRENCY,
    adaptive: true,
    maxPending: config.WEBHOOK_BATCH_SIZE * config.WEBHOOK_COMMIT_CONCURRENCY * 20,
    maxAgeMs: config.WEBHOOK_ACK_TIMEOUT_MS,
  });

  async function lookUp(name: string): Promise<ConnectionInfo | null> {
    const now = Date.now();
    const row = await connectionByName(db, name);
    const connection = row ? { id: row.id, disabled: row.status === 'disabled' } : null;
    if (cache.size > 10_000) cache.clear();
    cache.set(name, { connection, until: now + (connection === null ? UNKNOWN_TTL_MS : KNOWN_TTL_MS) });
    return connection;
  }

  async function connectionOf(name: string): Promise<ConnectionInfo | null> {
    const hit = cache.get(name);
    const cached = hit && hit.until > Date.now() ? hit.connection : await lookUp(name);
    // 410 makes the service delete the subscription: answer it only on a fresh read, never from the cache
    // (a connection enabled again a moment ago, with its subscriptions just recreated, must not lose them).
    return cached?.disabled ? lookUp(name) : cached;
  }

  /** Waits for the commit; the batcher gives up before the service's 10-second window closes. */
  async function stored(item: IncomingDelivery): Promise<StoreOutcome> {
    const outcome = await batcher.submit(item);
    if (outcome instanceof Error) throw outcome;
    return outcome;
  }

  async function handle(ctx: Context): Promise<void> {
    const started = performance.now();
    const name = String(ctx.params?.connection ?? '');
    const reject = (status: number, reason: string, message: string) => {
      metrics.deliveriesRejected.inc({ reason });
      deps.rejections?.add(name, reason);
      ctx.status = status;
      ctx.body = { error: message };
    };
    try {
      let raw: Buffer;
      try {
        raw = await body(ctx, config.WEBHOOK_BODY_LIMIT);
      } catch (err) {
        if (!(err instanceof BodyTooLarge)) throw err;
        // The rest of the body is not read: close the connection rather than drain it.
        ctx.set('Connection', 'close');
        log.warn(
          { connection: name, limit: config.WEBHOOK_BODY_LIMIT, length: ctx.get('content-length') || null },
          'delivery refused: body too large',
        );
        return reject(413, 'too_large', `body larger than ${config.WEBHOOK_BODY_LIMIT} bytes`);
      }
      const deliveryHeader = ctx.get('x-service-delivery').trim();
      if (!verifySignature(raw, ctx.get('x-service-signature') || undefined, signingSecrets(config))) {
        // Never the body: it is unauthenticated input.
        log.warn(
          {
            connection: name,
            delivery: deliveryHeader || null,
            signature: ctx.get('x-service-signature') ? 'wrong' : 'missing',
            bytes: raw.length,
          },
          'delivery refused: signature does not verify',
        );
        return reject(401, 'signature', 'signature missing or wrong');
      }
      const parsed = parseDelivery(raw);
      const refusal = parsed.ok ? timestampRefusal(parsed.payload.eventAt, Date.now(), config.WEBHOOK_MAX_FUTURE_SECONDS) : null;
      if (refusal) {
        // Signed, but not now: a replay of an old delivery, or a clock far off (ours or the service's).
        log.warn(
          { connection: name, delivery: deliveryHeader || null, now: new Date().toISOString() },
          `delivery refused: ${refusal.message}`,
        );
        return reject(400, refusal.reason, refusal.message);
      }
      let found: ConnectionInfo | null;
      try {
        found = await connectionOf(name);
      } catch (err) {
        log.error({ err, connection: name }, 'delivery not stored: connection lookup failed');
        return unavailable(ctx, 'database unavailable');
      }
      if (found === null) {
        log.warn({ connection: name }, 'delivery refused: unknown connection');
        return reject(404, 'unknown_connection', `no connection named ${JSON.stringify(name)}`);
      }
      if (found.disabled) {
        // Deliberate: the service deletes a subscription answered 410, so a disabled connection stops
        // receiving. Enabling it again recreates the subscriptions (webhooks sync); its sweeps catch up.
        log.warn(
          { connection: name, delivery: deliveryHeader || null },
          'delivery refused: connection disabled (410 ends the subscription)',
        );
        return reject(410, 'disabled_connection', `connection ${JSON.stringify(name)} is disabled`);
      }
      const connection = found.id;
      // The key must fit a btree entry: an absurdly long id is keyed by its hash, still stable across retries.
      const deliveryId = !deliveryHeader
        ? `sha256:${createHash('sha256').update(raw).digest('hex')}`
        : deliveryHeader.length <= 200
          ? deliveryHeader
          : `sha256-id:${createHash('sha256').update(deliveryHeader).digest('hex')}`;
      // The request's span (src/telemetry/http.ts) names what it is about; never the body or a secret.
      trace.getActiveSpan()?.setAttributes({
        'commerce.connection': name,
        'commerce.delivery_id': deliveryId,
        ...(parsed.ok ? { 'commerce.event': parsed.payload.event } : {}),
      });
      const item: IncomingDelivery = parsed.ok
        ? {
            connectionId: connection,
            deliveryId,
            event: parsed.payload.event,
            resource: parsed.payload.resource,
            action: parsed.payload.action,
            objectId: parsed.payload.objectId,
            eventAt: parsed.payload.eventAt,
            resourceUrl: parsed.payload.resourceUrl,
            body: parsed.text,
            state: parsed.payload.handled ? 'queued' : 'unhandled',
            error: parsed.payload.handled ? null : `event ${parsed.payload.event} is not one we act on`,
            traceparent: traceparentOf(),
          }
        : {
            connectionId: connection,
            deliveryId,
            event: null,
            resource: null,
            action: null,
            objectId: null,
            eventAt: null,
            resourceUrl: null,
            // A body that is not JSON may be no UTF-8 or hold a NUL byte, which JSON.parse's message (the reason)
            // quotes: both are recorded with U+FFFD in their place.
            body: storable(raw.toString('utf8')),
            state: 'rejected',
            error: storable(parsed.reason),
          };
      let outcome: StoreOutcome;
      try {
        outcome = await inSpan('webhook commit', {}, () => stored(item));
      } catch (err) {
        if (!parsed.ok) {
          // Refused either way; the record of it is what failed.
          log.warn({ err, connection: name, delivery: deliveryId }, 'rejected delivery could not be recorded');
          return reject(400, 'malformed', parsed.reason);
        }
        if (err instanceof BatcherClosed) return unavailable(ctx, 'shutting down');
        if (err instanceof BatcherOverloaded)
          log.warn({ connection: name, pending: batcher.pending }, 'delivery not stored: receiver overloaded');
        else log.error({ err, connection: name, delivery: deliveryId }, 'delivery not stored: database unavailable');
        return unavailable(ctx, 'database unavailable');
      }
      // Built only for a line that will be written: the usual case, stored at level info, writes none.
      const logFields = () => ({ connection: name, delivery: deliveryId, event: item.event, object_id: item.objectId });
      if (!parsed.ok) {
        log.warn({ ...logFields(), reason: parsed.reason }, 'delivery refused: malformed payload (recorded as rejected)');
        return reject(400, 'malformed', parsed.reason);
      }
      if (!outcome.stored) {
        metrics.deliveriesDuplicate.inc({ connection: name });
        if (log.isLevelEnabled('debug')) log.debug(logFields(), 'duplicate delivery acknowledged');
        ctx.status = 200;
        ctx.body = { ok: true, duplicate: true };
        return;
      }
      metrics.deliveriesReceived.inc({ connection: name, event: parsed.payload.handled ? parsed.payload.subscription! : 'unhandled' });
      if (item.state === 'unhandled') log.warn(logFields(), 'delivery stored as unhandled: unknown event');
      else if (log.isLevelEnabled('debug')) log.debug({ ...logFields(), job: outcome.jobId }, 'delivery stored and queued');
      ctx.status = 200;
      ctx.body = { ok: true };
    } finally {
      // Once the server is closing, keep-alive connections would hold shutdown up: end them with this answer.
      if ((ctx.req.socket as { server?: { listening?: boolean } }).server?.listening === false) ctx.set('Connection', 'close');
      metrics.ackLatency.observe((performance.now() - started) / 1000);
    }
  }

  return {
    handle,
    async readiness() {
      if (!signingSecrets(config).length) return 'COMMERCE_CLIENT_SECRET is empty: deliveries cannot be verified';
      if (batcher.pending > config.WEBHOOK_BATCH_SIZE * config.WEBHOOK_COMMIT_CONCURRENCY * 10)
        return `receiver backlog: ${batcher.pending} deliveries waiting for the database`;
      return null;
    },
    get pending() {
      return batcher.pending;
    },
    close: () => batcher.close(),
  };
}

function unavailable(ctx: Context, message: string): void {
  ctx.status = 503;
  ctx.set('Retry-After', '5');
  ctx.body = { error: message };
}

/** The raw body; if a body parser upstream already consumed the stream, its raw text (not byte-exact for invalid UTF-8). */
async function body(ctx: Context, limit: number): Promise<Buffer> {
  const already = (ctx.request as { rawBody?: unknown }).rawBody;
  if (ctx.req.readableEnded && typeof already === 'string') {
    if (Buffer.byteLength(already) > limit) throw new BodyTooLarge(limit);
    return Buffer.from(already, 'utf8');
  }
  return readRawBody(ctx.req, limit);
}
