import t from 'tap';
import { channelQuantity, dec, fmt, rulesFrom, withAvailable, type VariantStock } from '../../src/stock/rules.ts';

const all = rulesFrom({ CHANNEL_LOCATIONS: '', CHANNEL_SAFETY_BUFFER: '0' });
const v = (over: Partial<VariantStock> = {}): VariantStock => ({
  id: 1,
  sku: 'A',
  status: 'active',
  composite: false,
  manage_stock: true,
  keep_selling: false,
  max_online: null,
  locations: [
    { location_id: 1, on_hand: '10', committed: '3', incoming: '0' },
    { location_id: 2, on_hand: '5.5', committed: '0', incoming: '2' },
  ],
  ...over,
});

t.test('available = on_hand - committed, exact, with odd inputs', async (t) => {
  t.same(withAvailable({ location_id: 1, on_hand: '-0.0', committed: '0', incoming: '' }), {
    location_id: 1,
    on_hand: '0',
    committed: '0',
    incoming: '0',
    available: '0',
  });
  t.equal(withAvailable({ location_id: 1, on_hand: '0.3', committed: '0.1', incoming: '0' }).available, '0.2'); // a float would say 0.19999999999999998
  t.equal(withAvailable({ location_id: 1, on_hand: '-10', committed: '1', incoming: '0' }).available, '-11');
  t.equal(fmt(dec('1e3')), '1000');
  t.equal(fmt(dec('12345678901234567890.123456789')), '12345678901234567890.123456789');
  t.equal(fmt(dec(null)), '0');
});

t.test('channel quantity: locations, buffer, cap, untracked, backorderable, inactive', async (t) => {
  t.same(channelQuantity(v(), all), { quantity: '12.5', tracked: true, backorderable: false, bundle: false });
  t.equal(channelQuantity(v(), rulesFrom({ CHANNEL_LOCATIONS: '2', CHANNEL_SAFETY_BUFFER: '0' })).quantity, '5.5');
  t.equal(channelQuantity(v(), rulesFrom({ CHANNEL_LOCATIONS: '', CHANNEL_SAFETY_BUFFER: '2.5' })).quantity, '10');
  t.equal(channelQuantity(v(), rulesFrom({ CHANNEL_LOCATIONS: '', CHANNEL_SAFETY_BUFFER: '100' })).quantity, '0', 'never below zero');
  t.equal(channelQuantity(v({ max_online: '4' }), all).quantity, '4');
  t.equal(channelQuantity(v({ max_online: '40' }), all).quantity, '12.5');
  t.same(channelQuantity(v({ manage_stock: false }), all), { quantity: null, tracked: false, backorderable: false, bundle: false });
  t.same(channelQuantity(v({ keep_selling: true }), all), { quantity: '12.5', tracked: true, backorderable: true, bundle: false });
  t.equal(channelQuantity(v({ status: 'archived' }), all).quantity, '0');
  t.equal(channelQuantity(v({ locations: [{ location_id: 1, on_hand: '-2', committed: '1', incoming: '0' }] }), all).quantity, '0');
  t.equal(
    channelQuantity(v(), rulesFrom({ CHANNEL_LOCATIONS: '1', CHANNEL_SAFETY_BUFFER: '1' }, { location_ids: [2], safety_buffer: null }))
      .quantity,
    '4.5',
    'a per-connection rule overrides the setting',
  );
});

t.test('bundles: min over components of floor(available / quantity per bundle)', async (t) => {
  const bundle = v({ id: 9, composite: true, locations: [] });
  const a = v({ id: 2, locations: [{ location_id: 1, on_hand: '10', committed: '1', incoming: '0' }] }); // 9
  const b = v({ id: 3, locations: [{ location_id: 1, on_hand: '7.5', committed: '0', incoming: '0' }] }); // 7.5
  t.same(
    channelQuantity(bundle, all, [
      { quantity: '2', variant: a },
      { quantity: '1.5', variant: b },
    ]),
    { quantity: '4', tracked: true, backorderable: false, bundle: true },
  );
  t.equal(
    channelQuantity(bundle, all, [
      { quantity: '2', variant: a },
      { quantity: '3', variant: b },
    ]).quantity,
    '2',
  );
  t.equal(
    channelQuantity(bundle, all, [
      { quantity: '2', variant: a },
      { quantity: '1', variant: v({ id: 4, manage_stock: false }) },
    ]).quantity,
    '4',
    'an untracked component does not limit',
  );
  t.same(
    channelQuantity(bundle, all, [{ quantity: '1', variant: v({ id: 4, manage_stock: false }) }]).quantity,
    null,
    'all untracked: untracked',
  );
  t.equal(
    channelQuantity(bundle, all, [
      { quantity: '2', variant: a },
      { quantity: '1', variant: v({ id: 5, status: 'archived' }) },
    ]).quantity,
    '0',
  );
  t.equal(channelQuantity({ ...bundle, max_online: '3' }, all, [{ quantity: '1', variant: a }]).quantity, '3');
  t.equal(
    channelQuantity(bundle, all, [
      { quantity: '2', variant: v({ id: 6, locations: [{ location_id: 1, on_hand: '-4', committed: '0', incoming: '0' }] }) },
    ]).quantity,
    '0',
  );
  t.equal(channelQuantity(v({ composite: true }), all).quantity, '12.5', 'composite without a known makeup counts its own stock');
});
