// Stock count: absolute counts per SKU and location. The variants are read fresh from the service (not the
// mirror, which may lag), each count minus the stock on hand becomes a line of one stock adjustment per
// location, and zero differences are left out. The differences are computed once and saved as the plan: a
// retry after a lost answer resends the same adjustments with the same keys instead of recounting against
// stock that the first attempt already moved. A location with more changed lines than one request may carry
// (ADJUSTMENT_LINES_PER_REQUEST) gets one adjustment per such slice.
import { Decimal } from 'decimal.js';
import type { StockCountInput } from './input.ts';
import { outbound, unknownSkus, variantIdsBySku, type Done, type OpContext } from './context.ts';

/** The spec gives no limit; the sandbox takes 250 lines a request, like the page size. */
export const ADJUSTMENT_LINES_PER_REQUEST = 250;

interface Change { sku: string; variant_id: number; before: string; after: string; change: string }
interface Adjustment { location_id: number; part: number; lines: Change[] }
interface Plan { adjustments: Adjustment[]; unchanged: { sku: string; location_id: number; quantity: string }[]; skipped: { sku: string; reason: string }[] }

interface VariantStock { id: number; sku?: string; manage_stock?: boolean; composite?: boolean; locations?: { location_id: number; stock_on_hand?: string | null }[] }

export async function stockCount(ctx: OpContext): Promise<Done> {
  const input = ctx.op.input as StockCountInput;
  const plan = await ctx.plan(() => computePlan(ctx, input));
  const done = (ctx.progress.adjustment_ids ?? {}) as Record<string, number>;
  const slot = (a: Adjustment) => (a.part ? `${a.location_id}.${a.part}` : String(a.location_id));
  for (const adj of plan.adjustments) {
    if (done[slot(adj)] !== undefined) continue;
    const created = await ctx.client.createStockAdjustment({
      stock_location_id: adj.location_id,
      reason: 'stock count',
      ...(input.notes ? { notes: input.notes } : {}),
      stock_adjustment_line_items: adj.lines.map((l) => ({ variant_id: l.variant_id, quantity: l.change })),
    }, { idempotencyKey: ctx.key(`location-${slot(adj)}`), ...outbound });
    done[slot(adj)] = Number(created?.id);
    await ctx.save({ adjustment_ids: done });
  }
  return {
    result: {
      adjustments: plan.adjustments.map((a) => ({ location_id: a.location_id, stock_adjustment_id: done[slot(a)] ?? null, lines: a.lines })),
      unchanged: plan.unchanged,
      skipped: plan.skipped,
      changed_lines: plan.adjustments.reduce((n, a) => n + a.lines.length, 0),
    },
  };
}

async function computePlan(ctx: OpContext, input: StockCountInput): Promise<Plan> {
  const skus = input.counts.map((c) => c.sku);
  const ids = await variantIdsBySku(ctx.db, ctx.op.connection_id, skus);
  const unknown = unknownSkus(skus, ids);
  if (unknown) throw unknown;
  const { records } = await ctx.client.getByIds<VariantStock>('/variants', [...new Set(ids.values())], outbound);
  const byId = new Map(records.map((v) => [Number(v.id), v]));
  const byLocation = new Map<number, Change[]>();
  const plan: Plan = { adjustments: [], unchanged: [], skipped: [] };
  for (const count of input.counts) {
    const variantId = ids.get(count.sku)!;
    const variant = byId.get(variantId);
    if (!variant) { plan.skipped.push({ sku: count.sku, reason: `variant ${variantId} not found on the service (archived or deleted?)` }); continue; }
    if (variant.manage_stock === false) { plan.skipped.push({ sku: count.sku, reason: 'stock is not tracked for this variant (manage_stock false)' }); continue; }
    if (variant.composite) { plan.skipped.push({ sku: count.sku, reason: 'a bundle holds no stock of its own: count its components' }); continue; }
    const level = variant.locations?.find((l) => Number(l.location_id) === count.location_id);
    const before = new Decimal(level?.stock_on_hand ?? '0');
    const diff = new Decimal(count.quantity).minus(before);
    if (diff.isZero()) { plan.unchanged.push({ sku: count.sku, location_id: count.location_id, quantity: before.toString() }); continue; }
    const list = byLocation.get(count.location_id) ?? [];
    list.push({ sku: count.sku, variant_id: variantId, before: before.toString(), after: new Decimal(count.quantity).toString(), change: diff.toString() });
    byLocation.set(count.location_id, list);
  }
  for (const [location_id, lines] of [...byLocation].sort(([a], [b]) => a - b)) {
    for (let part = 0; part * ADJUSTMENT_LINES_PER_REQUEST < lines.length; part++) {
      plan.adjustments.push({ location_id, part, lines: lines.slice(part * ADJUSTMENT_LINES_PER_REQUEST, (part + 1) * ADJUSTMENT_LINES_PER_REQUEST) });
    }
  }
  return plan;
}
