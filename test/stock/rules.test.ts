import t from 'tap';
import {
  channelQuantity,
  dec,
  fmt,
  heldLineEnds,
  rulesFrom,
  safetyBuffer,
  withAvailable,
  type ChannelRules,
  type VariantStock,
} from '../../src/stock/rules.ts';

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
  t.has(channelQuantity(v(), all), { quantity: '12.5', tracked: true, backorderable: false, bundle: false, listed: true });
  t.equal(channelQuantity(v(), rulesFrom({ CHANNEL_LOCATIONS: '2', CHANNEL_SAFETY_BUFFER: '0' })).quantity, '5.5');
  t.equal(channelQuantity(v(), rulesFrom({ CHANNEL_LOCATIONS: '', CHANNEL_SAFETY_BUFFER: '2.5' })).quantity, '10');
  t.equal(channelQuantity(v(), rulesFrom({ CHANNEL_LOCATIONS: '', CHANNEL_SAFETY_BUFFER: '100' })).quantity, '0', 'never below zero');
  t.equal(channelQuantity(v({ max_online: '4' }), all).quantity, '4');
  t.equal(channelQuantity(v({ max_online: '40' }), all).quantity, '12.5');
  t.has(channelQuantity(v({ manage_stock: false }), all), { quantity: null, tracked: false, backorderable: false, bundle: false });
  t.has(channelQuantity(v({ keep_selling: true }), all), { quantity: '12.5', tracked: true, backorderable: true, bundle: false });
  t.equal(channelQuantity(v({ status: 'archived' }), all).quantity, '0');
  t.equal(channelQuantity(v({ locations: [{ location_id: 1, on_hand: '-2', committed: '1', incoming: '0' }] }), all).quantity, '0');
  t.equal(channelQuantity(v({ max_online: '4' }), { ...all, capMaxOnline: false }).quantity, '12.5', 'a channel that ignores max_online');
  t.has(channelQuantity(v({ max_online: '4' }), all).why, { counted: '12.5', held: '0', buffer: '0', capped: '4', override: null });
});

