// Webhook deliveries: one POST per subscription and event, signed, retried with exponential backoff in
// sandbox time, with the delivery faults of the admin API. A keep-alive agent and a bounded number of
// deliveries in flight keep it fast.
import http from 'node:http';
import https from 'node:https';
import { createHmac, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from './clock.ts';
import type { Store, Row } from './store.ts';
import type { Random } from './random.ts';
import { pluralEvent } from './events.ts';

/** Retry n (1-based) waits RETRY_BASE_S * 2^(n-1) sandbox seconds, at most RETRY_CAP_S. */
export const RETRY_BASE_S = 60;
export const RETRY_CAP_S = 6 * 3600;
export const FAILURE_RETENTION_S = 3 * 86400;
export const RESPONSE_TIMEOUT_MS = 10_000;
const IDLE_SOCKET_MS = 30_000;
const CONCURRENCY = 64;

export interface DeliveryFaults {
  drop?: number;
  duplicate?: number;
  reorder?: number;
  delay_ms?: number;
  corrupt_signature?: number;
}

interface Delivery {
  id: string;
  webhookId: number;
  event: string;
  objectId: number;
  url: string;
  body: string;
  attempt: number;
  dueAt: number;
  /** Store generation it belongs to: after a reset, answers to old deliveries touch no new subscription. */
  generation: number;
}

export interface AttemptLog {
  id: string;
  event: string;
  object_id: number;
  url: string;
  status: number | string;
  attempt: number;
  at: string;
}

export function sign(body: string, secret: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('base64').trim();
}

export class Deliveries {
  faults: DeliveryFaults = {};
  stats = { attempted: 0, succeeded: 0, failed: 0 };
  private ready: Delivery[] = [];
  private head = 0;
  private waiting: Delivery[] = [];
  /** Earliest dueAt in `waiting` (Infinity when empty), so a pump scans it only when something is due. */
  private nextDue = Infinity;
  private generation = 0;
  private held: Delivery[] = [];
  private inflight = 0;
  private timer: NodeJS.Timeout | null = null;
  private idle: (() => void)[] = [];
  private log: AttemptLog[] = [];
  private closed = false;
  // An idle socket is closed after IDLE_SOCKET_MS, well inside any receiver's keep-alive, as real senders' agents
  // do: one kept longer meets the receiver's close as it sends, the delivery gets a reset and waits for its retry.
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY, timeout: IDLE_SOCKET_MS });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY, timeout: IDLE_SOCKET_MS });
  private readonly deps: { store: () => Store; clock: Clock; secret: string; baseUrl: () => string; rng: Random; log: Logger };

  constructor(deps: Deliveries['deps']) {
    this.deps = deps;
    deps.clock.onChange(() => this.pump());
  }

  get pending(): number {
    return this.ready.length - this.head + this.waiting.length + this.held.length + this.inflight;
  }

  /** Queues one delivery per subscription to `event` (singular form) about record `objectId`. */
  enqueue(event: string, objectId: number): void {
    if (this.closed) return;
    const subs = this.deps.store().webhooks.order.filter((w) => w.event === event);
    if (!subs.length) return;
    const { event: plural, resource } = pluralEvent(event);
    const now = this.deps.clock.now();
    const body = JSON.stringify({
      object_id: objectId,
      event: plural,
      timestamp: Math.floor(now / 1000),
      resource_url: `${this.deps.baseUrl()}/${resource}/${objectId}.json`,
    });
    for (const w of subs)
      this.ready.push({
        id: randomUUID(),
        webhookId: w.id,
        event: plural,
        objectId,
        url: w.address,
        body,
        attempt: 0,
        dueAt: now,
        generation: this.generation,
      });
    this.pump();
  }

  recent(limit: number): AttemptLog[] {
    return this.log.slice(-limit).reverse();
  }

  /** Attempts everything pending now, ignoring backoff; resolves with the number delivered. */
  async flush(): Promise<number> {
    const before = this.stats.succeeded;
    for (const d of this.waiting) this.ready.push(d);
    for (const d of this.held) this.ready.push(d);
    this.waiting = [];
    this.nextDue = Infinity;
    this.held = [];
    this.pump();
    await this.whenIdle();
    return this.stats.succeeded - before;
  }

  /** Resolves when nothing is ready or in flight (retries waiting for their time do not count). */
  whenIdle(): Promise<void> {
    if (this.inflight === 0 && this.ready.length === this.head && this.held.length === 0) return Promise.resolve();
    return new Promise((r) => this.idle.push(r));
  }

  clear(): void {
    this.ready = [];
    this.head = 0;
    this.waiting = [];
    this.nextDue = Infinity;
    this.held = [];
    this.generation++;
  }

  close(): void {
    this.closed = true;
    this.clear();
    if (this.timer) clearTimeout(this.timer);
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
    for (const r of this.idle.splice(0)) r();
  }

  private pump(): void {
    if (this.closed) return;
    const now = this.deps.clock.now();
    if (this.waiting.length && now >= this.nextDue) {
      const still: Delivery[] = [];
      let next = Infinity;
      for (const d of this.waiting) {
        if (d.dueAt <= now) this.ready.push(d);
        else {
          still.push(d);
          if (d.dueAt < next) next = d.dueAt;
        }
      }
      this.waiting = still;
      this.nextDue = next;
    }
    while (this.inflight < CONCURRENCY && this.head < this.ready.length) {
      const d = this.ready[this.head++]!;
      this.dispatch(d);
    }
    if (this.head > 1024 && this.head * 2 > this.ready.length) {
      this.ready = this.ready.slice(this.head);
      this.head = 0;
    }
    this.schedule();
    this.checkIdle();
  }

  private checkIdle(): void {
    if (this.inflight === 0 && this.ready.length === this.head && this.held.length === 0) for (const r of this.idle.splice(0)) r();
  }

  private schedule(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (!this.waiting.length) return;
    const delay = this.deps.clock.realDelay(this.nextDue);
    if (delay === null) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.pump();
      },
      Math.min(Math.max(5, Math.ceil(delay)), 2 ** 31 - 1),
    );
    this.timer.unref();
  }

  private dispatch(d: Delivery): void {
    const store = this.deps.store();
    if (d.generation !== this.generation || !store.webhooks.get(d.webhookId)) return; // subscription gone meanwhile
    const f = this.faults;
    const rng = this.deps.rng;
    if (d.attempt === 0 && rng.chance(f.drop ?? 0)) {
      this.record(d, 'dropped');
      return;
    }
    if (d.attempt === 0 && rng.chance(f.reorder ?? 0) && this.held.length === 0) {
      // Held back and sent after the next delivery, so the two arrive swapped.
      this.held.push(d);
      const release = setTimeout(() => this.release(), 200);
      release.unref();
      return;
    }
    const held = this.held.splice(0);
    this.inflight++;
    const go = () => {
      this.send(d).finally(() => {
        this.inflight--;
        this.pump();
      });
      if (d.attempt === 1 && rng.chance(f.duplicate ?? 0)) {
        this.inflight++;
        this.sendCopy(d).finally(() => {
          this.inflight--;
          this.pump();
        });
      }
      for (const h of held) {
        this.inflight++;
        h.attempt++;
        this.send(h).finally(() => {
          this.inflight--;
          this.pump();
        });
      }
    };
    d.attempt++;
    if (f.delay_ms) setTimeout(go, f.delay_ms).unref();
    else go();
  }

  private release(): void {
    const held = this.held.splice(0);
    for (const h of held) {
      this.inflight++;
      this.send(h, true).finally(() => {
        this.inflight--;
        this.pump();
      });
    }
  }

  private post(d: Delivery): Promise<number | string> {
    const secret = this.deps.rng.chance(this.faults.corrupt_signature ?? 0) ? `${this.deps.secret}-corrupted` : this.deps.secret;
    const url = new URL(d.url);
    const mod = url.protocol === 'https:' ? https : http;
    return new Promise((resolve) => {
      const req = mod.request(
        url,
        {
          method: 'POST',
          agent: url.protocol === 'https:' ? this.httpsAgent : this.httpAgent,
          headers: {
            'Content-Type': 'application/json',
            'Content-Length': Buffer.byteLength(d.body),
            'User-Agent': 'commerce-sandbox-webhooks',
            'X-Service-Delivery': d.id,
            'X-Service-Signature': sign(d.body, secret),
          },
          timeout: RESPONSE_TIMEOUT_MS,
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', (err: NodeJS.ErrnoException) => resolve(`error ${err.code ?? err.message}`));
        },
      );
      req.on('timeout', () => {
        req.destroy();
        resolve('timeout');
      });
      // The code says which (ECONNRESET on a kept-alive socket the receiver closed, ECONNREFUSED, ...).
      req.on('error', (err: NodeJS.ErrnoException) => resolve(`error ${err.code ?? err.message}`));
      req.end(d.body);
    });
  }

  private async sendCopy(d: Delivery): Promise<void> {
    const status = await this.post(d);
    this.record(d, status);
  }

  private async send(d: Delivery, bump = false): Promise<void> {
    if (bump) d.attempt++;
    this.stats.attempted++;
    const status = await this.post(d);
    this.record(d, status);
    const store = this.deps.store();
    const hook = d.generation === this.generation ? store.webhooks.get(d.webhookId) : undefined;
    if (typeof status === 'number' && status >= 200 && status < 400) {
      this.stats.succeeded++;
      if (hook) hook._failingSince = null;
      return;
    }
    this.stats.failed++;
    if (!hook) return;
    if (status === 410) return this.unsubscribe(hook, 'answered 410');
    const now = this.deps.clock.now();
    hook._failingSince ??= now;
    if (now - (hook._failingSince as number) >= FAILURE_RETENTION_S * 1000) return this.unsubscribe(hook, 'failing for 3 days');
    const wait = Math.min(RETRY_BASE_S * 2 ** (d.attempt - 1), RETRY_CAP_S);
    d.dueAt = now + wait * 1000;
    this.waiting.push(d);
    if (d.dueAt < this.nextDue) this.nextDue = d.dueAt;
  }

  private unsubscribe(hook: Row, why: string): void {
    this.deps.store().webhooks.remove(hook.id);
    this.waiting = this.waiting.filter((d) => d.webhookId !== hook.id);
    this.deps.log.info({ webhook: hook.id, event: hook.event }, `webhook subscription deleted: ${why}`);
  }

  private record(d: Delivery, status: number | string): void {
    this.log.push({ id: d.id, event: d.event, object_id: d.objectId, url: d.url, status, attempt: d.attempt, at: this.deps.clock.iso() });
    if (this.log.length > 2000) this.log.splice(0, 1000);
  }
}
