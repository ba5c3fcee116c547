// The client of one connection: every request reserves a slot of the shared budget (gate.ts, budget.ts),
// carries the current access token (tokens.ts), and is retried as the spec's status codes say (retry.ts).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../config.ts';
import type { Db } from '../db/index.ts';
import type { Connection } from '../db/schema.ts';
import type { Logger } from '../log.ts';
import { metrics } from '../metrics.ts';
import { rateHeaders, release } from './budget.ts';
import { ApiError } from './errors.ts';
import { BudgetGate } from './gate.ts';
import { buildUrl, errorDetails, keyFromPath, parseJson, parsePagination } from './http.ts';
import { tokenKey } from './secrets.ts';
import { decideRetry, initialRetryState } from './retry.ts';
import { setStatus, Tokens } from './tokens.ts';
import {
  priorityRank,
  type ApiClient,
  type ApiResponse,
  type Method,
  type OrderAction,
  type Page,
  type Priority,
  type QueryValue,
  type RequestOptions,
  type WriteOptions,
} from './types.ts';

export interface ClientDeps {
  db: Db;
  config: Config;
  log: Logger;
}

/** Knobs for tests and benchmarks; the defaults suit the real service. */
export interface ClientOptions {
  /** First retry delay of 500/502/504/network failures; doubles per attempt, with full jitter. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Told of every request sent (the push worker records them for the console's operation page). */
  onRequest?: (r: SentRequest) => void;
}

/** One HTTP request as sent: status null when no answer came. */
export interface SentRequest {
  method: string;
  path: string;
  status: number | null;
  requestId: string | null;
  ms: number;
}

export const PAGE_SIZE = 250;
export const ORDER_LINES_PER_REQUEST = 150;

interface Call {
  method: Method;
  path: string;
  query?: Record<string, QueryValue>;
  body?: unknown;
  idempotencyKey?: string;
  rank: number;
  /** A list read: a 503 is handed back at once so the caller can halve the page. */
  list?: boolean;
  /** Counts requests sent for this call (getByIds reports it). */
  sent?: { n: number };
}

interface Raw {
  status: number;
  text: string;
  headers: Headers;
  requestId: string | null;
}

// One gate per connection per process (and database), whichever client objects are created for it.
const gates = new WeakMap<Db, Map<number, BudgetGate>>();
const keys = new WeakMap<Config, Buffer>();

function gateFor(deps: ClientDeps, connection: Connection): BudgetGate {
  let byId = gates.get(deps.db);
  if (!byId) gates.set(deps.db, (byId = new Map()));
  let gate = byId.get(connection.id);
  if (!gate) {
    const name = connection.name;
    gate = new BudgetGate({
      db: deps.db,
      connectionId: connection.id,
      concurrency: deps.config.API_CONCURRENCY,
      settings: { reserve: deps.config.BUDGET_RESERVE, leaseMs: deps.config.API_TIMEOUT_MS + 30_000 },
      stopped: (status, reason) =>
        new ApiError(`connection ${name} is ${status}${reason ? `: ${reason}` : ''}; nothing is sent until it is reconnected`, {
          status: status === 'lapsed' ? 402 : status === 'unauthorized' ? 401 : null,
        }),
      onAvailable: (n) => metrics.budgetRemaining.set({ connection: name }, Math.max(0, n)),
    });
    byId.set(connection.id, gate);
  }
  return gate;
}

export function keyFor(config: Config): Buffer {
  let key = keys.get(config);
  if (!key) keys.set(config, (key = tokenKey(config)));
  return key;
}

/** Splits ids so each request carries at most `perRequest` of them and its URI stays within `maxUri`. */
export function splitIds(urlWithoutIds: (ids: number[]) => string, ids: number[], maxUri: number, perRequest = PAGE_SIZE): number[][] {
  const chunks: number[][] = [];
  const fixed = urlWithoutIds([0]).length - 1; // the URI with a one-digit id, less that digit
  let chunk: number[] = [];
  let length = fixed;
  for (const id of ids) {
    const digits = String(id).length;
    if (fixed + digits > maxUri) throw new Error(`a request for one id is already longer than API_MAX_URI_LENGTH (${maxUri})`);
    if (chunk.length && (chunk.length >= perRequest || length + 1 + digits > maxUri)) {
      chunks.push(chunk);
      chunk = [];
      length = fixed;
    }
    length += (chunk.length ? 1 : 0) + digits;
    chunk.push(id);
  }
  if (chunk.length) chunks.push(chunk);
  return chunks;
}

