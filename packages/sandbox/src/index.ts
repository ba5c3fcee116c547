// The sandbox: a runnable simulator of the Commerce Operations Service over real HTTP (node:http), with its
// admin API under /__sandbox/. See docs/sandbox.md for every choice made where the spec is silent.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import { Clock } from './clock.ts';
import { Random } from './random.ts';
import { ApiFail, Store } from './store.ts';
import { readState, STATE_GAP, STATE_VERSION, stateText, writeState, type SandboxState } from './state.ts';
import { Service } from './service.ts';
import { newStore, seed } from './seed.ts';
import { Api, type ApiAnswer, type Caller } from './api.ts';
import { Tokens, OAuthFail } from './oauth.ts';
import { Deliveries, type DeliveryFaults } from './webhooks.ts';
import { Activity, ACTIVITY_KINDS, type ActivityKind } from './activity.ts';
import { PROFILES, type Profile } from './profile.ts';
import { LIST_ORDERS, type ListOrder } from './list.ts';

export { DOCUMENTED_EVENTS, PROFILES, SPEC_EVENTS, type Profile } from './profile.ts';
export { ACTIVITY_KINDS, type ActivityKind } from './activity.ts';
export { LIST_ORDERS, type ListOrder } from './list.ts';

export interface SandboxOptions {
  host?: string;
  port?: number;
  seed?: number;
  variants?: number;
  locations?: number;
  token?: string;
  clientId?: string;
  clientSecret?: string;
  adminToken?: string;
  timeScale?: number;
  manualClock?: boolean;
  rateLimit?: number;
  rateWindowSeconds?: number;
  /** spec: as the spec describes the service; documented: as its public documentation shows it (docs/sandbox.md). */
  profile?: Profile;
  activity?: number;
  maxUriLength?: number;
  tokenExpiresIn?: number;
  /** What "most recent first" sorts lists by when no `order=` is given: creation (the default) or update. */
  listOrder?: ListOrder;
  /**
   * Seconds the web servers' clock (answers' `Date`) runs ahead of the clock that stamps webhook timestamps and
   * records (negative: behind). Real-service-notes section 7: the two are different machines.
   */
  clockSkewSeconds?: number;
  /**
   * A file the account is kept in (state.ts): read at start when it exists (seed and variants then play no part),
   * written every few seconds and at close. Unset: a new account each start, kept nowhere.
   */
  stateFile?: string;
  log?: Logger;
}

export interface Sandbox {
  url: string;
  token: string;
  adminToken: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

export const DEFAULTS = {
  host: '127.0.0.1',
  port: 0,
  seed: 1,
  variants: 50,
  locations: 3,
  token: 'sandbox-token',
  clientId: 'commerce-sync',
  clientSecret: 'sandbox-secret',
  adminToken: 'sandbox-admin',
  timeScale: 1,
  manualClock: false,
  rateLimit: 300,
  rateWindowSeconds: 300,
  profile: 'documented' as Profile,
  activity: 0,
  maxUriLength: 8192,
  tokenExpiresIn: 7200,
  listOrder: 'created' as ListOrder,
  clockSkewSeconds: 0,
  stateFile: '',
};

/** How often, at most, a sandbox with a state file writes it while it runs (when something changed). */
const STATE_SAVE_MS = 5000;

const IDEMPOTENCY_LIFETIME_MS = 24 * 3600_000;
const MAX_BODY = 20 * 1024 * 1024;
/** Node's own header limit (16 KiB) would answer 431 before the sandbox's URI check could answer 414. */
const MAX_HEADER_SIZE = 1024 * 1024;

export interface ResponseFaults {
  error_500?: number;
  error_503?: number;
  latency_ms?: number;
  lose_response?: number;
  routes?: string;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body?: string;
  contentType?: string;
}

/** The answer kept for an idempotency key, and until when (sandbox ms). */
interface Idempotent {
  fingerprint: string;
  answer: Answer;
  expires: number;
}

class SandboxServer {
  readonly o: typeof DEFAULTS & { log: Logger };
  readonly clock: Clock;
  store!: Store;
  service!: Service;
  api!: Api;
  activity!: Activity;
  readonly tokens: Tokens;
  readonly deliveries: Deliveries;
  url = '';
  lapsed = false;
  responseFaults: ResponseFaults = {};
  private routesRe: RegExp | null = null;
  private faultRng: Random;
  private windows = new Map<string, { start: number; count: number }>();
  private idempotent = new Map<string, Idempotent>();
  stats = { total: 0, by_status: {} as Record<string, number>, by_route: {} as Record<string, number>, rate_limited: 0 };
  private activityTimer: NodeJS.Timeout | null = null;
  private saveTimer: NodeJS.Timeout | null = null;
  /** The state last written (less its clock). */
  private savedText = '';

