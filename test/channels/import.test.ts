// push import-order and holds, against the sandbox: the import holds its lines before it creates the order (once
// per channel order, a channel's own hold counts), records the order on the hold, and the mirror write that reads
// the committed stock ends the hold in the same transaction: the units are counted once throughout.
import t from 'tap';
import { listHolds } from '../../src/db/holds.ts';
import { createHold } from '../../src/channels/holds.ts';
import { harness, plainVariants } from '../push/harness.ts';
import { mirror, quantities } from './harness.ts';

const customer = { company: { name: 'Ada' }, shipping_address: { address1: '1 Square', city: 'London', country: 'GB' } };

t.test('an import holds its lines, learns its order, and the read of the commitment ends the hold', async (t) => {
  const h = await harness(t, { config: { SERVICE_CLOCK_MARGIN_SECONDS: 1 } });
  const db = h.tdb.db;
  const connectionId = Number(h.connection.id);
  const [a, b] = plainVariants(await h.snapshot('variants'));
  // The harness's mirror has the variants without their stock: written again the way the sync engine writes them.
  await db.deleteFrom('variants').where('connection_id', '=', connectionId).execute();
  await mirror(db, connectionId, [a, b]);
  const available = (v: any) => v.locations.reduce((s: number, l: any) => s + Number(l.stock_on_hand) - Number(l.committed ?? 0), 0);
  const shown = async (v: any) => (await quantities(db, connectionId, v.id)).default;
  const start = available(a);
  t.equal(await shown(a), String(start));

  // The channel holds its order the moment it takes it; the import later finds that hold and makes none.
  await createHold(db, h.config, {
    connectionId,
    channel: 'webshop',
    source: 'api',
    input: { channel_order_id: '2001', lines: [{ sku: a.sku, quantity: '2' }] },
  });
  t.equal(await shown(a), String(start - 2));
  const op = await h.run('import-order', {
    channel: 'webshop',
    channel_order_id: '2001',
    customer,
    currency: 'usd',
    issued_at: '2026-11-20',
    lines: [{ sku: a.sku, quantity: '2' }],
  });
  t.equal(op.state, 'confirmed', op.reason ?? '');
  const order = (await h.snapshot('orders')).find((o) => o.id === (op.result as any).order_id);
  let [hold] = await listHolds(db, { channel: 'webshop', state: 'all' });
  t.match(hold, { source: 'api', order_id: order.id, ended_at: null }, 'the import recorded its order on the hold');
  t.equal(hold!.order_at?.toISOString(), new Date(order.updated_at).toISOString(), "from the create's answer: active, committing since");
  t.equal(await shown(a), String(start - 2), 'held, the mirror not read yet');

  // The drain reads the variant after the commitment: committed 2 more, and the hold ends in that write.
  const read = (await h.snapshot('variants')).find((v) => v.id === a.id);
  t.equal(available(read), start - 2, 'the service committed the order');
  await mirror(db, connectionId, [read], { kind: 'delivery', readAsOf: Date.parse(order.updated_at) + 2001 });
  t.equal(await shown(a), String(start - 2), 'committed once, held no more: never both, never neither');
  [hold] = await listHolds(db, { channel: 'webshop', state: 'all' });
  t.equal(hold!.end_cause, 'committed');

  // An import with no hold of the channel's makes one; importing it again makes no second.
  const second = {
    channel: 'webshop',
    channel_order_id: '2002',
    customer,
    currency: 'usd',
    issued_at: '2026-11-20',
    lines: [{ sku: b.sku, quantity: 1 }],
  };
  t.equal((await h.run('import-order', second)).state, 'confirmed');
  t.equal((await h.run('import-order', second)).state, 'confirmed');
  const made = await listHolds(db, { channel: 'webshop', state: 'all' });
  t.same(
    made.map((x) => [x.channel_order_id, x.source, x.held.map((l) => [l.sku, l.quantity])]),
    [
      ['2002', 'import', [[b.sku, '1']]],
      ['2001', 'api', [[a.sku, '2']]],
    ],
  );
  t.equal(await shown(b), String(available(b) - 1));
});
