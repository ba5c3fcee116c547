// What a recomputation of channel quantities (src/stock/recompute.ts) reads once it has locked them, in one
// statement: the reads of the mirror, the holds and the channels' overrides, read together (src/db/together.ts).
import { sql } from 'kysely';
import { overridesQuery, type ChannelOverride } from './channels.ts';
import { heldOf, heldQuery } from './holds.ts';
import type { Executor } from './index.ts';
import { compositionsQuery, stockLevelQuery, variantStockQuery, type StockLevelRow, type VariantStockRow } from './mirror-reads.ts';
import { readTogether } from './together.ts';

/**
 * What a recomputation of `targets` (variants and their bundles) reads once their quantities are locked, in one
 * statement (src/db/together.ts): the bundles' makeup; the variants, their stock per location and their holds,
 * of the targets and their components; the channels' overrides of the targets' SKUs.
 */
export async function readStock(db: Executor, connectionId: number, targets: number[], channelIds: number[]) {
  const all = sql`SELECT unnest(${targets}::bigint[]) UNION SELECT component_id FROM compositions
    WHERE connection_id = ${connectionId} AND bundle_id = ANY(${targets}::bigint[])`;
  const skus = sql`SELECT sku FROM variants WHERE connection_id = ${connectionId} AND id = ANY(${targets}::bigint[]) AND sku IS NOT NULL`;
  const [comps, variantRows, levels, holdRows, overrideRows] = await readTogether(db, [
    compositionsQuery(connectionId, targets),
    variantStockQuery(connectionId, all),
    stockLevelQuery(connectionId, all),
    heldQuery(connectionId, all),
    overridesQuery(channelIds, skus),
  ]);
  return {
    comps: comps as { bundle_id: number; component_id: number; quantity: string }[],
    variants: variantRows as VariantStockRow[],
    levels: levels as StockLevelRow[],
    held: heldOf(holdRows as Parameters<typeof heldOf>[0]),
    overrides: (overrideRows as ChannelOverride[]).map((o) => ({ ...o, updated_at: new Date(o.updated_at) })),
  };
}
