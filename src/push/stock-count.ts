// Stock count: absolute counts per SKU and location. The variants are read fresh from the service (not the
// mirror, which may lag), each count minus the stock on hand becomes a line of one stock adjustment per
// location, and zero differences are left out. The differences are computed once and saved as the plan: a
// retry after a lost answer resends the same adjustments with the same keys instead of recounting against
// stock that the first attempt already moved. A location with more changed lines than one request may carry
// (ADJUSTMENT_LINES_PER_REQUEST) gets one adjustment per such slice.
//
// The service takes an adjustment only with a documented `reason` (STOCK_ADJUSTMENT_REASON, or a custom
// STOCK_ADJUSTMENT_REASON_ID), and a line raising stock only with a `price`, which moves the moving average cost
// (real-service-notes §3): the variant's own moving_average_cost, else its last_cost_price, never a made-up one.
import { Decimal } from 'decimal.js';
import type { Config } from '../config.ts';
import type { StockCountInput } from './input.ts';
import { OperationFailed } from './errors.ts';
import { variantIdsBySku } from './skus.ts';
import { outbound, type Done, type OpContext } from './context.ts';

/** The spec gives no limit; the sandbox takes 250 lines a request, like the page size. */
export const ADJUSTMENT_LINES_PER_REQUEST = 250;

interface Change {
  sku: string;
  variant_id: number;
  before: string;
  after: string;
  change: string;
  price?: string;
}
interface Adjustment {
  location_id: number;
  part: number;
  lines: Change[];
}
interface Plan {
  adjustments: Adjustment[];
  unchanged: { sku: string; location_id: number; quantity: string }[];
  skipped: { sku: string; reason: string }[];
}

interface VariantStock {
  id: number;
  sku?: string;
  manage_stock?: boolean;
  composite?: boolean;
  moving_average_cost?: string | null;
  last_cost_price?: string | null;
  locations?: { location_id: number; stock_on_hand?: string | null }[];
}

/** The reason an adjustment carries: the custom reason id when set, else the documented reason code. */
export function adjustmentReason(
  config: Pick<Config, 'STOCK_ADJUSTMENT_REASON' | 'STOCK_ADJUSTMENT_REASON_ID'>,
): Record<string, string | number> {
  return config.STOCK_ADJUSTMENT_REASON_ID !== ''
    ? { stock_adjustment_reason_id: Number(config.STOCK_ADJUSTMENT_REASON_ID) }
    : { reason: config.STOCK_ADJUSTMENT_REASON };
}

/** The unit cost of a line raising stock: moving average cost, else last cost price; null when neither is a positive-or-zero decimal. */
export function unitCost(v: Pick<VariantStock, 'moving_average_cost' | 'last_cost_price'>): string | null {
  for (const c of [v.moving_average_cost, v.last_cost_price]) {
    if (c === null || c === undefined || String(c).trim() === '') continue;
    try {
      const d = new Decimal(String(c));
      if (d.isFinite() && !d.isNegative()) return d.toString();
    } catch {
      /* not a number: try the next */
    }
  }
  return null;
}

export async function stockCount(ctx: OpContext): Promise<Done> {
  const input = ctx.op.input as StockCountInput;
  const plan = await ctx.plan(() => computePlan(ctx, input));
  const done = (ctx.progress.adjustment_ids ?? {}) as Record<string, number>;
  const slot = (a: Adjustment) => (a.part ? `${a.location_id}.${a.part}` : String(a.location_id));
  for (const adj of plan.adjustments) {
    if (done[slot(adj)] !== undefined) continue;
    const created = await ctx.client.createStockAdjustment(
      {
        stock_location_id: adj.location_id,
        ...adjustmentReason(ctx.config),
        ...(input.notes ? { notes: input.notes } : {}),
        stock_adjustment_line_items: adj.lines.map((l) => ({
          variant_id: l.variant_id,
          quantity: l.change,
          ...(l.price ? { price: l.price } : {}),
        })),
      },
      { idempotencyKey: ctx.key(`location-${slot(adj)}`), ...outbound },
    );
    done[slot(adj)] = Number(created?.id);
    await ctx.save({ adjustment_ids: done });
  }
  return {
    result: {
      adjustments: plan.adjustments.map((a) => ({
        location_id: a.location_id,
        stock_adjustment_id: done[slot(a)] ?? null,
        lines: a.lines,
      })),
      unchanged: plan.unchanged,
      skipped: plan.skipped,
      changed_lines: plan.adjustments.reduce((n, a) => n + a.lines.length, 0),
    },
  };
}

async function computePlan(ctx: OpContext, input: StockCountInput): Promise<Plan> {
  const skus = input.counts.map((c) => c.sku);
  const ids = await variantIdsBySku(ctx.db, ctx.op.connection_id, skus);
  const { records } = await ctx.client.getByIds<VariantStock>('/variants', [...new Set(ids.values())], outbound);
  const byId = new Map(records.map((v) => [v.id, v]));
  const byLocation = new Map<number, Change[]>();
  const plan: Plan = { adjustments: [], unchanged: [], skipped: [] };
  const noCost: string[] = [];
  for (const count of input.counts) {
    const variantId = ids.get(count.sku)!;
    const variant = byId.get(variantId);
    if (!variant) {
      plan.skipped.push({ sku: count.sku, reason: `variant ${variantId} not found on the service (archived or deleted?)` });
      continue;
    }
    if (variant.manage_stock === false) {
      plan.skipped.push({ sku: count.sku, reason: 'stock is not tracked for this variant (manage_stock false)' });
      continue;
    }
    if (variant.composite) {
      plan.skipped.push({ sku: count.sku, reason: 'a bundle holds no stock of its own: count its components' });
      continue;
    }
    const level = variant.locations?.find((l) => l.location_id === count.location_id);
    const before = new Decimal(level?.stock_on_hand ?? '0');
    const diff = new Decimal(count.quantity).minus(before);
    if (diff.isZero()) {
      plan.unchanged.push({ sku: count.sku, location_id: count.location_id, quantity: before.toString() });
      continue;
    }
    let price: string | undefined;
    if (diff.isPositive()) {
      price = unitCost(variant) ?? undefined;
      if (price === undefined) {
        noCost.push(`${count.sku} (variant ${variantId})`);
        continue;
      }
    }
    const list = byLocation.get(count.location_id) ?? [];
    list.push({
      sku: count.sku,
      variant_id: variantId,
      before: before.toString(),
      after: new Decimal(count.quantity).toString(),
      change: diff.toString(),
      ...(price ? { price } : {}),
    });
    byLocation.set(count.location_id, list);
  }
  if (noCost.length) {
    throw new OperationFailed(
      `the count raises stock of ${noCost.join(', ')}, but the service needs a price for each line that adds ` +
        'stock and the variant has neither a moving_average_cost nor a last_cost_price: set its cost price on the service, then retry; nothing was adjusted',
    );
  }
  for (const [location_id, lines] of [...byLocation].sort(([a], [b]) => a - b)) {
    for (let part = 0; part * ADJUSTMENT_LINES_PER_REQUEST < lines.length; part++) {
      plan.adjustments.push({
        location_id,
        part,
        lines: lines.slice(part * ADJUSTMENT_LINES_PER_REQUEST, (part + 1) * ADJUSTMENT_LINES_PER_REQUEST),
      });
    }
  }
  return plan;
}
