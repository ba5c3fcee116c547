import t from 'tap';
import { type InputError, parseInput } from '../../src/push/input.ts';

const order = {
  channel: 'web',
  channel_order_id: 7,
  customer: { company_id: 1 },
  currency: 'sgd',
  issued_at: '2026-11-21',
  lines: [{ sku: 'A', quantity: 2 }],
};
const problems = (kind: Parameters<typeof parseInput>[0], input: unknown) => {
  try {
    parseInput(kind, input);
    return [];
  } catch (err) {
    return (err as InputError).problems;
  }
};

t.test('import-order input: normalised, every problem listed', async (t) => {
  const ok = parseInput('import-order', order) as any;
  t.equal(ok.channel_order_id, '7', 'a numeric channel order id becomes a string');
  t.equal(ok.currency, 'SGD');
  t.equal(ok.lines[0].quantity, '2', 'whole numbers become decimal strings');
  t.equal(
    (parseInput('import-order', { ...order, issued_at: '21/11/2026' }) as any).issued_at,
    '2026-11-21',
    'day-first dates are sent year-first',
  );
  t.match(problems('import-order', { ...order, issued_at: '2026-02-30' }), [/issued_at: a date/]);
  t.match(problems('import-order', { ...order, lines: [{ sku: 'A', quantity: 1.5 }] }), [/lines\.0/]);
  t.same(problems('import-order', { ...order, lines: [{ sku: 'A', quantity: '1.5' }] }), [], 'fractions as strings are fine');
  t.match(problems('import-order', { ...order, lines: [{ freeform: true, quantity: '1' }] }).join('\n'), /label/);
  t.match(
    problems('import-order', { ...order, customer: { company: { name: 'X' } } }),
    [/^customer.shipping_address: /],
    'a new company needs a shipping address',
  );
  const many = problems('import-order', { channel: '', currency: 'EURO', issued_at: 'x', lines: [] });
  t.ok(many.length >= 5, `all problems at once: ${many.join('; ')}`);
});

t.test('order operations: an order by id or by channel reference', async (t) => {
  t.same(problems('pay', { order_id: 4 }), []);
  t.same(problems('void', { channel: 'web', channel_order_id: '7' }), []);
  t.match(problems('invoice', { channel: 'web' }), [/order_id, or channel and channel_order_id/]);
  t.match(problems('ship', { order_id: 4, lines: [{ sku: 'A', order_line_item_id: 3, quantity: '1' }] }), [/one of them/]);
  t.match(problems('ship', { order_id: 4, lines: [{ sku: 'A', quantity: '0' }] }), [/above zero/]);
  t.match(problems('ship', { order_id: 4, fulfillment_id: 9, lines: [{ sku: 'A', quantity: '1' }] }), [/not both/]);
  t.match(problems('ship', { order_id: 4, fulfillment_id: 9, fulfil: false }), [/changes nothing/], 'a given fulfillment, nothing to send');
  t.same(problems('ship', { order_id: 4, fulfillment_id: 9, fulfil: false, tracking: { number: 'T' } }), [], 'tracking only');
  t.match(problems('return', { order_id: 4, lines: [] }), [/at least one line/]);
  t.match(problems('pay', { order_id: 4, extra: true }), [/extra/], 'unknown fields are refused, not ignored');
});

t.test('stock counts: zero allowed, negative and duplicate counts refused', async (t) => {
  t.same(problems('stock-count', { counts: [{ sku: 'A', location_id: 1, quantity: '0' }] }), []);
  t.match(problems('stock-count', { counts: [{ sku: 'A', location_id: 1, quantity: '-2' }] }), [/zero or more/]);
  t.match(
    problems('stock-count', {
      counts: [
        { sku: 'A', location_id: 1, quantity: '1' },
        { sku: 'A', location_id: 1, quantity: '2' },
      ],
    }),
    [/each sku and location_id once/],
  );
  t.match(problems('receive-purchase-order', { purchase_order_id: 'x' }), [/purchase_order_id/]);
});

t.test('the input examples in docs/push.md are valid', async (t) => {
  const { readFileSync } = await import('node:fs');
  const doc = readFileSync(new URL('../../docs/push.md', import.meta.url), 'utf8');
  const sections = doc.split(/^### /m).slice(1);
  let checked = 0;
  for (const section of sections) {
    const names = section
      .split('\n')[0]!
      .split(/,\s*/)
      .map((s) => s.trim());
    const example = /```json\n([\s\S]*?)```/.exec(section)?.[1];
    if (!example) continue;
    for (const name of names) {
      t.same(problems(name as never, JSON.parse(example)), [], `${name} example`);
      checked++;
    }
  }
  t.equal(checked, 8, 'every operation has an example');
});
