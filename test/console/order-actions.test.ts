// What the order pages offer for an order's state: Ship (shipChoice), Retry of a failed operation
// (orderAllowsRetry) and Cancel of a channel order (cancelChoice). Pure functions, no database.
import t from 'tap';
import type { ChannelOrderView } from '../../src/channels/orders.ts';
import { cancelChoice } from '../../src/console/channel-orders.ts';
import { orderAllowsRetry, shipChoice, type OrderRecord } from '../../src/console/orders.ts';

const order = (status: string | null, sub: Record<string, string> = {}) =>
  ({ status, subStatuses: { packed: 'unpacked', fulfillment: 'unshipped', ...sub } }) as unknown as OrderRecord['order'];
const ful = (id: number, status: string) => ({ id, status, packedAt: null, tracking: null, lines: [{ sku: 'A', quantity: '1' }] });

t.test('Ship: only an active or finalized order with something left to ship', async (t) => {
  t.match(shipChoice({ order: order('void'), fulfillments: [] }), { offer: false, why: /void/ });
  t.match(shipChoice({ order: order('draft'), fulfillments: [] }), { offer: false, why: /active or finalized; this one is draft/ });
  t.match(shipChoice({ order: order('fulfilled', { fulfillment: 'shipped' }), fulfillments: [] }), { offer: false, why: /shipped/ });
  t.match(shipChoice({ order: order('finalized', { fulfillment: 'shipped' }), fulfillments: [] }), { offer: false });
  t.same(shipChoice({ order: order('active'), fulfillments: [] }), { offer: true, unpacked: true, packed: [] });
  const packed = shipChoice({
    order: order('active', { packed: 'packed', fulfillment: 'partial' }),
    fulfillments: [ful(1, 'fulfilled'), ful(2, 'packed')],
  });
  t.match(packed, { offer: true, unpacked: false, packed: [{ id: 2 }] }, 'every line packed: the packed fulfilment only');
  t.match(shipChoice({ order: order('active', { packed: 'packed' }), fulfillments: [ful(1, 'fulfilled')] }), { offer: false });
});

t.test('Retry: nothing on a void order, no ship once shipped, no pay once paid', async (t) => {
  t.notOk(orderAllowsRetry({ status: 'void' }, 'ship'));
  t.notOk(orderAllowsRetry({ status: 'void' }, 'pay'));
  t.notOk(orderAllowsRetry({ status: 'fulfilled' }, 'ship'));
  t.notOk(orderAllowsRetry({ status: 'active', fulfillment: 'shipped' }, 'ship'));
  t.notOk(orderAllowsRetry({ status: 'active', payment: 'paid' }, 'pay'));
  t.notOk(orderAllowsRetry({ status: 'active', invoice: 'invoiced' }, 'invoice'));
  t.ok(orderAllowsRetry({ status: 'fulfilled' }, 'return'));
  t.ok(orderAllowsRetry({ status: 'active' }, 'ship'));
});

t.test('Cancel: imported and nothing shipped, or an active hold', async (t) => {
  const view = (v: Partial<ChannelOrderView>) =>
    ({ order_id: null, order: null, fulfillments: [], returns: [], hold: null, operations: [], events: [], ...v }) as ChannelOrderView;
  const facts = (status: string) => ({ status }) as ChannelOrderView['order'];
  const hold = (ended: boolean) =>
    ({ ended_at: ended ? new Date() : null, end_cause: ended ? 'expired' : null }) as ChannelOrderView['hold'];
  t.same(cancelChoice(view({ order_id: 5, order: facts('active') })), { offer: 'void' });
  t.same(cancelChoice(view({ order_id: 5, order: null })), { offer: 'void' }, 'imported, not read by the mirror yet');
  t.match(cancelChoice(view({ order_id: 5, order: facts('fulfilled') })), { offer: 'none', why: /shipped/ });
  t.match(
    cancelChoice(
      view({ order_id: 5, order: facts('active'), fulfillments: [{ status: 'fulfilled' }] as ChannelOrderView['fulfillments'] }),
    ),
    { offer: 'none', why: /shipped/ },
  );
  t.match(cancelChoice(view({ order_id: 5, order: facts('void') })), { offer: 'none', why: /void/ });
  t.match(
    cancelChoice(
      view({
        order_id: 5,
        order: facts('active'),
        operations: [{ id: 9, kind: 'void', state: 'queued' }] as ChannelOrderView['operations'],
      }),
    ),
    { offer: 'none', operationId: 9 },
  );
  t.same(cancelChoice(view({ hold: hold(false) })), { offer: 'hold' });
  t.match(cancelChoice(view({ hold: hold(true) })), { offer: 'none', why: /hold has ended \(expired\)/ });
});
