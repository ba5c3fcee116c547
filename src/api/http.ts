// Plain helpers of the wire format: URIs and query strings, tolerant JSON, X-Pagination, error bodies.
import { ApiError } from './errors.ts';
import type { Method, Pagination, QueryValue } from './types.ts';

/**
 * Query string in the spec's forms: integer lists comma-separated (`ids=1,2,3`: shortest, so more ids fit a
 * URI), other lists repeated as `name[]=v`. Commas stay literal (they are allowed in a query).
 */
export function queryString(query: Record<string, QueryValue> | undefined): string {
  if (!query) return '';
  const parts: string[] = [];
  const enc = (v: string | number | boolean) => encodeURIComponent(String(v)).replace(/%2C/gi, ',');
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null) continue;
    if (Array.isArray(v)) {
      if (v.length === 0) continue;
      if (v.every((x) => typeof x === 'number' && Number.isInteger(x))) parts.push(`${encodeURIComponent(k)}=${v.join(',')}`);
      else for (const x of v) parts.push(`${encodeURIComponent(k)}[]=${encodeURIComponent(String(x))}`);
    } else parts.push(`${encodeURIComponent(k)}=${enc(v)}`);
  }
  return parts.join('&');
}

/** Absolute URL of `path` (with or without leading slash; an absolute URL under baseUrl is accepted too). */
export function buildUrl(baseUrl: string, path: string, query?: Record<string, QueryValue>): string {
  const base = baseUrl.replace(/\/+$/, '');
  let p = path.startsWith(base) ? path.slice(base.length) : path;
  if (!p.startsWith('/')) p = `/${p}`;
  const qs = queryString(query);
  if (!qs) return base + p;
  return base + p + (p.includes('?') ? '&' : '?') + qs;
}

/** The key a collection or record comes under, from its path: /variants -> variants, /variants/composition -> composition. */
export function keyFromPath(path: string): string {
  const clean = path
    .split('?')[0]!
    .replace(/\.json$/, '')
    .replace(/\/+$/, '');
  const segments = clean.split('/').filter((s) => s && !/^\d+$/.test(s) && !s.startsWith('http'));
  return segments[segments.length - 1] ?? '';
}

// Decimal fields the spec carries as strings; should one arrive as a JSON number it is kept as its exact text.
const decimalFields = new Set([
  'quantity',
  'stock_on_hand',
  'committed',
  'incoming',
  'reorder_point',
  'rate',
  'exchange_rate',
  'max_online',
  'default_discount_rate',
  'default_tax_rate',
  'price',
  'initial_cost_price',
  'precision',
  'moving_average_cost',
  'last_cost_price',
]);

/** A parsed JSON object (or array): the fields of an answer whose shape is not guaranteed, to be read with care. */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/**
 * JSON.parse that never turns a decimal into a float: a non-integer or unsafe number keeps its source text,
 * and so does any number under a decimal field name.
 */
export function parseJson(text: string): unknown {
  return JSON.parse(text, function (this: unknown, key: string, value: unknown, context?: { source?: string }) {
    if (typeof value !== 'number' || !context?.source) return value;
    if (decimalFields.has(key) || !Number.isSafeInteger(value) || /[.eE]/.test(context.source)) return context.source;
    return value;
  } as (this: unknown, key: string, value: unknown) => unknown);
}

/** X-Pagination, or null when absent or not the JSON object the spec describes. */
export function parsePagination(header: string | null): Pagination | null {
  if (!header) return null;
  try {
    const p = JSON.parse(header);
    if (!p || typeof p !== 'object') return null;
    const n = (v: unknown) =>
      typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : NaN;
    const b = (v: unknown) => v === true || v === 'true';
    return {
      total_records: n(p.total_records),
      total_pages: n(p.total_pages),
      first_page: b(p.first_page),
      last_page: b(p.last_page),
      out_of_bounds: b(p.out_of_bounds),
      offset: n(p.offset),
    };
  } catch {
    return null;
  }
}

/** The service's message and per-field errors from an error body (shape not in the spec: be liberal). */
export function errorDetails(body: unknown, text: string): { message: string | null; fieldErrors: Record<string, string[]> | null } {
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    const msg = [b.error, b.message, b.error_description, b.errors_message].find((v) => typeof v === 'string') as string | undefined;
    let fieldErrors: Record<string, string[]> | null = null;
    if (b.errors && typeof b.errors === 'object' && !Array.isArray(b.errors)) {
      fieldErrors = {};
      for (const [f, m] of Object.entries(b.errors as Record<string, unknown>)) {
        fieldErrors[f] = Array.isArray(m) ? m.map(String) : [String(m)];
      }
    }
    const listed = Array.isArray(b.errors) ? (b.errors as unknown[]).map(String).join('; ') : null;
    return { message: msg ?? listed ?? null, fieldErrors };
  }
  const t = text.trim();
  return { message: t ? t.slice(0, 500) : null, fieldErrors: null };
}

/**
 * One request sent outside the rate budget (the account read at connect time, the token endpoint): the
 * answer with its text and tolerant JSON (null when empty or not JSON). No answer is a retryable ApiError
 * whose message starts with `failed`; judging the status is the caller's. A redirect is not followed: these
 * requests carry the client secret or a token, which must go to the service's own address only (a 307 would
 * resend the body, secret included, wherever it points).
 */
export async function sendUnbudgeted(
  url: string,
  req: { method: Method; path: string; headers: Record<string, string>; body?: unknown; timeoutMs: number; failed: string },
): Promise<{ res: Response; text: string; body: unknown }> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: req.method,
      headers: req.headers,
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
      signal: AbortSignal.timeout(req.timeoutMs),
      redirect: 'manual',
    });
  } catch (err) {
    throw new ApiError(`${req.failed}: ${(err as Error).message}`, {
      status: null,
      method: req.method,
      path: req.path,
      retryable: true,
      cause: err,
    });
  }
  if (res.status >= 300 && res.status < 400) {
    await res.body?.cancel();
    throw new ApiError(
      `the service answered ${res.status} with a redirect to another address; not followed (the request carries a secret)`,
      {
        status: res.status,
        method: req.method,
        path: req.path,
      },
    );
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? parseJson(text) : null;
  } catch {
    /* the caller reports what is missing */
  }
  return { res, text, body };
}
