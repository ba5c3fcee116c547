import t from 'tap';
import { PROFILES } from '../support/sandbox.ts';
import { Decimal } from 'decimal.js';
import { harness, onHand, plainVariants } from './harness.ts';

for (const profile of PROFILES)
  t.test(`${profile}: receive purchase orders and count stock against the sandbox`, async (t) => {
    const h = await harness(t, { profile, sandbox: { variants: 300, locations: 2 } });
    const pos = (await h.snapshot('purchase_orders')).filter((p) => p.status === 'active');
    t.ok(pos.length >= 2, 'the sandbox has open purchase orders');
    const poLines = await h.snapshot('purchase_order_line_items');
    const [locA, locB] = (await h.snapshot('locations')).map((l) => l.id);

    await t.test('receive a whole purchase order: stock on hand rises', async (t) => {
      const po = pos[0];
      const lines = poLines.filter((l) => l.purchase_order_id === po.id);
      const before = new Map((await h.snapshot('variants')).map((v) => [v.id, v]));
      const op = await h.run('receive-purchase-order', { purchase_order_id: po.id });
      t.equal(op.state, 'confirmed', op.reason ?? '');
      t.ok((op.result as any).procurement_id, 'the procurement id is reported');
      t.equal((await h.snapshot('purchase_orders')).find((p) => p.id === po.id).status, 'received');
      const after = new Map((await h.snapshot('variants')).map((v) => [v.id, v]));
      const expected = new Map<number, Decimal>();
      for (const l of lines) expected.set(l.variant_id, (expected.get(l.variant_id) ?? new Decimal(0)).plus(l.quantity));
      for (const [variantId, q] of expected) {
        const was = new Decimal(onHand(before.get(variantId), po.stock_location_id));
        t.ok(new Decimal(onHand(after.get(variantId), po.stock_location_id)).eq(was.plus(q)), `variant ${variantId} +${q}`);
      }
      const again = await h.run('receive-purchase-order', { purchase_order_id: po.id });
      t.equal(again.state, 'failed', 'a received purchase order cannot be received again');
      t.equal(again.status_code, 422);
      t.match(again.field_errors, { status: [/received/] });
    });

    await t.test('a partial receipt fails with a clear reason and sends nothing', async (t) => {
      const po = pos[1];
      const lines = poLines.filter((l) => l.purchase_order_id === po.id);
      const statsBefore = (await h.admin('stats')).requests.by_route;
      const op = await h.run('receive-purchase-order', {
        purchase_order_id: po.id,
        lines: [{ purchase_order_line_item_id: lines[0].id, quantity: new Decimal(lines[0].quantity).minus(1).toString() }],
      });
      t.equal(op.state, 'failed');
      t.match(op.reason, /partial receiving is not supported: the service receives purchase order \d+ only as a whole/);
      const statsAfter = (await h.admin('stats')).requests.by_route;
      t.equal(
        Object.entries(statsAfter)
          .filter(([k]) => /receive/.test(k))
          .reduce((n, [k, v]) => n + (v as number) - (statsBefore[k] ?? 0), 0),
        0,
        'no receive request sent',
      );
      t.equal((await h.snapshot('purchase_orders')).find((p) => p.id === po.id).status, 'active');
      // Naming every line in full is the whole order: accepted.
      const whole = await h.run('receive-purchase-order', {
        purchase_order_id: po.id,
        lines: lines.map((l) => ({ purchase_order_line_item_id: l.id, quantity: l.quantity })),
      });
      t.equal(whole.state, 'confirmed', whole.reason ?? '');
    });

    await t.test('stock counts move stock up and down and leave unchanged variants alone', async (t) => {
      const soh = (v: any, loc: number) => new Decimal(onHand(v, loc));
      const variants = plainVariants(await h.snapshot('variants')).filter((v) => soh(v, locA).gte(5));
      const [up, down, same, zero] = variants;
      const adjustmentsBefore = (await h.snapshot('stock_adjustments')).length;
      const counts = [
        { sku: up.sku, location_id: locA, quantity: soh(up, locA).plus(5).toString() },
        { sku: down.sku, location_id: locA, quantity: soh(down, locA).minus(3).toString() },
        { sku: same.sku, location_id: locA, quantity: soh(same, locA).toString() },
        { sku: same.sku, location_id: locB, quantity: soh(same, locB).toString() },
        { sku: zero.sku, location_id: locB, quantity: soh(zero, locB).plus('2.5').toString() },
      ];
      const op = await h.run('stock-count', { counts, notes: 'quarterly count' });
      t.equal(op.state, 'confirmed', op.reason ?? '');
      const result = op.result as any;
      t.equal(result.adjustments.length, 2, 'one adjustment per location with a difference');
      t.equal(result.changed_lines, 3);
      t.same(
        result.unchanged.map((u: any) => [u.sku, u.location_id]).sort(),
        [
          [same.sku, locA],
          [same.sku, locB],
        ].sort(),
      );
      const adjustments = await h.snapshot('stock_adjustments');
      t.equal(adjustments.length - adjustmentsBefore, 2, 'two adjustments on the service');
      const lineItems = await h.snapshot('stock_adjustment_line_items');
      const a = adjustments.find((x) => x.id === result.adjustments.find((r: any) => r.location_id === locA).stock_adjustment_id);
      t.equal(a.stock_location_id, locA);
      t.equal(a.reason, 'shrinkage', 'a documented reason code (STOCK_ADJUSTMENT_REASON)');
      const aLines = lineItems.filter((l) => l.stock_adjustment_id === a.id);
      // A line raising stock carries the variant's cost as its price (the documented service refuses it without).
      const cost = new Decimal(up.moving_average_cost ?? up.last_cost_price);
      const upLine = (result.adjustments.find((r: any) => r.location_id === locA).lines as any[]).find((l) => l.variant_id === up.id);
      t.ok(new Decimal(upLine.price).eq(cost), `the raising line was sent with price ${upLine.price}, the variant's cost ${cost}`);
      t.notOk(
        (result.adjustments.find((r: any) => r.location_id === locA).lines as any[]).find((l) => l.variant_id === down.id).price,
        'a lowering line carries no price (the service uses the moving average)',
      );
      t.equal(aLines.length, 2, 'the unchanged variant is not a line');
      t.notOk(
        lineItems.some(
          (l) => l.variant_id === same.id && result.adjustments.some((r: any) => r.stock_adjustment_id === l.stock_adjustment_id),
        ),
        'no line for the unchanged variant',
      );
      const after = new Map((await h.snapshot('variants')).map((v) => [v.id, v]));
      t.ok(soh(after.get(up.id), locA).eq(counts[0]!.quantity), 'counted up');
      t.ok(soh(after.get(down.id), locA).eq(counts[1]!.quantity), 'counted down');
      t.ok(soh(after.get(same.id), locA).eq(soh(same, locA)), 'unchanged at A');
      t.ok(soh(after.get(same.id), locB).eq(soh(same, locB)), 'unchanged at B');
      t.ok(soh(after.get(zero.id), locB).eq(counts[4]!.quantity), 'exact decimal count at B');
      t.equal(after.get(same.id).updated_at, same.updated_at, 'the unchanged variant was not touched');

      const recount = await h.run('stock-count', { counts });
      t.equal(recount.state, 'confirmed');
      t.same((recount.result as any).adjustments, [], 'counting the same again changes nothing');
      t.equal((await h.snapshot('stock_adjustments')).length - adjustmentsBefore, 2, 'no new adjustment');
    });

    await t.test('a lost answer on an adjustment is not applied twice', async (t) => {
      const [v] = plainVariants(await h.snapshot('variants'));
      const target = new Decimal(onHand(v, locA)).plus(7).toString();
      await h.faults({ responses: { lose_response: 1, routes: '^POST /stock_adjustments' } });
      const op = await h.push('stock-count', { counts: [{ sku: v.sku, location_id: locA, quantity: target }] });
      for (let i = 0; i < 300; i++) {
        const row = await h.tdb.db.selectFrom('push_operations').select('reason').where('id', '=', op.id).executeTakeFirstOrThrow();
        if (row.reason) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      await h.faults({});
      const done = await h.settle(op.id, 60_000);
      t.equal(done.state, 'confirmed', done.reason ?? '');
      const now = (await h.snapshot('variants')).find((x) => x.id === v.id);
      t.equal(new Decimal(onHand(now, locA)).toString(), new Decimal(target).toString(), 'stock moved once, to the count');
    });

    await t.test('more changed lines at a location than one request carries: one adjustment per 250 lines', async (t) => {
      const variants = plainVariants(await h.snapshot('variants')).slice(0, 260);
      t.equal(variants.length, 260);
      const bundle = (await h.snapshot('variants')).find((v) => v.composite && v.sku);
      const before = (await h.snapshot('stock_adjustments')).length;
      const counts = variants.map((v) => ({
        sku: v.sku,
        location_id: locA,
        quantity: new Decimal(onHand(v, locA)).plus(1).abs().toString(),
      }));
      const op = await h.run('stock-count', { counts: [...counts, { sku: bundle.sku, location_id: locA, quantity: '3' }] });
      t.equal(op.state, 'confirmed', op.reason ?? '');
      const result = op.result as any;
      t.same(
        result.adjustments.map((a: any) => [a.location_id, a.lines.length]),
        [
          [locA, 250],
          [locA, result.changed_lines - 250],
        ],
      );
      t.match(result.skipped, [{ sku: bundle.sku, reason: /bundle/ }], 'a bundle is skipped with a reason');
      t.equal((await h.snapshot('stock_adjustments')).length - before, 2);
      const after = new Map((await h.snapshot('variants')).map((v) => [v.id, v]));
      const wrong = counts.filter((c, i) => !new Decimal(onHand(after.get(variants[i].id), locA)).eq(c.quantity));
      t.same(wrong, [], 'every variant at its count');
    });

    await t.test('unknown SKUs and bad input', async (t) => {
      const op = await h.run('stock-count', { counts: [{ sku: 'NOPE-1', location_id: locA, quantity: '3' }] });
      t.equal(op.state, 'failed');
      t.match(op.reason, /unknown SKU NOPE-1/);
      await t.rejects(
        h.push('stock-count', { counts: [{ sku: 'X', location_id: locA, quantity: '-1' }] }),
        /counts\.0\.quantity: a count of zero or more/,
      );
      await t.rejects(h.push('receive-purchase-order', {}), /purchase_order_id/);
    });
  });
