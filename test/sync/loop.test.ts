// The whole loop against the sandbox: sandbox change -> signed delivery -> receiver -> deliveries job ->
// pending fetch -> drain (batched list read) -> mirror and channel quantities.
import t from 'tap';
import { SERVICES, serviceOptions } from '../support/sandbox.ts';
import { sql } from 'kysely';
import { startLoop } from './harness.ts';
import { stockReport } from '../../src/stock/cli.ts';

for (const service of SERVICES)
  t.test(`${service.name}: a stock change made in the sandbox reaches the mirror through a real delivery`, async (t) => {
    const loop = await startLoop(t, { sandbox: serviceOptions(service) });
    const { performed } = await loop.admin('POST', 'activity', { operations: 1, kinds: ['adjust_stock'] });
    t.equal(performed.length, 1);
    const adjustment = performed[0].id;
    const snap = (await loop.admin('GET', 'snapshot?resource=stock_adjustments')).stock_adjustments.find((a: any) => a.id === adjustment);
    const lines = (await loop.admin('GET', 'snapshot?resource=stock_adjustment_line_items')).stock_adjustment_line_items.filter(
      (l: any) => l.stock_adjustment_id === adjustment || snap?.stock_adjustment_line_item_ids?.includes(l.id),
    );
    const variantId = lines[0]?.variant_id;
    t.ok(variantId, 'the adjustment names a variant');
    await loop.until('the variant in the mirror', async () => (await loop.variantDiff()).missing.length < 30);
    await loop.until('the mirror to match the sandbox for that variant', async () => {
      const d = await loop.variantDiff();
      return !d.missing.includes(variantId) && !d.wrong.includes(variantId);
    });
    const delivery = await loop.tdb.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('object_id', '=', variantId)
      .executeTakeFirstOrThrow();
    await loop.until(
      'the delivery marked processed',
      async () =>
        (await loop.tdb.db.selectFrom('webhook_deliveries').select('state').where('id', '=', delivery.id).executeTakeFirstOrThrow())
          .state === 'processed',
    );
    const [row] = await stockReport(loop.tdb.db, {
      connection: 'shop',
      sku: (await loop.tdb.db.selectFrom('variants').select('sku').where('id', '=', variantId).executeTakeFirstOrThrow()).sku,
    });
    t.ok(row, 'commerce-sync stock shows it');
    const v = (await loop.admin('GET', 'snapshot?resource=variants')).variants.find((x: any) => x.id === variantId);
    t.same(row!.locations.map((l) => l.location_id).sort(), v.locations.map((l: any) => l.location_id).sort());
    const change = await loop.tdb.db
      .selectFrom('channel_quantity_changes')
      .selectAll()
      .where('variant_id', '=', variantId)
      .executeTakeFirstOrThrow();
    t.equal(change.cause, 'delivery', 'the channel quantity change names its cause');
    t.equal(change.delivery_id, delivery.delivery_id, '... and the delivery behind it');
    t.ok(change.job_id, '... and the drain that made it');
    const logged = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM sync_log WHERE resource = 'variant' AND record_id = ${variantId} AND action IN ('channel-quantity', 'stock')`.execute(
      loop.tdb.db,
    );
    t.ok(logged.rows[0]!.n >= 1, 'and in the sync log');
    // The stock_adjustment.create delivery reads the adjustment, then the variants it moves: those drain too.
    await loop.until('nothing left pending', async () => (await pending(loop)) === 0);
  });

for (const service of SERVICES)
  t.test(`${service.name}: duplicated and reordered deliveries leave the mirror right, at one read per batch`, async (t) => {
    const loop = await startLoop(t, { sandbox: { ...serviceOptions(service), variants: 40 } });
    await loop.admin('POST', 'faults', { deliveries: { duplicate: 0.5, reorder: 0.5 } });
    await loop.admin('POST', 'activity', { operations: 60, kinds: ['adjust_stock', 'update_variant'] });
    await loop.admin('POST', 'deliveries/flush');
    const touched = new Set<number>();
    await loop.until('every delivery stored', async () => {
      const s = await loop.admin('GET', 'stats');
      return s.deliveries.pending === 0;
    });
    for (const d of await loop.tdb.db.selectFrom('webhook_deliveries').select(['object_id', 'resource']).execute())
      if (d.resource === 'variant') touched.add(Number(d.object_id));
    await loop.until('the touched variants to match the sandbox', async () => {
      const d = await loop.variantDiff();
      return [...touched].every((id) => !d.missing.includes(id) && !d.wrong.includes(id)) && (await pending(loop)) === 0;
    });
    const stats = await loop.admin('GET', 'stats');
    const reads = stats.requests.by_route['GET /variants'] ?? 0;
    t.ok(reads < touched.size, `reads (${reads}) fewer than the ${touched.size} records touched: coalesced`);
    const d = await loop.variantDiff();
    t.same(
      [...touched].filter((id) => d.wrong.includes(id) || d.missing.includes(id)),
      [],
    );
  });

async function pending(loop: Awaited<ReturnType<typeof startLoop>>): Promise<number> {
  return (await sql<{ n: number }>`SELECT count(*)::int AS n FROM pending_fetches`.execute(loop.tdb.db)).rows[0]!.n;
}
