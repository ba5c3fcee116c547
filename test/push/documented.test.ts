// Push operations against both behaviours of the service (the spec's and the documented one): an imported order
// shipped line by line at once, re-imports after the idempotency key expired, stock counts raising stock with the
// variant's cost, and SKUs held by several variants refused.
import t from 'tap';
import { Decimal } from 'decimal.js';
import { PROFILES } from '../support/sandbox.ts';
import { harness, onHand, orderInput, plainVariants } from './harness.ts';
import { ClientState } from '../../src/api/client-state.ts';
import { markPending } from '../../src/db/pending.ts';
import { rulesFrom } from '../../src/stock/rules.ts';
import { drainPending } from '../../src/sync/drain.ts';

for (const profile of PROFILES) {
  t.test(`${profile}: push operations as a new user runs them`, async (t) => {
    const h = await harness(t, { profile, sandbox: { variants: 20, locations: 2 } });
    const variants = plainVariants(await h.snapshot('variants'));
    const companies = (await h.snapshot('companies')).filter((c) => c.company_type !== 'supplier');
    const [locA] = (await h.snapshot('locations')).map((l) => Number(l.id));
    const [v1, v2] = variants;

    await t.test('an imported order is shipped line by line at once, without a sweep', async (t) => {
      const input = orderInput(companies[0].id, 'webshop', `W-${profile}`, [
        { sku: v1.sku, quantity: '2' },
        { sku: v2.sku, quantity: '1' },
      ]);
      const imported = await h.run('import-order', input);
      t.equal(imported.state, 'confirmed', imported.reason ?? '');
      const orderId = (imported.result as any).order_id;
      t.equal(
        (await h.snapshot('orders')).find((o) => o.id === orderId)?.reference_number,
        `W-${profile}`,
        'the channel order id is the reference number',
      );
      const first = await h.run('ship', { channel: 'webshop', channel_order_id: `W-${profile}`, lines: [{ sku: v1.sku, quantity: '1' }] });
      t.equal(first.state, 'confirmed', first.reason ?? '');
      const second = await h.run('ship', {
        channel: 'webshop',
        channel_order_id: `W-${profile}`,
        lines: [
          { sku: v1.sku, quantity: '1' },
          { sku: v2.sku, quantity: '1' },
        ],
      });
      t.equal(second.state, 'confirmed', second.reason ?? '');
      const fulfillments = (await h.snapshot('fulfillments')).filter((f) => f.order_id === orderId);
      t.same(
        fulfillments.map((f) => f.status),
        ['fulfilled', 'fulfilled'],
        'each shipment packed, then marked fulfilled',
      );
    });

    await t.test('a re-import after the idempotency key expired finds the order by reference number', async (t) => {
      const input = orderInput(companies[0].id, 'webshop', `R-${profile}`, [{ sku: v1.sku, quantity: '1' }]);
      const routes = async () => (await h.admin('stats')).requests.by_route as Record<string, number>;
      const before = await routes();
      const op = await h.run('import-order', input);
      t.equal(op.state, 'confirmed', op.reason ?? '');
      const after = await routes();
      t.equal((after['GET /orders'] ?? 0) - (before['GET /orders'] ?? 0), 0, 'a first import looks for no order at the service');
      // 25 hours later, with our mapping gone (a restored backup, another installation): the key is forgotten too.
      // The mirror has the order, as the sweep after a restore reads it.
      await h.admin('clock', { advance_seconds: 25 * 3600 });
      await h.tdb.db.deleteFrom('channel_orders').where('channel_order_id', '=', `R-${profile}`).execute();
      const connectionId = Number(h.connection.id);
      await markPending(h.tdb.db, [{ connectionId, resource: 'order', id: (op.result as any).order_id, reason: 'sweep' }]);
      const client = await h.rt.sync.drainClient(connectionId);
      await drainPending({ db: h.tdb.db, log: h.rt.log, client, rules: rulesFrom(h.config), clockMarginMs: 0 }, 'order');
      const again = await h.run('import-order', input);
      t.equal(again.state, 'confirmed', again.reason ?? '');
      t.match(again.result, { order_id: (op.result as any).order_id, already_imported: true, found_by: 'reference_number' });
      t.equal((await h.snapshot('orders')).filter((o) => o.reference_number === `R-${profile}`).length, 1, 'still one order');
    });

    await t.test("a stock count raising stock is confirmed, the line priced at the variant's cost", async (t) => {
      const v = (await h.snapshot('variants')).find((x) => x.id === v2.id);
      const target = new Decimal(onHand(v, locA)).plus(4).toString();
      const op = await h.run('stock-count', { counts: [{ sku: v.sku, location_id: locA, quantity: target }] });
      t.equal(op.state, 'confirmed', op.reason ?? '');
      const adjustmentId = (op.result as any).adjustments[0].stock_adjustment_id;
      const line = (await h.snapshot('stock_adjustment_line_items')).find((l) => l.stock_adjustment_id === adjustmentId);
      const cost = new Decimal(v.moving_average_cost ?? v.last_cost_price);
      t.equal((op.result as any).adjustments[0].lines[0].price, cost.toString(), "sent with the variant's cost as price");
      if (profile === 'documented') t.ok(line?.price != null && new Decimal(line.price).eq(cost), `the service keeps price ${line?.price}`);
      t.ok(
        new Decimal(
          onHand(
            (await h.snapshot('variants')).find((x) => x.id === v2.id),
            locA,
          ),
        ).eq(target),
        'stock counted up',
      );
    });

    await t.test('a variant without any cost cannot be counted up: the SKU is named, nothing is sent', async (t) => {
      const product = (await h.snapshot('products'))[0];
      const created = (
        await (
          await import('../../src/api/connections.ts')
        ).clientFor({ db: h.tdb.db, config: h.config, log: h.rt.log, clients: new ClientState() }, h.connection.id)
      ).request('POST', '/variants', { body: { variant: { product_id: product.id, sku: `NOCOST-${profile}`, name: 'no cost' } } });
      const variant = (await created).body.variant;
      t.equal(variant.moving_average_cost ?? null, null);
      await h.mirrorVariants();
      const before = (await h.snapshot('stock_adjustments')).length;
      const op = await h.run('stock-count', { counts: [{ sku: `NOCOST-${profile}`, location_id: locA, quantity: '3' }] });
      t.equal(op.state, 'failed');
      t.match(op.reason, new RegExp(`NOCOST-${profile} \\(variant ${variant.id}\\).*neither a moving_average_cost nor a last_cost_price`));
      t.equal((await h.snapshot('stock_adjustments')).length, before, 'no adjustment sent');
    });

    await t.test('a SKU held by several live variants is refused, naming them', async (t) => {
      const product = (await h.snapshot('products'))[0];
      const { clientFor } = await import('../../src/api/connections.ts');
      const client = await clientFor({ db: h.tdb.db, config: h.config, log: h.rt.log, clients: new ClientState() }, h.connection.id);
      const twin = (await client.request('POST', '/variants', { body: { variant: { product_id: product.id, sku: v1.sku, name: 'twin' } } }))
        .body.variant;
      await h.mirrorVariants();
      const ids = [Number(v1.id), Number(twin.id)].sort((a, b) => a - b);
      const message = new RegExp(`SKU ${v1.sku} is held by 2 live variants \\(ids ${ids.join(', ')}\\)`);
      const ship = await h.run('ship', { channel: 'webshop', channel_order_id: `W-${profile}`, lines: [{ sku: v1.sku, quantity: '1' }] });
      t.equal(ship.state, 'failed');
      t.match(ship.reason, message, 'ship');
      const count = await h.run('stock-count', { counts: [{ sku: v1.sku, location_id: locA, quantity: '1' }] });
      t.match(count.reason, message, 'stock-count');
      const imp = await h.run('import-order', orderInput(companies[0].id, 'webshop', `T-${profile}`, [{ sku: v1.sku, quantity: '1' }]));
      t.match(imp.reason, message, 'import-order');
    });
  });
}
