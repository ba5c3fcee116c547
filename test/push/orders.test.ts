import t from 'tap';
import { PROFILES } from '../support/sandbox.ts';
import { harness, orderInput, plainVariants, type Harness } from './harness.ts';

async function importOne(h: Harness, channelOrderId: string, lines: { sku: string; quantity: string }[]) {
  const companies = await h.snapshot('companies');
  const op = await h.run('import-order', orderInput(companies[0].id, 'shop', channelOrderId, lines));
  if (op.state !== 'confirmed') throw new Error(`import failed: ${op.reason}`);
  return (op.result as any).order_id as number;
}

const linesOf = async (h: Harness, orderId: number) => (await h.snapshot('order_line_items')).filter((l) => l.order_id === orderId);
const fulfillmentsOf = async (h: Harness, orderId: number) => (await h.snapshot('fulfillments')).filter((f) => f.order_id === orderId);

for (const profile of PROFILES)
  t.test(`${profile}: ship, invoice, pay, void and return against the sandbox`, async (t) => {
    const h = await harness(t, { profile });
    const [a, b, c] = plainVariants(await h.snapshot('variants'));

    await t.test('ship everything with tracking, named by channel order', async (t) => {
      const orderId = await importOne(h, 'S-1', [
        { sku: a.sku, quantity: '2' },
        { sku: b.sku, quantity: '1' },
      ]);
      const op = await h.run('ship', {
        channel: 'shop',
        channel_order_id: 'S-1',
        tracking: { company: 'DHL', number: 'JD0001', url: 'https://track.example/JD0001' },
      });
      t.equal(op.state, 'confirmed', op.reason ?? '');
      const fs = await fulfillmentsOf(h, orderId);
      t.equal(fs.length, 1);
      t.match(fs[0], {
        id: (op.result as any).fulfillment_id,
        status: 'fulfilled',
        tracking_company: 'DHL',
        tracking_number: 'JD0001',
        tracking_url: 'https://track.example/JD0001',
      });
      const order = (await h.snapshot('orders')).find((o) => o.id === orderId);
      t.equal(order.fulfillment_status, 'shipped');
    });

    await t.test('partial shipments by SKU and quantity, pack only, then fulfil the packed one', async (t) => {
      const orderId = await importOne(h, 'S-2', [
        { sku: a.sku, quantity: '3' },
        { sku: c.sku, quantity: '2' },
      ]);
      const packed = await h.run('ship', { order_id: orderId, lines: [{ sku: a.sku, quantity: '1' }], fulfil: false });
      t.equal(packed.state, 'confirmed', packed.reason ?? '');
      t.equal((packed.result as any).status, 'packed');
      const fid = (packed.result as any).fulfillment_id;
      let fs = await fulfillmentsOf(h, orderId);
      t.match(fs, [{ id: fid, status: 'packed' }]);
      const flis = (await h.snapshot('fulfillment_line_items')).filter((l) => l.fulfillment_id === fid);
      t.equal(flis.length, 1);
      t.equal(Number(flis[0].quantity), 1, 'only the quantity asked for');
      const shipped = await h.run('ship', { order_id: orderId, fulfillment_id: fid, tracking: { number: 'T-2' } });
      t.equal(shipped.state, 'confirmed', shipped.reason ?? '');
      fs = await fulfillmentsOf(h, orderId);
      t.match(
        fs.find((f) => f.id === fid),
        { status: 'fulfilled', tracking_number: 'T-2' },
      );
      const order = (await h.snapshot('orders')).find((o) => o.id === orderId);
      t.equal(order.fulfillment_status, 'partial');
    });

    await t.test('ship failures: more than ordered, a SKU not on the order, an order never imported, an unknown order', async (t) => {
      const orderId = await importOne(h, 'S-3', [{ sku: a.sku, quantity: '1' }]);
      const tooMany = await h.run('ship', { order_id: orderId, lines: [{ sku: a.sku, quantity: '5' }] });
      t.equal(tooMany.state, 'failed');
      t.match(tooMany.reason, /quantity 5 is more than the 1(\.0)? ordered/);
      const notOnOrder = await h.run('ship', { order_id: orderId, lines: [{ sku: b.sku, quantity: '1' }] });
      t.match(notOnOrder.reason, new RegExp(`has no line for SKU ${b.sku}`));
      const notImported = await h.run('ship', { channel: 'shop', channel_order_id: 'NEVER' });
      t.equal(notImported.state, 'failed');
      t.match(notImported.reason, /channel order shop\/NEVER has not been imported/);
      const unknown = await h.run('ship', { order_id: 99999999 });
      t.equal(unknown.state, 'failed');
      t.equal(unknown.status_code, 404);
      t.equal(unknown.attempts, 1, 'a 404 is not retried');
      t.equal((await fulfillmentsOf(h, orderId)).length, 0, 'nothing packed');
    });

    await t.test('invoice, then pay; void a fresh order; a 422 with field messages', async (t) => {
      const orderId = await importOne(h, 'S-4', [{ sku: a.sku, quantity: '1' }]);
      const inv = await h.run('invoice', { order_id: orderId });
      t.equal(inv.state, 'confirmed', inv.reason ?? '');
      let order = (await h.snapshot('orders')).find((o) => o.id === orderId);
      t.equal(order.invoice_status, 'invoiced');
      const pay = await h.run('pay', { channel: 'shop', channel_order_id: 'S-4' });
      t.equal(pay.state, 'confirmed', pay.reason ?? '');
      order = (await h.snapshot('orders')).find((o) => o.id === orderId);
      t.equal(order.payment_status, 'paid');
      const payAgain = await h.run('pay', { order_id: orderId });
      t.equal(payAgain.state, 'failed', 'paying twice is refused');
      t.equal(payAgain.status_code, 422);
      t.same(payAgain.field_errors, { payment_status: ['is paid'] });
      t.match(
        payAgain.reason,
        /422 request invalid.*\(payment_status: is paid\)/,
        'the reason names the field message, whatever the body shape',
      );

      const other = await importOne(h, 'S-5', [{ sku: b.sku, quantity: '1' }]);
      const voided = await h.run('void', { order_id: other });
      t.equal(voided.state, 'confirmed', voided.reason ?? '');
      t.equal((await h.snapshot('orders')).find((o) => o.id === other).status, 'void');
      const shipVoid = await h.run('ship', { order_id: other });
      t.equal(shipVoid.state, 'failed');
      t.match(shipVoid.field_errors, { status: [/void/] });
    });

    await t.test('return shipped lines; returning more than shipped is refused', async (t) => {
      const orderId = await importOne(h, 'S-6', [
        { sku: a.sku, quantity: '2' },
        { sku: b.sku, quantity: '1' },
      ]);
      t.equal((await h.run('ship', { order_id: orderId })).state, 'confirmed');
      const lines = await linesOf(h, orderId);
      const lineA = lines.find((l) => l.variant_id === a.id);
      const ret = await h.run('return', {
        order_id: orderId,
        lines: [
          { order_line_item_id: lineA.id, quantity: '1' },
          { sku: b.sku, quantity: '1' },
        ],
        notes: 'damaged',
      });
      t.equal(ret.state, 'confirmed', ret.reason ?? '');
      const r = (await h.snapshot('fulfillment_returns')).find((x) => x.id === (ret.result as any).fulfillment_return_id);
      t.match(r, { order_id: orderId, status: 'returning', notes: 'damaged' });
      t.ok((ret.result as any).credit_note_number);
      const rlis = (await h.snapshot('fulfillment_return_line_items')).filter((l) => l.fulfillment_return_id === r.id);
      t.equal(rlis.length, 2);
      const again = await h.run('return', { order_id: orderId, lines: [{ order_line_item_id: lineA.id, quantity: '2' }] });
      t.equal(again.state, 'failed');
      t.equal(again.status_code, 422);
      t.ok(again.field_errors, 'field messages kept');
    });
  });

