// The transport of one connection's client: every request reserves a slot of the shared budget (gate.ts,
// budget.ts), carries the current access token (tokens.ts), and is sent again, or not, as the pure retry
// decision says (retry.ts). Reads (reads.ts) and writes (writes.ts) are built on send() and request().
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../config.ts';
import type { Db } from '../db/index.ts';
import type { Connection } from '../db/schema.ts';
import type { Logger } from '../log.ts';
import { metrics } from '../metrics.ts';
import { rateHeaders } from './budget.ts';
import { ApiError } from './errors.ts';
import type { BudgetGate } from './gate.ts';
import { buildUrl, errorDetails, parseJson } from './http.ts';
import { decideRetry, initialRetryState } from './retry.ts';
import type { ClientState } from './client-state.ts';
import { setStatus, Tokens } from './tokens.ts';
import { inSpan, SpanKind, tracing, type Span } from '../telemetry/spans.ts';
import { priorityRank, type ApiResponse, type Method, type QueryValue, type RequestOptions } from './types.ts';

export interface ClientDeps {
  db: Db;
  config: Config;
  log: Logger;
  /** What the runtime's clients share (one gate per connection, the token key): see client-state.ts. */
  clients: ClientState;
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

/** One logical request: the same call (and idempotency key) is sent again on each retry. */
export interface Call {
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

/** An answer as it came: the body still text. */
export interface Raw {
  status: number;
  text: string;
  headers: Headers;
  requestId: string | null;
  /**
   * The service's clock (epoch ms) at or before the moment it received the request: its Date header less our
   * whole round trip. Date is stamped somewhere between arrival and answer, in whole seconds rounded down, so
   * this never lies after the service read what it answered. Comparable with webhook timestamps (same clock),
   * not with ours. null without a readable Date.
   */
  asOf: number | null;
  /**
   * The service's clock no earlier than the moment it read what it answered: its Date header plus the second the
   * header rounds away. With asOf, the interval the read happened in; null without a readable Date.
   */
  readBy: number | null;
}

/** The transport of one connection: send() carries out the retry loop, request() is one call with a parsed body. */
export class Transport {
  readonly connection: Connection;
  readonly deps: ClientDeps;
  #tokens: Tokens;
  #gate: BudgetGate;
  #backoffBase: number;
  #backoffMax: number;
  #onRequest: ((r: SentRequest) => void) | undefined;

  constructor(deps: ClientDeps, connection: Connection, opts: ClientOptions = {}) {
    this.deps = deps;
    this.connection = connection;
    this.#tokens = new Tokens({ ...deps, key: deps.clients.key(deps.config) }, connection);
    this.#gate = deps.clients.gate(deps, connection);
    this.#backoffBase = opts.backoffBaseMs ?? 500;
    this.#backoffMax = opts.backoffMaxMs ?? 30_000;
    this.#onRequest = opts.onRequest;
  }

  async request<T = unknown>(method: Method, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    const raw = await this.send({
      method,
      path,
      query: opts.query,
      body: opts.body,
      rank: priorityRank[opts.priority ?? 'interactive'],
      idempotencyKey: method === 'POST' || method === 'PUT' ? (opts.idempotencyKey ?? randomUUID()) : undefined,
    });
    return { status: raw.status, body: this.body(raw, method, path) as T, headers: raw.headers, requestId: raw.requestId };
  }

  /**
   * Sends a call until the retry decision (retry.ts) says done or fail; answers the raw response. Traced as one
   * client span (attempts and the rate budget's wait are its events), named by the path with ids as {id}.
   */
  async send(call: Call): Promise<Raw> {
    if (!tracing()) return this.#send(call);
    const attributes = {
      'http.request.method': call.method,
      'url.template': call.path.replace(/\/\d+(?=\/|$)/g, '/{id}'),
      'server.address': new URL(this.connection.base_url).hostname,
      'commerce.connection': this.connection.name,
    };
    return inSpan(`${call.method} ${attributes['url.template']}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      const raw = await this.#send(call, span);
      span.setAttribute('http.response.status_code', raw.status);
      if (raw.requestId) span.setAttribute('commerce.request_id', raw.requestId);
      return raw;
    });
  }

  async #send(call: Call, span?: Span): Promise<Raw> {
    const { config, log } = this.deps;
    const policy = { maxAttempts: config.API_MAX_ATTEMPTS, backoffBaseMs: this.#backoffBase, backoffMaxMs: this.#backoffMax };
    let state = initialRetryState;
    for (;;) {
      const { token, enc } = await this.#tokens.current();
      let raw: Raw;
      try {
        const asked = performance.now();
        raw = await this.#gate.run(call.rank, (lease) => {
          span?.addEvent('rate budget granted', { 'commerce.budget_wait_ms': Math.round(performance.now() - asked) });
          return this.#attempt(call, token, lease);
        });
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
            this.deps.db,
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
        this.deps.db,
        this.connection,
        'unauthorized',
        `the service refused the privileged access token (401) [X-Request-ID ${raw.requestId ?? '-'}]; add a new token with commerce-sync connect --token`,
      );
      this.deps.log.error(
        { connection: this.connection.name, requestId: raw.requestId },
        'access token refused (401): connection marked unauthorized',
      );
    } else {
      await setStatus(
        this.deps.db,
        this.connection,
        'unauthorized',
        `the service refused a freshly refreshed access token (401) [X-Request-ID ${raw.requestId ?? '-'}]; run commerce-sync connect again`,
      );
    }
    return this.#error(raw, call, false);
  }

  /** One HTTP request under a budget lease; the lease goes back with the answer's rate headers. */
  async #attempt(call: Call, token: string, leaseId: number): Promise<Raw> {
    const { config, log } = this.deps;
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
      const date = Date.parse(res.headers.get('date') ?? '');
      const asOf = Number.isNaN(date) ? null : date - Math.ceil(performance.now() - started);
      return { status, text, headers: res.headers, requestId, asOf, readBy: Number.isNaN(date) ? null : date + 1000 };
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
        const r = await this.#gate.release(leaseId, status, resHeaders ? rateHeaders(resHeaders) : null);
        metrics.budgetRemaining.set({ connection: this.connection.name }, Math.max(0, r.available));
        if (r.accountingError) {
          metrics.apiAccountingErrors.inc({ connection: this.connection.name });
          // Another client of the same application spends the same quota (real-service-notes section 7): one race
          // lost for the last request of a window is expected, so a warning; more than that is the alert's business.
          log.warn(
            {
              connection: this.connection.name,
              method: call.method,
              path: call.path,
              requestId: resHeaders?.get('x-request-id'),
              reset: resHeaders?.get('x-rate-limit-reset'),
            },
            'rate limit exceeded (429): another client spent the quota, or our count was wrong; waiting for the reset',
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

  /** The parsed body of an answer: null for 204 or an empty body; an ApiError when it is not JSON. */
  body(raw: Raw, method: string, path: string): unknown {
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
}