t.test('bundles: min over components of floor(available / quantity per bundle)', async (t) => {
  const bundle = v({ id: 9, composite: true, locations: [] });
  const a = v({ id: 2, locations: [{ location_id: 1, on_hand: '10', committed: '1', incoming: '0' }] }); // 9
  const b = v({ id: 3, locations: [{ location_id: 1, on_hand: '7.5', committed: '0', incoming: '0' }] }); // 7.5
  t.has(
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

t.test('safety buffer: units, or a percentage of what is available rounded up to a whole unit, at least the units', async (t) => {
  const pct = (percent: string, units = '0'): ChannelRules => ({ locations: null, safetyBuffer: units, bufferPercent: percent });
  t.equal(fmt(safetyBuffer(dec('12.5'), '0', '10')), '2', "10% of 12.5 is 1.25: rounded up, never in the channel's favour");
  t.equal(fmt(safetyBuffer(dec('20'), '0', '10')), '2', 'an exact share stays');
  t.equal(fmt(safetyBuffer(dec('20'), '3', '10')), '3', 'the units are the floor');
  t.equal(fmt(safetyBuffer(dec('-4'), '1', '50')), '1', 'nothing available: the floor alone');
  t.equal(fmt(safetyBuffer(dec('0.3'), '0', '0.1')), '1', 'any fraction of a unit rounds up');
  t.equal(fmt(safetyBuffer(dec('7'), '2.5')), '2.5', 'units alone stay exact decimals');
  t.equal(channelQuantity(v(), pct('10')).quantity, '10.5', '12.5 less 2');
  t.equal(channelQuantity(v(), pct('10', '3')).quantity, '9.5', '12.5 less the floor of 3');
  t.equal(channelQuantity(v(), pct('100')).quantity, '0');
  t.equal(channelQuantity(v(), pct('0')).quantity, '12.5');
  // 0.1 + 0.2 in floats is 0.30000000000000004: the buffer stays exact
  const tiny = v({ locations: [{ location_id: 1, on_hand: '0.3', committed: '0', incoming: '0' }] });
  t.equal(channelQuantity(tiny, { locations: null, safetyBuffer: '0.1' }).quantity, '0.2');
});

t.test('overrides: exclude, zero, fixed, own buffer', async (t) => {
  t.has(channelQuantity(v(), all, undefined, { override: { mode: 'exclude' } }), { quantity: '0', listed: false, backorderable: false });
  t.has(channelQuantity(v({ keep_selling: true }), all, undefined, { override: { mode: 'zero' } }), {
    quantity: '0',
    listed: true,
    backorderable: false,
  });
  t.has(channelQuantity(v({ max_online: '1' }), all, undefined, { override: { mode: 'fixed', quantity: '7.50' } }), {
    quantity: '7.5',
    tracked: true,
  });
  t.equal(channelQuantity(v({ manage_stock: false }), all, undefined, { override: { mode: 'fixed', quantity: '3' } }).quantity, '3');
  t.equal(channelQuantity(v({ status: 'archived' }), all, undefined, { override: { mode: 'fixed', quantity: '3' } }).quantity, '0');
  t.equal(
    channelQuantity(v(), { locations: null, safetyBuffer: '5' }, undefined, { override: { mode: 'buffer', units: '1', percent: null } })
      .quantity,
    '11.5',
    "its own buffer replaces the channel's",
  );
  t.equal(
    channelQuantity(v(), all, undefined, { override: { mode: 'buffer', units: '0', percent: '50' } }).quantity,
    '5.5',
    '50% of 12.5 is 6.25: 7 held back',
  );
});

t.test('holds lower what is available; a bundle holds through its components', async (t) => {
  const held = new Map([[1, '2.5']]);
  t.has(channelQuantity(v(), all, undefined, { held }), { quantity: '10', why: { counted: '12.5', held: '2.5' } });
  t.equal(
    channelQuantity(v(), { locations: null, safetyBuffer: '0', bufferPercent: '10' }, undefined, { held }).quantity,
    '9',
    '10% of the 10 left',
  );
  t.equal(channelQuantity(v(), all, undefined, { held: new Map([[1, '20']]) }).quantity, '0', 'never below zero');
  t.equal(channelQuantity(v({ manage_stock: false }), all, undefined, { held }).quantity, null, 'untracked stays untracked');
  t.equal(
    channelQuantity(v(), all, undefined, { held, override: { mode: 'fixed', quantity: '4' } }).quantity,
    '4',
    'a fixed figure is not lowered',
  );
  const bundle = v({ id: 9, composite: true, locations: [] });
  const a = v({ id: 2, locations: [{ location_id: 1, on_hand: '10', committed: '0', incoming: '0' }] });
  const b = v({ id: 3, locations: [{ location_id: 1, on_hand: '10', committed: '0', incoming: '0' }] });
  const comps = [
    { quantity: '2', variant: a },
    { quantity: '1', variant: b },
  ];
  t.equal(channelQuantity(bundle, all, comps).quantity, '5');
  const q = channelQuantity(bundle, all, comps, { held: new Map([[2, '3']]) });
  t.equal(q.quantity, '3', '(10 - 3) / 2 = 3.5: 3');
  t.same(q.why.components, [
    { variant_id: 2, per: '2', counted: '10', held: '3', makes: '3' },
    { variant_id: 3, per: '1', counted: '10', held: '0', makes: '10' },
  ]);
  t.equal(
    channelQuantity(bundle, all, comps, { held: new Map([[9, '1']]) }).quantity,
    '4',
    "the bundle's own hold (made before its makeup was known)",
  );
});

t.test('a held line ends committed when a read surely after its order shows it, cancelled when the order is', async (t) => {
  const at = Date.parse('2026-03-01T10:00:00Z');
  const line = { orderStatus: null, orderUpdatedAt: null, orderAt: at, marginMs: 2000, shownAt: null };
  t.equal(heldLineEnds(line), null, 'no read yet');
  t.equal(heldLineEnds({ ...line, shownAt: at + 2999 }), null, 'within a second and the margin: the read may predate the commit');
  t.equal(heldLineEnds({ ...line, shownAt: at + 3000 }), 'committed');
  t.equal(heldLineEnds({ ...line, orderAt: null, shownAt: at + 60_000 }), null, 'no order known: held');
  t.equal(
    heldLineEnds({ ...line, orderAt: null, orderStatus: 'draft', orderUpdatedAt: at, shownAt: at + 60_000 }),
    null,
    'a draft commits nothing',
  );
  t.equal(
    heldLineEnds({ ...line, orderAt: null, orderStatus: 'active', orderUpdatedAt: at, shownAt: at + 3000 }),
    'committed',
    'the mirror shows it active: from its updated_at',
  );
  t.equal(heldLineEnds({ ...line, orderStatus: 'void', shownAt: null }), 'cancelled');
});