t.test('operations on one order run in the order they were queued', async (t) => {
  const h = await harness(t, { config: { WORKER_CONCURRENCY: 4 } });
  const [a, b] = plainVariants(await h.snapshot('variants'));
  const companies = await h.snapshot('companies');
  // Queued together before the import has an order id: ship, invoice and pay name the order by its channel ref
  // or, for a second order, by id once imported. With four workers they would race without the per-order queue.
  const ops = [
    await h.push(
      'import-order',
      orderInput(companies[0].id, 'seq', 'Q-1', [
        { sku: a.sku, quantity: '2' },
        { sku: b.sku, quantity: '1' },
      ]),
    ),
    await h.push('ship', { channel: 'seq', channel_order_id: 'Q-1', lines: [{ sku: a.sku, quantity: '1' }], fulfil: false }),
    await h.push('ship', { channel: 'seq', channel_order_id: 'Q-1', tracking: { number: 'REST' } }),
    await h.push('invoice', { channel: 'seq', channel_order_id: 'Q-1' }),
    await h.push('pay', { channel: 'seq', channel_order_id: 'Q-1' }),
  ];
  t.equal(new Set(ops.map((o) => o.order_key)).size, 1, 'one order key');
  const done = [];
  for (const op of ops) done.push(await h.settle(op.id, 60_000));
  t.same(
    done.map((o) => o.state),
    ['confirmed', 'confirmed', 'confirmed', 'confirmed', 'confirmed'],
    done.map((o) => o.reason).join(' | '),
  );
  const sent = await h.tdb.db
    .selectFrom('sync_log')
    .select(['record_id', 'action'])
    .where('resource', '=', 'operation')
    .where('action', 'like', 'push.%.sent')
    .orderBy('id')
    .execute();
  t.same(
    sent.map((s) => s.record_id),
    ops.map((o) => o.id),
    'sent one after another, in queue order',
  );
  const finished = [...done].sort((x, y) => x.finished_at!.getTime() - y.finished_at!.getTime() || x.id - y.id);
  t.same(
    finished.map((o) => o.id),
    ops.map((o) => o.id),
    'finished in queue order',
  );
  const orderId = (done[0]!.result as any).order_id;
  t.equal((done[1]!.result as any).order_id, orderId);
  const fs = (await h.snapshot('fulfillments')).filter((f) => f.order_id === orderId);
  t.equal(fs.length, 2, 'the partial pack, then the rest');
  const order = (await h.snapshot('orders')).find((o) => o.id === orderId);
  t.match(order, { invoice_status: 'invoiced', payment_status: 'paid' });
  // A later operation naming the order by id joins the same queue.
  const byId = await h.push('void', { order_id: orderId });
  t.equal(byId.order_key, ops[0]!.order_key);
});
