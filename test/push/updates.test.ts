// Writes that answer 204: the service answers every update with 204 and no body
// (real-service-notes §7), which proves nothing about what the record now holds. Each push path, run against the
// documented sandbox behind a proxy that answers every PUT so, must leave behind (in the result it reports) the
// record as the service holds it afterwards, checked against the sandbox's own snapshot.
import t, { type Test } from 'tap';
import { Decimal } from 'decimal.js';
import { clientFor } from '../../src/api/connections.ts';
import { harness, onHand, orderInput, plainVariants } from './harness.ts';
import { ClientState } from '../../src/api/client-state.ts';

/**
 * The fields (result name -> record name) a result reports, beside the same fields of the record on the service.
 * A field the result leaves out claims nothing.
 */
function claimed(result: Record<string, any>, record: Record<string, any>, fields: Record<string, string>) {
  const named = Object.keys(fields).filter((k) => result[k] !== undefined);
  return {
    named,
    reported: Object.fromEntries(named.map((k) => [k, result[k]])),
    held: Object.fromEntries(named.map((k) => [k, record[fields[k]!] ?? null])),
  };
}

t.test('documented, updates answering 204: each push path reports the record as the service holds it', async (t) => {
  const h = await harness(t, { profile: 'documented', sandbox: { variants: 40, locations: 2 } });
  const variants = plainVariants(await h.snapshot('variants'));
  const [a, b] = variants;
  const company = (await h.snapshot('companies')).find((c) => c.company_type !== 'supplier');
  const [locA] = (await h.snapshot('locations')).map((l) => Number(l.id));
  const record = async (resource: string, id: unknown) => (await h.snapshot(resource)).find((r) => r.id === id);
  const puts = async () => {
    const routes = (await h.admin('stats')).requests.by_route as Record<string, number>;
    return Object.entries(routes).reduce((n, [k, v]) => n + (k.startsWith('PUT ') ? v : 0), 0);
  };
  const importOrder = async (id: string, lines: { sku: string; quantity: string }[]) => {
    const op = await h.run('import-order', orderInput(company.id, 'shop', id, lines));
    if (op.state !== 'confirmed') throw new Error(`import ${id} failed: ${op.reason}`);
    return op as typeof op & { result: Record<string, any> };
  };
  /** The order fields an import reports, beside the order on the service. */
  const sameOrder = async (t: Test, result: any) => {
    const order = await record('orders', result.order_id);
    const ids = (await h.snapshot('order_line_items')).filter((l) => l.order_id === result.order_id).map((l) => l.id);
    t.same(
      [result.order_number, result.status, result.company_id, [...result.order_line_item_ids].sort((x, y) => x - y)],
      [order.order_number, order.status, order.company_id, ids.sort((x: number, y: number) => x - y)],
      'order number, status, company and every line id are those on the service',
    );
  };
  const fulfillmentFields = {
    status: 'status',
    tracking_company: 'tracking_company',
    tracking_number: 'tracking_number',
    tracking_url: 'tracking_url',
  };
  const sameFulfillment = async (t: Test, result: any) => {
    const f = await record('fulfillments', result.fulfillment_id);
    t.ok(f, `fulfillment ${result.fulfillment_id} exists`);
    const c = claimed(result, f, fulfillmentFields);
    t.ok(c.named.includes('status'), 'the status is reported');
    t.same(c.reported, c.held, `status and tracking are those on the service (${c.named.join(', ')})`);
  };

  await t.test('import-order, lines in the create alone', async (t) => {
    const op = await importOrder('U-1', [
      { sku: a.sku, quantity: '2' },
      { sku: b.sku, quantity: '1' },
    ]);
    await sameOrder(t, op.result);
  });

  await t.test('import-order, 160 lines: lines beyond 150 added by a PUT answering 204, then read back', async (t) => {
    const before = await puts();
    const lines = Array.from({ length: 160 }, (_, i) => ({ sku: variants[i % variants.length].sku, quantity: '1' }));
    const op = await importOrder('U-160', lines);
    t.ok((await puts()) > before, 'lines added with PUT');
    t.equal((op.result as any).order_line_item_ids.length, 160, 'all 160 line ids, not the 150 the create answered');
    await sameOrder(t, op.result);
  });

  await t.test('ship given lines with tracking: packed, then marked fulfilled by a PUT answering 204', async (t) => {
    const orderId = (await importOrder('U-2', [{ sku: a.sku, quantity: '2' }])).result.order_id as number;
    const op = await h.run('ship', {
      order_id: orderId,
      lines: [{ sku: a.sku, quantity: '1' }],
      tracking: { company: 'DHL', number: 'U2-1', url: 'https://track.example/U2-1' },
    });
    t.equal(op.state, 'confirmed', op.reason ?? '');
    t.match(op.result, { status: 'fulfilled', tracking_number: 'U2-1' });
    await sameFulfillment(t, op.result);
  });

  await t.test('ship all unpacked lines (pack action), then fulfil', async (t) => {
    const orderId = (await importOrder('U-3', [{ sku: b.sku, quantity: '1' }])).result.order_id as number;
    const op = await h.run('ship', { order_id: orderId, tracking: { number: 'U3-1' } });
    t.equal(op.state, 'confirmed', op.reason ?? '');
    await sameFulfillment(t, op.result);
  });

  await t.test('pack only, then add tracking to that fulfillment after the merchant shipped it', async (t) => {
    const orderId = (await importOrder('U-4', [{ sku: a.sku, quantity: '1' }])).result.order_id as number;
    const packed = await h.run('ship', { order_id: orderId, fulfil: false });
    t.equal(packed.state, 'confirmed', packed.reason ?? '');
    await sameFulfillment(t, packed.result);
    const fulfillmentId = (packed.result as any).fulfillment_id;
    // The merchant ships it on the service (the fulfil action ships every packed fulfillment of the order).
    const client = await clientFor({ db: h.tdb.db, config: h.config, log: h.rt.log, clients: new ClientState() }, h.connection.id);
    await client.orderAction(orderId, 'fulfil');
    const op = await h.run('ship', { order_id: orderId, fulfillment_id: fulfillmentId, fulfil: false, tracking: { number: 'U4-late' } });
    t.equal(op.state, 'confirmed', op.reason ?? '');
    t.match(op.result, { status: 'fulfilled', tracking_number: 'U4-late' }, 'shipped, not the packed a 204 would let one assume');
    await sameFulfillment(t, op.result);
  });

  const orderFields = { order_status: 'status', invoice_status: 'invoice_status', payment_status: 'payment_status' };
  for (const action of ['invoice', 'pay', 'void'] as const) {
    await t.test(`${action}: the order's status fields reported are those on the service`, async (t) => {
      const orderId = (await importOrder(`U-${action}`, [{ sku: b.sku, quantity: '1' }])).result.order_id as number;
      const op = await h.run(action, { order_id: orderId });
      t.equal(op.state, 'confirmed', op.reason ?? '');
      const result = op.result as any;
      const c = claimed(result, await record('orders', orderId), orderFields);
      t.same(c.reported, c.held, `reported ${c.named.join(', ') || 'no status field'}`);
      if (action === 'invoice') {
        const invoice = (await h.snapshot('invoices')).find((i) => i.order_id === orderId);
        t.equal(result.invoice_id, invoice?.id, 'the invoice on the service');
      } else t.ok(c.named.includes('order_status'), 'the order status is reported');
    });
  }

  await t.test('return: the fulfillment return reported is the one on the service', async (t) => {
    const orderId = (await importOrder('U-5', [{ sku: a.sku, quantity: '2' }])).result.order_id as number;
    t.equal((await h.run('ship', { order_id: orderId })).state, 'confirmed');
    const op = await h.run('return', { order_id: orderId, lines: [{ sku: a.sku, quantity: '1' }], location_id: locA });
    t.equal(op.state, 'confirmed', op.reason ?? '');
    const result = op.result as any;
    const r = await record('fulfillment_returns', result.fulfillment_return_id);
    t.same([result.status, result.credit_note_number], [r.status, r.credit_note_number]);
  });

  await t.test('receive-purchase-order: the procurement reported is the one on the service', async (t) => {
    const po = (await h.snapshot('purchase_orders')).find((p) => p.status === 'active');
    t.ok(po, 'an open purchase order');
    const op = await h.run('receive-purchase-order', { purchase_order_id: po.id });
    t.equal(op.state, 'confirmed', op.reason ?? '');
    const procurement = await record('procurements', (op.result as any).procurement_id);
    t.equal(procurement?.purchase_order_id, po.id);
  });

  await t.test('stock-count: each adjustment reported is on the service, the stock is the count', async (t) => {
    const target = new Decimal(onHand(await record('variants', b.id), locA)).plus(3).toString();
    const op = await h.run('stock-count', { counts: [{ sku: b.sku, location_id: locA, quantity: target }] });
    t.equal(op.state, 'confirmed', op.reason ?? '');
    const [adj] = (op.result as any).adjustments;
    const lines = (await h.snapshot('stock_adjustment_line_items')).filter((l) => l.stock_adjustment_id === adj.stock_adjustment_id);
    t.same(
      lines.map((l) => [l.variant_id, new Decimal(l.quantity).toString()]),
      adj.lines.map((l: any) => [l.variant_id, l.change]),
    );
    t.ok(new Decimal(onHand(await record('variants', b.id), locA)).eq(adj.lines[0].after), 'stock on hand is the count');
  });
});
