import t from 'tap';
import { normaliseEvent, singularNoun, SUBSCRIBED_EVENTS } from '../../src/receiver/events.ts';

t.test('delivered plural events map to the singular subscription form', async (t) => {
  const cases: [string, string, string, string][] = [
    ['fulfillments.create', 'fulfillment', 'create', 'fulfillment.create'],
    ['variants.stock_level_update', 'variant', 'stock_level_update', 'variant.stock_level_update'],
    ['fulfillment_returns.create', 'fulfillment_return', 'create', 'fulfillment_return.create'],
    ['addresses.create', 'address', 'create', 'address.create'],
    ['companies.create', 'company', 'create', 'company.create'],
    ['purchase_orders.create', 'purchase_order', 'create', 'purchase_order.create'],
    ['stock_transfers.create', 'stock_transfer', 'create', 'stock_transfer.create'],
    ['products.create', 'product', 'create', 'product.create'],
    ['orders.create', 'order', 'create', 'order.create'],
    ['currencies.update', 'currency', 'update', 'currency.update'],
    ['stock_adjustments.create', 'stock_adjustment', 'create', 'stock_adjustment.create'],
    ['batches.create', 'batch', 'create', 'batch.create'],
    ['boxes.create', 'box', 'create', 'box.create'],
    ['Variants.Destroy', 'variant', 'destroy', 'variant.destroy'],
  ];
  for (const [event, resource, action, subscription] of cases) {
    t.match(normaliseEvent(event), { resource, action, subscription }, event);
  }
});

t.test('singular names stay singular, so every subscribed event maps to itself', async (t) => {
  for (const e of SUBSCRIBED_EVENTS) t.equal(normaliseEvent(e).subscription, e, e);
  t.equal(singularNoun('address'), 'address');
  t.equal(singularNoun('status'), 'status');
  t.equal(singularNoun('people'), 'person');
});

t.test('handled events go to the workers; unknown ones are recognised as such', async (t) => {
  t.equal(normaliseEvent('variants.stock_level_update').handled, true);
  t.equal(normaliseEvent('fulfillment_returns.create').handled, true);
  t.match(normaliseEvent('payments.create'), { resource: 'payment', subscription: 'payment.create', handled: false });
  t.match(normaliseEvent('gibberish'), { resource: null, action: null, subscription: null, handled: false });
  t.match(normaliseEvent(''), { subscription: null, handled: false });
  t.match(normaliseEvent('.create'), { subscription: null, handled: false });
});
