// The reads of a resource's live records (every state but archived), and what they need of the API client (batched
// reads by id, paginated lists): the sync engine's drains and sweeps, and a channel order's import looking for an
// order sent before. Tests may hand in any object of this shape; production passes the ApiClient.
import type { ResourceSpec } from '../catalog/index.ts';
import type { Fields, ServiceRecord } from '../catalog/records.ts';
import { earliest, latest } from './reads.ts';
import type { ApiClient, ByIds, Page, RequestOptions } from './types.ts';

export type Reader = Pick<ApiClient, 'getByIds' | 'paginate' | 'traits'> & { readonly connection: { id: number; name: string } };

type Query = NonNullable<RequestOptions['query']>;

// A service that refuses several values of `status` in one read gets one read per state from then on
// (client.traits, shared by the runtime's clients of the connection).
const refused = (err: unknown) => [400, 422].includes((err as { status?: number }).status ?? 0);

/** Records of the given ids in any live state (not archived): status[]=every state, or one read per state. */
export async function readLive(
  client: Reader,
  spec: ResourceSpec,
  ids: number[],
  opts: RequestOptions & { query?: Query },
): Promise<ByIds<ServiceRecord>> {
  const states = spec.statuses;
  if (!states) return client.getByIds<ServiceRecord>(spec.path, ids, opts);
  if (!client.traits.singleStatusOnly) {
    try {
      return await client.getByIds<ServiceRecord>(spec.path, ids, { ...opts, query: { ...opts.query, status: states } });
    } catch (err) {
      if (!refused(err)) throw err;
      client.traits.singleStatusOnly = true;
    }
  }
  const out: ByIds<ServiceRecord> = { records: [], sideloads: {}, requests: 0, asOf: null };
  const asOfs: (number | null)[] = [];
  const readBys: (number | null | undefined)[] = [];
  for (const status of states) {
    const r = await client.getByIds<ServiceRecord>(spec.path, ids, { ...opts, query: { ...opts.query, status } });
    out.records.push(...r.records);
    for (const [k, v] of Object.entries(r.sideloads)) out.sideloads[k] = [...(out.sideloads[k] ?? []), ...v];
    out.requests += r.requests;
    asOfs.push(r.asOf);
    readBys.push(r.readBy);
  }
  return { ...out, asOf: earliest(asOfs), readBy: latest(readBys) };
}

/** Pages of a resource's live records (every state), with the same fallback as readLive. */
export async function* listLive(
  client: Reader,
  spec: ResourceSpec,
  opts: RequestOptions & { query?: Query },
): AsyncIterable<Page<ServiceRecord>> {
  const states = spec.statuses;
  if (!states) {
    yield* client.paginate<ServiceRecord>(spec.path, opts);
    return;
  }
  if (!client.traits.singleStatusOnly) {
    let first = true;
    try {
      for await (const page of client.paginate<ServiceRecord>(spec.path, { ...opts, query: { ...opts.query, status: states } })) {
        first = false;
        yield page;
      }
      return;
    } catch (err) {
      if (!first || !refused(err)) throw err;
      client.traits.singleStatusOnly = true;
    }
  }
  for (const status of states) yield* client.paginate<ServiceRecord>(spec.path, { ...opts, query: { ...opts.query, status } });
}

/**
 * Makes sure `sideloads` holds the line items of `records` (when the resource has lines). A list answer that
 * carries no sideload array (the documented service ignores include= on order and purchase-order lists,
 * real-service-notes §1) is completed from the lines' own collection by parent id
 * (`/order_line_items?order_id=1,2,3`), 250 parents and 250 lines a request. Returns the requests spent.
 */
export async function readLines(
  client: Reader,
  spec: ResourceSpec,
  records: readonly Fields[],
  sideloads: Record<string, unknown[]>,
  opts: RequestOptions,
): Promise<number> {
  const child = spec.include;
  if (!child || Array.isArray(sideloads[child.key])) return 0;
  const parents = [...new Set(records.map((r) => Number(r?.id)).filter((id) => Number.isSafeInteger(id) && id > 0))];
  if (!parents.length) {
    sideloads[child.key] = [];
    return 0;
  }
  const read = await client.getByIds(`/${child.key}`, parents, { ...opts, key: child.key, by: child.parentColumn, query: {} });
  sideloads[child.key] = read.records;
  return read.requests;
}
