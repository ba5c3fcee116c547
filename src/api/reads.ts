// Reads: list reads page by page (pagination, a 503 halving the page), reads by ids split to fit a URI, and the
// records split from their sideloads. Built on the transport (transport.ts).
import { ApiError } from './errors.ts';
import { buildUrl, isObject, keyFromPath, parsePagination } from './http.ts';
import type { Raw, Transport } from './transport.ts';
import { priorityRank, type ByIds, type Page, type RequestOptions } from './types.ts';

export const PAGE_SIZE = 250;

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
export function splitBody(body: unknown, key: string): { records: unknown[]; sideloads: Record<string, unknown[]> } {
  const sideloads: Record<string, unknown[]> = {};
  if (!isObject(body)) return { records: [], sideloads };
  let records: unknown[] = [];
  for (const [k, v] of Object.entries(body)) {
    if (k === key) records = Array.isArray(v) ? v : v && typeof v === 'object' ? [v] : [];
    else if (Array.isArray(v)) sideloads[k] = v;
  }
  return { records, sideloads };
}

/** A sideloaded record's id (undefined when it has none, or is not a record). */
const idOf = (r: unknown): unknown => (isObject(r) ? r.id : undefined);

function mergeSideloads(into: Record<string, unknown[]>, more: Record<string, unknown[]>): void {
  for (const [k, v] of Object.entries(more)) {
    const have = (into[k] ??= []);
    const seen = new Set(have.map(idOf).filter((id) => id !== undefined));
    for (const r of v) {
      const id = idOf(r);
      if (id === undefined || !seen.has(id)) {
        have.push(r);
        if (id !== undefined) seen.add(id);
      }
    }
  }
}

/**
 * Pages of a list read, limit=250 driven by X-Pagination. A 503 halves the page size (the position is kept as
 * an offset, so no record is skipped or repeated); two good pages in a row double it again. `sent` counts the
 * requests (getByIds reports them).
 */
export async function* pages<T = unknown>(
  t: Transport,
  path: string,
  opts: RequestOptions = {},
  sent?: { n: number },
): AsyncGenerator<Page<T>> {
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
      raw = await t.send({ method: 'GET', path, query: { ...query, limit, page }, rank, list: limit > 1, sent });
    } catch (err) {
      if (err instanceof ApiError && err.status === 503 && limit > 1) {
        const smaller = Math.ceil(limit / 2);
        t.deps.log.warn(
          { connection: t.connection.name, path, limit, next: smaller, requestId: err.requestId },
          'service overloaded (503); halving the page size',
        );
        limit = smaller;
        successes = 0;
        continue;
      }
      throw err;
    }
    const { records, sideloads } = splitBody(t.body(raw, 'GET', path), key);
    const pagination = parsePagination(raw.headers.get('x-pagination'));
    const fresh = records.slice(skip);
    yield { records: fresh as T[], sideloads, pagination, requestId: raw.requestId, asOf: raw.asOf, readBy: raw.readBy };
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

/** The earliest of several reads' asOf; null when any is unknown (or there were none). */
export function earliest(asOfs: (number | null)[]): number | null {
  if (!asOfs.length || asOfs.some((a) => a === null)) return null;
  return Math.min(...(asOfs as number[]));
}

/** The latest of several reads' readBy; null when any is unknown (or there were none). */
export function latest(readBys: (number | null | undefined)[]): number | null {
  if (!readBys.length || readBys.some((a) => a === null || a === undefined)) return null;
  return Math.max(...(readBys as number[]));
}

/** ids split into <=250 per request and URIs under API_MAX_URI_LENGTH, the chunks read in parallel. */
export async function getByIds<T = unknown>(t: Transport, path: string, ids: number[], opts: RequestOptions = {}): Promise<ByIds<T>> {
  const unique = [...new Set(ids)];
  const by = opts.by ?? 'ids';
  const { [by]: _ignored, limit: _limit, page: _page, ...query } = opts.query ?? {};
  const urlOf = (chunk: number[]) => buildUrl(t.connection.base_url, path, { ...query, [by]: chunk, limit: PAGE_SIZE, page: 1 });
  const chunks = splitIds(urlOf, unique, t.deps.config.API_MAX_URI_LENGTH);
  const sent = { n: 0 };
  const results = await Promise.all(
    chunks.map(async (chunk) => {
      const records: T[] = [];
      const sideloads: Record<string, unknown[]> = {};
      const asOfs: (number | null)[] = [];
      const readBys: (number | null | undefined)[] = [];
      for await (const page of pages<T>(t, path, { ...opts, query: { ...query, [by]: chunk } }, sent)) {
        records.push(...page.records);
        mergeSideloads(sideloads, page.sideloads);
        asOfs.push(page.asOf);
        readBys.push(page.readBy);
      }
      return { records, sideloads, asOfs, readBys };
    }),
  );
  const records: T[] = [];
  const sideloads: Record<string, unknown[]> = {};
  for (const r of results) {
    records.push(...r.records);
    mergeSideloads(sideloads, r.sideloads);
  }
  return {
    records,
    sideloads,
    requests: sent.n,
    asOf: earliest(results.flatMap((r) => r.asOfs)),
    readBy: latest(results.flatMap((r) => r.readBys)),
  };
}