/** Records under `key` and every other top-level array (the sideloads). null where a list was expected: []. */
export function splitBody(body: unknown, key: string): { records: any[]; sideloads: Record<string, any[]> } {
  const sideloads: Record<string, any[]> = {};
  if (!body || typeof body !== 'object') return { records: [], sideloads };
  let records: any[] = [];
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
    if (k === key) records = Array.isArray(v) ? v : v && typeof v === 'object' ? [v] : [];
    else if (Array.isArray(v)) sideloads[k] = v;
  }
  return { records, sideloads };
}

function mergeSideloads(into: Record<string, any[]>, more: Record<string, any[]>): void {
  for (const [k, v] of Object.entries(more)) {
    const have = (into[k] ??= []);
    const seen = new Set(have.map((r) => r?.id).filter((id) => id !== undefined));
    for (const r of v)
      if (r?.id === undefined || !seen.has(r.id)) {
        have.push(r);
        if (r?.id !== undefined) seen.add(r.id);
      }
  }
}

const unwrap = (body: any, key: string) => (body && typeof body === 'object' && key in body ? body[key] : body);

export class Client implements ApiClient {
  readonly connection: Connection;
  #deps: ClientDeps;
  #tokens: Tokens;
  #gate: BudgetGate;
  #backoffBase: number;
  #backoffMax: number;
  #onRequest: ((r: SentRequest) => void) | undefined;

  constructor(deps: ClientDeps, connection: Connection, opts: ClientOptions = {}) {
    this.#deps = deps;
    this.connection = connection;
    this.#tokens = new Tokens({ ...deps, key: keyFor(deps.config) }, connection);
    this.#gate = gateFor(deps, connection);
    this.#backoffBase = opts.backoffBaseMs ?? 500;
    this.#backoffMax = opts.backoffMaxMs ?? 30_000;
    this.#onRequest = opts.onRequest;
  }

  // ---- core ----

