// The variants index of the console: every mirrored variant of a connection with its quantity in one channel
// (chosen; by default the connection's `default`, else its oldest), available stock per location and its last change
// in that channel, searchable, filterable and sortable. Quantities stay decimal strings (PostgreSQL numeric);
// comparisons happen in SQL.
import { channelsOf, type Channel } from '../db/channels.ts';
import type { Db } from '../db/index.ts';
import { type VariantFilterKey, type VariantIndexRow, type VariantRowsQuery, variantRows } from '../db/mirror-reads.ts';

export const variantFilters = {
  low: 'low stock',
  out: 'out of stock',
  untracked: 'untracked',
  backorderable: 'backorderable',
  bundles: 'bundles',
  'changed-1h': 'changed in the last hour',
  drift: 'corrected by the latest sweep',
} as const satisfies Record<VariantFilterKey, string>;
export type VariantFilter = keyof typeof variantFilters;
export const variantSorts = { sku: 'SKU', quantity: 'channel quantity', changed: 'last change' } as const satisfies Record<
  NonNullable<VariantRowsQuery['sort']>,
  string
>;
export type VariantSort = keyof typeof variantSorts;

export interface VariantQuery extends VariantRowsQuery {
  filter?: VariantFilter;
  sort?: VariantSort;
  page?: number;
  pageSize?: number;
}

/** An index row as the pages show it: the available list never null, the last change named in camel case. */
export type VariantListRow = Omit<VariantIndexRow, 'available' | 'last_at' | 'last_cause' | 'last_before' | 'channels'> & {
  /** Available (on hand - committed) per location, in location order. */
  available: { location: string; quantity: string }[];
  /** The last change of the quantity in the index's channel. */
  lastChangeAt: Date | null;
  lastChangeCause: string | null;
  lastChangeBefore: string | null;
  /** The quantity in every channel (the row's `quantity` is the index's channel's). */
  channels: NonNullable<VariantIndexRow['channels']>;
};

/**
 * The channels of a connection and the one the index shows: `name` when given (undefined when the connection has
 * no channel of that name), else `default`, else the oldest; null when the connection has no channel yet.
 */
export async function indexChannel(
  db: Db,
  connectionId: number,
  name: string | undefined,
): Promise<{ channels: Channel[]; channel: Channel | null | undefined }> {
  const channels = await channelsOf(db, connectionId);
  if (name) return { channels, channel: channels.find((c) => c.name === name) };
  return { channels, channel: channels.find((c) => c.name === 'default') ?? channels[0] ?? null };
}

export async function listVariants(db: Db, q: VariantQuery): Promise<{ rows: VariantListRow[]; total: number }> {
  const pageSize = Math.min(Math.max(q.pageSize ?? 50, 1), 500);
  const page = Math.max(q.page ?? 1, 1);
  const { rows, total } = await variantRows(db, q, pageSize, (page - 1) * pageSize);
  return {
    total,
    rows: rows.map((r) => ({
      id: r.id,
      sku: r.sku,
      name: r.name,
      status: r.status,
      composite: r.composite,
      quantity: r.quantity,
      tracked: r.tracked,
      backorderable: r.backorderable,
      available: r.available ?? [],
      lastChangeAt: r.last_at,
      lastChangeCause: r.last_cause,
      lastChangeBefore: r.last_before,
      channels: r.channels ?? [],
    })),
  };
}