  constructor(opts: SandboxOptions) {
    const clean = Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined));
    this.o = { ...DEFAULTS, log: pino({ level: 'silent' }), ...clean };
    if (!PROFILES.includes(this.o.profile)) throw new Error(`profile must be ${PROFILES.join(' or ')}, got "${this.o.profile}"`);
    if (!LIST_ORDERS.includes(this.o.listOrder))
      throw new Error(`listOrder must be ${LIST_ORDERS.join(' or ')}, got "${this.o.listOrder}"`);
    if (!Number.isFinite(this.o.clockSkewSeconds)) throw new Error(`clockSkewSeconds must be a number, got "${this.o.clockSkewSeconds}"`);
    this.clock = new Clock(this.o.timeScale, this.o.manualClock);
    this.faultRng = new Random(this.o.seed * 7919 + 1);
    this.tokens = new Tokens(this.clock, {
      clientId: this.o.clientId,
      clientSecret: this.o.clientSecret,
      expiresIn: this.o.tokenExpiresIn,
    });
    this.tokens.addPrivileged(this.o.token);
    this.deliveries = new Deliveries({
      store: () => this.store,
      clock: this.clock,
      secret: this.o.clientSecret,
      baseUrl: () => this.url,
      rng: new Random(this.o.seed * 104729 + 3),
      log: this.o.log,
    });
    const kept = this.o.stateFile ? readState(this.o.stateFile) : null;
    if (kept) this.resume(kept);
    else this.reset(this.o.seed, this.o.variants);
  }

  reset(seedValue: number, variants: number): void {
    this.use(newStore(this.clock.now()), new Random(seedValue * 31 + 17));
    this.service.muted = true;
    try {
      seed(this.store, this.service, { seed: seedValue, variants, locations: this.o.locations });
    } finally {
      this.service.muted = false;
    }
  }

  /** The account of a state file, as it was saved (state.ts says why ids jump after an unclean stop). */
  private resume(kept: SandboxState): void {
    const gap = kept.clean ? 0 : STATE_GAP;
    if (kept.clock > this.clock.now()) this.clock.set(kept.clock);
    const store = Store.load(kept.store, gap);
    this.use(store, new Random(0));
    this.activity.restore(kept.activity, gap);
    for (const [key, entry] of kept.idempotent) this.idempotent.set(key, entry as Idempotent);
    this.o.log[gap ? 'warn' : 'info'](
      { file: this.o.stateFile, variants: store.variants.order.length, orders: store.orders.order.length, gap },
      gap
        ? 'sandbox: resumed the account of a state saved while running (not at a stop): ids and numbers go on from further, so none is given twice'
        : 'sandbox: resumed the account of its state file',
    );
  }

  /** Makes `store` the account: its service, API and activity; what belonged to the last one goes. */
  private use(store: Store, activityRng: Random): void {
    this.deliveries.clear();
    this.store = store;
    this.service = new Service(store, this.clock, this.o.profile, (event, id) => this.deliveries.enqueue(event, id));
    this.api = new Api(this.service, this.o.profile, this.o.listOrder);
    this.activity = new Activity(this.service, activityRng);
    this.windows.clear();
    this.idempotent.clear();
    this.savedText = '';
  }

  /** Writes the state file when the account changed since the last write; `clean` at close. */
  save(clean: boolean): void {
    if (!this.o.stateFile) return;
    const text = stateText({
      version: STATE_VERSION,
      clean,
      clock: this.clock.now(),
      store: this.store.dump(),
      activity: this.activity.dump(),
      idempotent: [...this.idempotent],
    });
    // The clock always moves: compare without it.
    const same = text.replace(/"clock":\d+,/, '');
    if (same === this.savedText) return;
    writeState(this.o.stateFile, text);
    this.savedText = same;
  }

  startActivity(): void {
    if (!(this.o.activity > 0)) return;
    let due = 0;
    this.activityTimer = setInterval(() => {
      due += this.o.activity / 10;
      const n = Math.floor(due);
      due -= n;
      if (n > 0) this.activity.perform(n);
    }, 100);
    this.activityTimer.unref();
  }

  startSaving(): void {
    if (!this.o.stateFile) return;
    this.save(false);
    // A save stops everything else in the process (the demo's workers too) while it runs: an account grown large
    // (27 MB after four hours of the demo's activity, half a second a save) is saved less often, at most a fiftieth
    // of the time. A kill then loses more seconds, which the ids' jump after an unclean stop covers.
    const next = (delayMs: number) => {
      this.saveTimer = setTimeout(() => {
        const started = performance.now();
        try {
          this.save(false);
        } catch (err) {
          this.o.log.error({ err, file: this.o.stateFile }, 'sandbox: could not write its state file; the account is kept in memory only');
        }
        next(Math.max(STATE_SAVE_MS, 50 * (performance.now() - started)));
      }, delayMs);
      this.saveTimer.unref();
    };
    next(STATE_SAVE_MS);
  }

  stop(): void {
    if (this.activityTimer) clearInterval(this.activityTimer);
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.deliveries.close();
    this.save(true);
  }

  // ---- HTTP ----------------------------------------------------------------------------------------------

  async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const requestId = randomUUID();
    // Date is the service's clock, as on any HTTP server: here the sandbox's (scaled) clock, taken as the
    // request arrives, so a client can place what it read on the same clock as webhook timestamps.
    res.setHeader('Date', new Date(this.clock.now() + this.o.clockSkewSeconds * 1000).toUTCString());
    const rawUrl = req.url ?? '/';
    const qIndex = rawUrl.indexOf('?');
    const pathname = (qIndex < 0 ? rawUrl : rawUrl.slice(0, qIndex)) || '/';
    const query = new URLSearchParams(qIndex < 0 ? '' : rawUrl.slice(qIndex + 1));
    const method = (req.method ?? 'GET').toUpperCase();
    let answer: Answer;
    try {
      if (pathname.startsWith('/__sandbox/')) answer = await this.admin(req, method, pathname.slice('/__sandbox/'.length), query);
      else if (pathname.startsWith('/oauth/')) answer = await this.oauth(req, method, pathname, query);
      else return await this.apiRequest(req, res, method, rawUrl, pathname, query, requestId);
    } catch (err) {
      answer = this.failure(err);
    }
    answer.headers['X-Request-ID'] = requestId;
    this.write(res, answer);
  }

  private write(res: http.ServerResponse, a: Answer): void {
    const headers: Record<string, string | number> = { ...a.headers };
    if (a.body !== undefined) {
      headers['Content-Type'] = a.contentType ?? 'application/json; charset=utf-8';
      headers['Content-Length'] = Buffer.byteLength(a.body);
    }
    res.writeHead(a.status, headers);
    res.end(a.body);
  }

  private failure(err: unknown): Answer {
    if (err instanceof ApiFail) {
      // A 422 carries only the per-field errors (tradegecko/gecko: spec/vcr_cassettes/products_new_invalid.yml).
      const body = err.status === 422 ? { errors: err.errors ?? { base: [err.message] } } : { error: err.message };
      return { status: err.status, headers: { ...err.headers }, body: JSON.stringify(body) };
    }
    if (err instanceof OAuthFail)
      return { status: err.status, headers: {}, body: JSON.stringify({ error: err.error, error_description: err.message }) };
    this.o.log.error({ err }, 'sandbox: unexpected error');
    return { status: 500, headers: {}, body: JSON.stringify({ error: 'Internal server error' }) };
  }

  private async readBody(req: http.IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY) throw new ApiFail(413, 'Request body too large');
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  private parseJson(text: string): Record<string, any> | null {
    if (!text.trim()) return null;
    try {
      const v = JSON.parse(text);
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
      return v;
    } catch {
      throw new ApiFail(400, 'The request body is not a JSON object');
    }
  }

  private rateHeaders(key: string, count: boolean): { headers: Record<string, string>; over: boolean } {
    const now = this.clock.now();
    let w = this.windows.get(key);
    if (!w || now >= w.start + this.o.rateWindowSeconds * 1000) {
      w = { start: now, count: 0 };
      this.windows.set(key, w);
    }
    const over = w.count >= this.o.rateLimit;
    if (count && !over) w.count++;
    const reset = Math.ceil(this.clock.toReal(w.start + this.o.rateWindowSeconds * 1000) / 1000);
    return {
      over,
      headers: {
        'X-Rate-Limit-Limit': String(this.o.rateLimit),
        'X-Rate-Limit-Remaining': String(Math.max(0, this.o.rateLimit - w.count)),
        'X-Rate-Limit-Reset': String(reset),
      },
    };
  }

  private count(method: string, pathname: string, status: number): void {
    const route = `${method} ${
      pathname
        .replace(/\.json$/, '')
        .replace(/\/\d+(?=\/|$)/g, '/:id')
        .replace(/\/+$/, '') || '/'
    }`;
    this.stats.total++;
    this.stats.by_status[status] = (this.stats.by_status[status] ?? 0) + 1;
    this.stats.by_route[route] = (this.stats.by_route[route] ?? 0) + 1;
  }

  private async apiRequest(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    method: string,
    rawUrl: string,
    pathname: string,
    query: URLSearchParams,
    requestId: string,
  ): Promise<void> {
    let rate: Record<string, string> = {};
    let answer: Answer;
    let lose = false;
    try {
      if (rawUrl.length > this.o.maxUriLength) {
        req.resume();
        rate = this.rateHeaders('anonymous', false).headers;
        throw new ApiFail(414, `Request-URI too long (${rawUrl.length} > ${this.o.maxUriLength}); send fewer filters per request`);
      }
      const text = await this.readBody(req);
      let token;
      try {
        token = this.tokens.authenticate(req.headers.authorization);
      } catch (err) {
        rate = this.rateHeaders('anonymous', false).headers;
        throw err;
      }
      const caller: Caller = { appId: token.appId, accountId: token.accountId, access: token.access };
      const r = this.rateHeaders(`${caller.appId}:${caller.accountId}`, true);
      rate = r.headers;
      if (r.over) {
        this.stats.rate_limited++;
        const wait = Math.max(0, Number(r.headers['X-Rate-Limit-Reset']) - Math.floor(Date.now() / 1000));
        throw new ApiFail(429, 'Rate limit exceeded; retry after X-Rate-Limit-Reset', undefined, { 'Retry-After': String(wait) });
      }
      if (this.lapsed) throw new ApiFail(402, 'The subscription of this account has lapsed');
      const f = this.responseFaults;
      const faulty = !this.routesRe || this.routesRe.test(`${method} ${pathname}`);
      if (faulty && f.latency_ms) await new Promise((r2) => setTimeout(r2, f.latency_ms));
      if (faulty && this.faultRng.chance(f.error_500 ?? 0)) throw new ApiFail(500, 'Internal server error (injected)');
      if (faulty && this.faultRng.chance(f.error_503 ?? 0))
        throw new ApiFail(503, 'Service unavailable (injected); retry, with a smaller page for large lists');
      if (text.trim() && !/json/i.test(String(req.headers['content-type'] ?? ''))) {
        throw new ApiFail(400, 'Request bodies are JSON: send Content-Type: application/json');
      }
      const body = this.parseJson(text);
      const key =
        method === 'POST' || method === 'PUT'
          ? ((req.headers['idempotency-key'] ?? req.headers.http_idempotency_key ?? req.headers['http-idempotency-key']) as
              | string
              | undefined)
          : undefined;
      const fingerprint = `${method} ${pathname}`;
      const idemKey = key ? `${caller.appId}:${caller.accountId}:${key}` : null;
      const now = this.clock.now();
      const seen = idemKey ? this.idempotent.get(idemKey) : undefined;
      if (seen && seen.expires > now) {
        if (seen.fingerprint !== fingerprint)
          throw new ApiFail(422, 'This idempotency key was used for a different request', {
            idempotency_key: ['was used for a different request'],
          });
        answer = { ...seen.answer, headers: { ...seen.answer.headers, 'Idempotent-Replayed': 'true' } };
      } else {
        answer = this.route(method, pathname, query, body, caller);
        if (idemKey && answer.status < 500) {
          this.idempotent.set(idemKey, { fingerprint, answer, expires: now + IDEMPOTENCY_LIFETIME_MS });
          if (this.idempotent.size > 100_000) for (const [k, v] of this.idempotent) if (v.expires <= now) this.idempotent.delete(k);
        }
      }
      lose = faulty && this.faultRng.chance(f.lose_response ?? 0);
    } catch (err) {
      answer = this.failure(err);
    }
    answer = { ...answer, headers: { ...answer.headers, ...rate, 'X-Request-ID': requestId } };
    this.count(method, pathname, answer.status);
    if (lose) {
      // The work is done; the answer is lost on the way.
      req.socket.destroy();
      return;
    }
    this.write(res, answer);
  }

  private route(method: string, pathname: string, query: URLSearchParams, body: Record<string, any> | null, caller: Caller): Answer {
    const parts = pathname
      .replace(/\.json$/, '')
      .split('/')
      .filter(Boolean);
    const a: ApiAnswer = this.api.handle({ method, parts, query, body, caller });
    return { status: a.status, headers: a.headers ?? {}, body: a.body === undefined ? undefined : JSON.stringify(a.body) };
  }

  // ---- OAuth ---------------------------------------------------------------------------------------------

  private async oauth(req: http.IncomingMessage, method: string, pathname: string, query: URLSearchParams): Promise<Answer> {
    const text = await this.readBody(req);
    const form = (): URLSearchParams => {
      const type = String(req.headers['content-type'] ?? '');
      if (type.includes('application/json'))
        return new URLSearchParams(Object.entries(this.parseJson(text) ?? {}).map(([k, v]) => [k, String(v)] as [string, string]));
      return new URLSearchParams(text);
    };
    if (pathname === '/oauth/authorize' && method === 'GET') {
      const page = this.tokens.authorizePage(query);
      return { status: page.status, headers: {}, body: page.html, contentType: 'text/html; charset=utf-8' };
    }
    if (pathname === '/oauth/authorize' && method === 'POST') {
      return { status: 302, headers: { Location: this.tokens.decide(form()) } };
    }
    if (pathname === '/oauth/token' && method === 'POST') {
      const type = String(req.headers['content-type'] ?? '');
      const body = type.includes('application/x-www-form-urlencoded')
        ? Object.fromEntries(new URLSearchParams(text))
        : (this.parseJson(text) ?? {});
      return { status: 200, headers: { 'Cache-Control': 'no-store' }, body: JSON.stringify(this.tokens.token(body)) };
    }
    throw new ApiFail(404, 'Not found');
  }

  // ---- admin ---------------------------------------------------------------------------------------------

  private async admin(req: http.IncomingMessage, method: string, path: string, query: URLSearchParams): Promise<Answer> {
    const text = await this.readBody(req);
    if (req.headers.authorization !== `Bearer ${this.o.adminToken}`)
      throw new ApiFail(401, 'The admin API needs Authorization: Bearer <adminToken>');
    const body = this.parseJson(text) ?? {};
    const ok = (v: unknown, status = 200): Answer => ({ status, headers: {}, body: JSON.stringify(v) });
    const key = `${method} ${path.replace(/\/+$/, '')}`;
    switch (key) {
      case 'GET stats':
        return ok({
          requests: { total: this.stats.total, by_status: this.stats.by_status, by_route: this.stats.by_route },
          rate_limited: this.stats.rate_limited,
          deliveries: { ...this.deliveries.stats, pending: this.deliveries.pending },
        });
      case 'POST faults': {
        const d = (body.deliveries ?? {}) as DeliveryFaults;
        const r = (body.responses ?? {}) as ResponseFaults;
        for (const [k, v] of Object.entries({ ...d, ...r })) {
          if (k === 'routes') continue;
          if (typeof v !== 'number' || v < 0 || (!k.endsWith('_ms') && v > 1))
            throw new ApiFail(422, `fault ${k} must be a probability 0..1 (or milliseconds)`, { [k]: ['is invalid'] });
        }
        let re: RegExp | null = null;
        if (r.routes !== undefined) {
          try {
            re = new RegExp(r.routes);
          } catch {
            throw new ApiFail(422, 'routes is not a valid regular expression', { routes: ['is invalid'] });
          }
        }
        this.deliveries.faults = d;
        this.responseFaults = r;
        this.routesRe = re;
        return ok({ deliveries: d, responses: r });
      }
      case 'POST clock': {
        if (body.skew_seconds !== undefined) {
          if (typeof body.skew_seconds !== 'number' || !Number.isFinite(body.skew_seconds))
            throw new ApiFail(422, 'skew_seconds must be a number (seconds the Date header runs ahead)', { skew_seconds: ['is invalid'] });
          this.o.clockSkewSeconds = body.skew_seconds;
          return ok({ now: this.clock.iso(), skew_seconds: this.o.clockSkewSeconds });
        }
        if (typeof body.advance_seconds === 'number') this.clock.advance(body.advance_seconds);
        else if (typeof body.set === 'string' && !Number.isNaN(Date.parse(body.set))) this.clock.set(Date.parse(body.set));
        else if (Object.keys(body).length)
          throw new ApiFail(422, 'give advance_seconds (number) or set (ISO timestamp)', { clock: ['is invalid'] });
        return ok({ now: this.clock.iso(), skew_seconds: this.o.clockSkewSeconds });
      }
      case 'POST activity': {
        const n = Number(body.operations ?? 1);
        const kinds = body.kinds as ActivityKind[] | undefined;
        if (!Number.isInteger(n) || n < 0 || n > 100_000)
          throw new ApiFail(422, 'operations must be an integer 0..100000', { operations: ['is invalid'] });
        if (kinds && (!Array.isArray(kinds) || kinds.some((k) => !ACTIVITY_KINDS.includes(k))))
          throw new ApiFail(422, `kinds must be some of ${ACTIVITY_KINDS.join(', ')}`, { kinds: ['is invalid'] });
        return ok({ performed: this.activity.perform(n, kinds) });
      }
      case 'POST reset':
        this.reset(Number(body.seed ?? this.o.seed), Number(body.variants ?? this.o.variants));
        return ok({ ok: true });
      case 'GET snapshot': {
        const resource = query.get('resource') ?? '';
        const rows = this.api.snapshot(resource);
        if (!rows) throw new ApiFail(404, `unknown resource ${resource}`);
        return ok({ [resource]: rows });
      }
      case 'POST account':
        if (typeof body.lapsed === 'boolean') this.lapsed = body.lapsed;
        return ok({ lapsed: this.lapsed });
      case 'POST revoke':
        return ok({ revoked: this.tokens.revoke(String(body.token ?? '')) });
      case 'POST tokens': {
        const token = `sbx_${randomUUID().replaceAll('-', '')}`;
        const access = body.access === 'read' ? 'read' : 'full';
        this.tokens.addPrivileged(token, access, Number(body.application_id ?? 1));
        return ok({ token, access, application_id: Number(body.application_id ?? 1) }, 201);
      }
      case 'POST deliveries/flush':
        return ok({ delivered: await this.deliveries.flush() });
      case 'GET stock_moves': {
        // since=<ISO timestamp> (inclusive) or after=<seq> (exclusive: a cursor that never repeats a move).
        const since = query.get('since'),
          after = query.get('after');
        if (since !== null && Number.isNaN(Date.parse(since)))
          throw new ApiFail(400, `since must be an ISO 8601 timestamp, got "${since}"`);
        if (after !== null && !/^\d+$/.test(after)) throw new ApiFail(400, `after must be a move's seq (an integer), got "${after}"`);
        const from = since === null ? '' : new Date(since).toISOString();
        const afterSeq = after === null ? 0 : Number(after);
        return ok({ stock_moves: [...this.store.stockMoves].filter((m) => m.at >= from && m.seq > afterSeq) });
      }
      case 'GET deliveries':
        return ok(this.deliveries.recent(Math.min(2000, Number(query.get('limit') ?? 100))));
      default:
        throw new ApiFail(404, `unknown admin route ${key}`);
    }
  }
}

export async function startSandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  const sb = new SandboxServer(opts);
  const server = http.createServer({ maxHeaderSize: MAX_HEADER_SIZE }, (req, res) => {
    sb.handle(req, res).catch((err) => {
      sb.o.log.error({ err }, 'sandbox: request failed');
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: 'Internal server error' }));
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(sb.o.port, sb.o.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = sb.o.host === '0.0.0.0' || sb.o.host === '::' ? '127.0.0.1' : sb.o.host;
  sb.url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  sb.startActivity();
  sb.startSaving();
  sb.o.log.info({ url: sb.url, variants: sb.o.variants, seed: sb.o.seed }, 'sandbox listening');
  return {
    url: sb.url,
    token: sb.o.token,
    adminToken: sb.o.adminToken,
    clientId: sb.o.clientId,
    clientSecret: sb.o.clientSecret,
    close: async () => {
      sb.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