  async request<T = any>(method: Method, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    const raw = await this.#execute({
      method,
      path,
      query: opts.query,
      body: opts.body,
      rank: priorityRank[opts.priority ?? 'interactive'],
      idempotencyKey: method === 'POST' || method === 'PUT' ? (opts.idempotencyKey ?? randomUUID()) : undefined,
    });
    return { status: raw.status, body: this.#parse(raw, method, path) as T, headers: raw.headers, requestId: raw.requestId };
  }

  async get<T = any>(path: string, opts: RequestOptions = {}): Promise<T> {
    return (await this.request<T>('GET', path, opts)).body;
  }

  async #execute(call: Call): Promise<Raw> {
    const { config, log } = this.#deps;
    const policy = { maxAttempts: config.API_MAX_ATTEMPTS, backoffBaseMs: this.#backoffBase, backoffMaxMs: this.#backoffMax };
    let state = initialRetryState;
    for (;;) {
      const { token, enc } = await this.#tokens.current();
      let raw: Raw;
      try {
        raw = await this.#gate.run(call.rank, (lease) => this.#attempt(call, token, lease));
      } catch (err) {
        const d = err instanceof ApiError && err.status === null && err.retryable ? decideRetry(null, state, policy, call) : null;
        if (d?.action !== 'retry') throw err;
        state = d.next;
        log.warn(
          { connection: this.connection.name, method: call.method, path: call.path, attempt: state.failures, err: (err as Error).message },
          'no answer from the service; retrying',
        );
        await sleep(d.delayMs);
        continue;
      }
      const d = decideRetry(raw.status, state, policy, call);
      switch (d.action) {
        case 'done':
          return raw;
        case 'retry':
          if (d.next.failures > state.failures) {
            log.warn(
              {
                connection: this.connection.name,
                method: call.method,
                path: call.path,
                status: raw.status,
                requestId: raw.requestId,
                attempt: d.next.failures,
              },
              'service error; retrying',
            );
          }
          state = d.next;
          if (d.delayMs) await sleep(d.delayMs);
          continue;
        case 'refresh':
          state = d.next;
          if (await this.#tokens.reload(enc)) continue;
          if (this.connection.auth_kind === 'token') throw await this.#unauthorized(raw, call);
          await this.#tokens.refresh(enc); // throws (and marks the connection) when it cannot
          continue;
        case 'unauthorized':
          throw await this.#unauthorized(raw, call);
        case 'lapse': {
          const err = this.#error(raw, call, false);
          await setStatus(
            this.#deps.db,
            this.connection,
            'lapsed',
            `the service answered 402: ${err.serviceMessage ?? 'subscription has lapsed'} [X-Request-ID ${raw.requestId ?? '-'}]`,
          );
          log.error(
            { connection: this.connection.name, requestId: raw.requestId },
            'subscription lapsed (402): connection marked lapsed, no more requests are sent',
          );
          throw err;
        }
        case 'halve-page':
          throw this.#error(raw, call, true);
        case 'fail':
          throw this.#error(raw, call, d.retryable);
      }
    }
  }

  /** A 401 the token cannot fix: the connection is marked unauthorized with what the operator should do. */
  async #unauthorized(raw: Raw, call: Call): Promise<ApiError> {
    if (this.connection.auth_kind === 'token') {
      await setStatus(
        this.#deps.db,
        this.connection,
        'unauthorized',
        `the service refused the privileged access token (401) [X-Request-ID ${raw.requestId ?? '-'}]; add a new token with commerce-sync connect --token`,
      );
      this.#deps.log.error(
        { connection: this.connection.name, requestId: raw.requestId },
        'access token refused (401): connection marked unauthorized',
      );
    } else {
      await setStatus(
        this.#deps.db,
        this.connection,
        'unauthorized',
        `the service refused a freshly refreshed access token (401) [X-Request-ID ${raw.requestId ?? '-'}]; run commerce-sync connect again`,
      );
    }
    return this.#error(raw, call, false);
  }

  /** One HTTP request under a budget lease; the lease goes back with the answer's rate headers. */
  async #attempt(call: Call, token: string, leaseId: number): Promise<Raw> {
    const { db, config, log } = this.#deps;
    const url = buildUrl(this.connection.base_url, call.path, call.query);
    const headers: Record<string, string> = { Authorization: `Bearer ${token}`, Accept: 'application/json' };
    if (call.body !== undefined) headers['Content-Type'] = 'application/json';
    if (call.idempotencyKey) headers[config.IDEMPOTENCY_HEADER] = call.idempotencyKey;
    const started = performance.now();
    let status: number | null = null;
    let resHeaders: Headers | null = null;
    if (call.sent) call.sent.n++;
    try {
      const res = await fetch(url, {
        method: call.method,
        headers,
        redirect: 'manual',
        body: call.body === undefined ? undefined : JSON.stringify(call.body),
        signal: AbortSignal.timeout(config.API_TIMEOUT_MS),
      });
      const text = await res.text();
      status = res.status;
      resHeaders = res.headers;
      const requestId = res.headers.get('x-request-id');
      log.debug(
        {
          connection: this.connection.name,
          method: call.method,
          path: call.path,
          status,
          requestId,
          ms: Math.round(performance.now() - started),
        },
        'api request',
      );
      return { status, text, headers: res.headers, requestId };
    } catch (err) {
      throw new ApiError(
        `${(err as Error).message}${(err as { cause?: Error }).cause ? ` (${(err as { cause: Error }).cause.message})` : ''}`,
        { status: null, method: call.method, path: call.path, retryable: true, cause: err },
      );
    } finally {
      metrics.apiRequests.inc({ connection: this.connection.name, method: call.method, status: status === null ? 'none' : String(status) });
      this.#onRequest?.({
        method: call.method,
        path: call.path,
        status,
        requestId: resHeaders?.get('x-request-id') ?? null,
        ms: Math.round(performance.now() - started),
      });
      try {
        const r = await release(db, this.connection.id, leaseId, status, resHeaders ? rateHeaders(resHeaders) : null);
        metrics.budgetRemaining.set({ connection: this.connection.name }, Math.max(0, r.available));
        if (r.accountingError) {
          metrics.apiAccountingErrors.inc({ connection: this.connection.name });
          log.error(
            {
              connection: this.connection.name,
              method: call.method,
              path: call.path,
              requestId: resHeaders?.get('x-request-id'),
              reset: resHeaders?.get('x-rate-limit-reset'),
            },
            'rate limit exceeded (429): budget accounting error; waiting for the reset',
          );
        }
      } catch (err) {
        log.warn(
          { connection: this.connection.name, err: (err as Error).message },
          'could not return a budget lease; it expires on its own',
        );
      }
    }
  }

  #parse(raw: Raw, method: string, path: string): unknown {
    if (raw.status === 204 || raw.text.trim() === '') return null;
    try {
      return parseJson(raw.text);
    } catch {
      throw new ApiError('the answer is not JSON', { status: raw.status, method, path, requestId: raw.requestId, retryable: false });
    }
  }

  #error(raw: Raw, call: Call, retryable: boolean): ApiError {
    let body: unknown = null;
    try {
      body = raw.text ? parseJson(raw.text) : null;
    } catch {
      /* plain text */
    }
    const { message, fieldErrors } = errorDetails(body, raw.text);
    return new ApiError(null, {
      status: raw.status,
      method: call.method,
      path: call.path,
      requestId: raw.requestId,
      serviceMessage: message,
      fieldErrors,
      retryable,
    });
  }

  // ---- reads ----

  paginate<T = any>(path: string, opts: RequestOptions = {}): AsyncIterable<Page<T>> {
    return this.#pages<T>(path, opts);
  }

  async *#pages<T>(path: string, opts: RequestOptions, sent?: { n: number }): AsyncGenerator<Page<T>> {
    const key = opts.key ?? keyFromPath(path);
    const rank = priorityRank[opts.priority ?? 'interactive'];
    const { limit: askedLimit, page: askedPage, ...query } = opts.query ?? {};
    let limit = Math.max(1, Math.min(PAGE_SIZE, Number(askedLimit) || PAGE_SIZE));
    // Position by offset, so the page size can shrink mid-read: page = offset / limit, less what was seen.
    const fullLimit = limit;
    let offset = (Math.max(1, Number(askedPage) || 1) - 1) * limit;
    let successes = 0;
    for (;;) {
      const page = Math.floor(offset / limit) + 1;
      const skip = offset - (page - 1) * limit;
      let raw: Raw;
      try {
        raw = await this.#execute({ method: 'GET', path, query: { ...query, limit, page }, rank, list: limit > 1, sent });
      } catch (err) {
        if (err instanceof ApiError && err.status === 503 && limit > 1) {
          const smaller = Math.ceil(limit / 2);
          this.#deps.log.warn(
            { connection: this.connection.name, path, limit, next: smaller, requestId: err.requestId },
            'service overloaded (503); halving the page size',
          );
          limit = smaller;
          successes = 0;
          continue;
        }
        throw err;
      }
      const { records, sideloads } = splitBody(this.#parse(raw, 'GET', path), key);
      const pagination = parsePagination(raw.headers.get('x-pagination'));
      const fresh = records.slice(skip);
      yield { records: fresh as T[], sideloads, pagination, requestId: raw.requestId };
      offset += fresh.length;
      // After two good pages in a row, try twice the size again (up to the asked size): an overload passes.
      if (limit < fullLimit && ++successes >= 2) {
        limit = Math.min(fullLimit, limit * 2);
        successes = 0;
      }
      if (records.length === 0 || pagination?.last_page || pagination?.out_of_bounds) return;
      if (pagination && Number.isFinite(pagination.total_records) && offset >= pagination.total_records) return;
      if (!pagination && records.length < limit) return;
    }
  }

  async getByIds<T = any>(
    path: string,
    ids: number[],
    opts: RequestOptions = {},
  ): Promise<{ records: T[]; sideloads: Record<string, any[]>; requests: number }> {
    const unique = [...new Set(ids)];
    const by = opts.by ?? 'ids';
    const { [by]: _ignored, limit: _limit, page: _page, ...query } = opts.query ?? {};
    const urlOf = (chunk: number[]) => buildUrl(this.connection.base_url, path, { ...query, [by]: chunk, limit: PAGE_SIZE, page: 1 });
    const chunks = splitIds(urlOf, unique, this.#deps.config.API_MAX_URI_LENGTH);
    const sent = { n: 0 };
    const results = await Promise.all(
      chunks.map(async (chunk) => {
        const records: T[] = [];
        const sideloads: Record<string, any[]> = {};
        for await (const page of this.#pages<T>(path, { ...opts, query: { ...query, [by]: chunk } }, sent)) {
          records.push(...page.records);
          mergeSideloads(sideloads, page.sideloads);
        }
        return { records, sideloads };
      }),
    );
    const records: T[] = [];
    const sideloads: Record<string, any[]> = {};
    for (const r of results) {
      records.push(...r.records);
      mergeSideloads(sideloads, r.sideloads);
    }
    return { records, sideloads, requests: sent.n };
  }

  // ---- writes (POST/PUT carry an idempotency key; outbound priority unless told) ----

  async #write(
    method: 'POST' | 'PUT' | 'DELETE',
    path: string,
    body: unknown,
    opts: WriteOptions = {},
    priority: Priority = 'outbound',
  ): Promise<any> {
    return (await this.request(method, path, { body, idempotencyKey: opts.idempotencyKey, priority: opts.priority ?? priority })).body;
  }

  async createOrder(order: object, opts: WriteOptions = {}): Promise<any> {
    const lines = (order as { order_line_items?: unknown[] }).order_line_items;
    const key = opts.idempotencyKey ?? randomUUID();
    if (!Array.isArray(lines) || lines.length <= ORDER_LINES_PER_REQUEST) {
      return unwrap(await this.#write('POST', '/orders', { order }, { ...opts, idempotencyKey: key }), 'order');
    }
    // Large orders may time out in one request: create with the first lines, add the rest by PUT. Each part
    // has its own key derived from the operation's, so a retried operation repeats none of them.
    const first = { ...order, order_line_items: lines.slice(0, ORDER_LINES_PER_REQUEST) };
    let created = unwrap(await this.#write('POST', '/orders', { order: first }, { ...opts, idempotencyKey: key }), 'order');
    const id = created?.id;
    if (typeof id !== 'number')
      throw new ApiError('order creation answered without an order id', { status: null, method: 'POST', path: '/orders' });
    let last: any = null;
    for (let i = ORDER_LINES_PER_REQUEST, part = 1; i < lines.length; i += ORDER_LINES_PER_REQUEST, part++) {
      const batch = lines.slice(i, i + ORDER_LINES_PER_REQUEST);
      last = await this.#write(
        'PUT',
        `/orders/${id}`,
        { order: { order_line_items: batch } },
        { ...opts, idempotencyKey: `${key}:lines-${part}` },
      );
    }
    const updated = unwrap(last, 'order');
    if (updated && typeof updated === 'object' && updated.id === id) return updated;
    created = unwrap(await this.get(`/orders/${id}`, { priority: opts.priority ?? 'outbound' }), 'order');
    return created;
  }

  async updateOrder(id: number, order: object, opts: WriteOptions = {}): Promise<void> {
    await this.#write('PUT', `/orders/${id}`, { order }, opts);
  }

  async orderAction(id: number, action: OrderAction, body: object = {}, opts: WriteOptions = {}): Promise<any> {
    const key = opts.idempotencyKey ?? randomUUID();
    try {
      return await this.#write('POST', `/orders/${id}/actions/${action}`, body, { ...opts, idempotencyKey: key });
    } catch (err) {
      // One published guide spells the path `fulfill`.
      if (action === 'fulfil' && err instanceof ApiError && err.status === 404) {
        return this.#write('POST', `/orders/${id}/actions/fulfill`, body, { ...opts, idempotencyKey: key });
      }
      throw err;
    }
  }

  async createFulfillment(f: object, opts?: WriteOptions): Promise<any> {
    return unwrap(await this.#write('POST', '/fulfillments', { fulfillment: f }, opts), 'fulfillment');
  }

  async updateFulfillment(id: number, f: object, opts?: WriteOptions): Promise<any> {
    return unwrap(await this.#write('PUT', `/fulfillments/${id}`, { fulfillment: f }, opts), 'fulfillment');
  }

  async createFulfillmentReturn(r: object, opts?: WriteOptions): Promise<any> {
    return unwrap(await this.#write('POST', '/fulfillment_returns', { fulfillment_return: r }, opts), 'fulfillment_return');
  }

  async receivePurchaseOrder(id: number, opts?: WriteOptions): Promise<any> {
    return unwrap(await this.#write('POST', `/purchase_orders/${id}/actions/receive`, {}, opts), 'procurement');
  }

  async createStockAdjustment(a: object, opts?: WriteOptions): Promise<any> {
    return unwrap(await this.#write('POST', '/stock_adjustments', { stock_adjustment: a }, opts), 'stock_adjustment');
  }

  async listWebhooks(): Promise<any[]> {
    const all: any[] = [];
    for await (const page of this.paginate('/webhooks')) all.push(...page.records);
    return all;
  }

  async createWebhook(w: { address: string; event: string }): Promise<any> {
    return unwrap(await this.#write('POST', '/webhooks', { webhook: w }, {}, 'interactive'), 'webhook');
  }

  async deleteWebhook(id: number): Promise<void> {
    try {
      await this.request('DELETE', `/webhooks/${id}`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return; // already gone: the goal is reached
      throw err;
    }
  }

  async createCompany(c: object, opts?: WriteOptions): Promise<any> {
    return unwrap(await this.#write('POST', '/companies', { company: c }, opts), 'company');
  }

  async createAddress(a: object, opts?: WriteOptions): Promise<any> {
    return unwrap(await this.#write('POST', '/addresses', { address: a }, opts), 'address');
  }

  async createCurrency(c: object, opts?: WriteOptions): Promise<any> {
    return unwrap(await this.#write('POST', '/currencies', { currency: c }, opts), 'currency');
  }
}
