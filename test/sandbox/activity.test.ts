// Merchant activity on orders created through the API, as a channel's import creates them: packed, shipped in
// parts with tracking, tracking given again later, invoiced, paid, voided, returned and the return received,
// each step firing exactly the webhooks of the sandbox's profile, and such orders picked as often as the
// activity's own.
import t from 'tap';
import { DOCUMENTED_EVENTS, PROFILES, SPEC_EVENTS, type Profile } from '@commerce-sync/sandbox';
import { productSetup, receiver, sandbox, type Client } from './harness.ts';
import type { Teardown } from '../support/teardown.ts';

const EVENTS: Record<Profile, readonly string[]> = { spec: SPEC_EVENTS, documented: DOCUMENTED_EVENTS };

/** A sandbox with no seeded orders (under 5 stock variants), two variants of our own and a receiver of every event. */
async function account(t: Teardown, profile: Profile) {
  const c = await sandbox(t, { profile, variants: 4 });
  const rx = await receiver(t);
  for (const event of EVENTS[profile]) await c.call('POST', '/webhooks', { webhook: { address: rx.url, event } });
  const { mk } = await productSetup(c, { product: 'Activity Tee', variant: () => ({ initial_cost_price: '4.00' }) });
  const [a, b] = [await mk(), await mk()];
  await c.admin('POST', 'deliveries/flush');
  return { c, rx, a, b };
}

/** An order as `push import-order` sends it (src/push/import-order.ts): a new customer, reference_number, prices. */
async function imported(c: Client, ref: string, lines: { variant_id: number; quantity: string }[]) {
  const r = await c.call('POST', '/orders', {
    order: {
      company: { name: `Channel customer ${ref}` },
      shipping_address: { address1: '1 Harbour Road', city: 'Singapore', country: 'SG' },
      status: 'active',
      issued_at: '2025-03-01',
      currency_iso: 'USD',
      reference_number: ref,
      order_line_items: lines.map((l) => ({ ...l, price: '12.50' })),
    },
  });
  if (r.status !== 201) throw new Error(`order: ${r.status} ${r.text}`);
  return r.body.order;
}

/**
 * Performs one activity operation of `kind` and gives what it did and the webhooks it fired, as
 * `<event> <object_id>`, sorted.
 */
async function step(c: Client, rx: { got: { json: any }[] }, kind: string): Promise<{ id: number; fired: string[] }> {
  await c.admin('POST', 'deliveries/flush');
  const before = rx.got.length;
  const performed = (await c.admin('POST', 'activity', { operations: 1, kinds: [kind] })).body.performed;
  if (performed.length !== 1) throw new Error(`${kind} found nothing to do`);
  await c.admin('POST', 'deliveries/flush');
  return {
    id: performed[0].id,
    fired: rx.got
      .slice(before)
      .map((g) => `${g.json.event} ${g.json.object_id}`)
      .sort(),
  };
}

/** The webhooks a profile fires of those given by their event's singular name, as `step` reports them. */
const only = (profile: Profile, events: [string, number][]) =>
  events
    .filter(([e]) => EVENTS[profile].includes(e))
    .map(([e, id]) => `${e.replace('.', 's.')} ${id}`)
    .sort();

const fulfillmentsOf = async (c: Client, orderId: number) =>
  (await c.get(`/fulfillments?order_id=${orderId}`)).body.fulfillments.sort((x: any, y: any) => x.id - y.id);

for (const profile of PROFILES) {
  t.test(
    `Merchant activity (${profile}): an order created through the API is shipped in parts with tracking, invoiced, paid and returned`,
    async (t) => {
      const { c, rx, a, b } = await account(t, profile);
      const o = await imported(c, 'web-5001', [
        { variant_id: a.id, quantity: '3' },
        { variant_id: b.id, quantity: '1' },
      ]);
      const [la] = o.order_line_item_ids;

      // A part: the first line, packed by the fulfil action's selection and PUT to fulfilled with its tracking.
      const part = await step(c, rx, 'ship_lines');
      t.equal(part.id, o.id, 'ship_lines picks the imported order');
      const [f1] = await fulfillmentsOf(c, o.id);
      t.match(f1, { status: 'fulfilled', tracking_company: String, tracking_number: String, tracking_url: String });
      t.same(
        part.fired,
        only(profile, [
          ['fulfillment.create', f1.id],
          ['fulfillment.fulfilled', f1.id],
          ['variant.stock_level_update', a.id],
        ]),
      );
      t.equal((await c.get(`/orders/${o.id}`)).body.order.fulfillment_status, 'partial');

      // The rest packed, and shipped later with its own tracking.
      const packed = await step(c, rx, 'pack_order');
      const f2 = (await fulfillmentsOf(c, o.id))[1];
      t.match(f2, { status: 'packed', tracking_number: null });
      t.same(packed.fired, only(profile, [['fulfillment.create', f2.id]]), 'packing moves no stock');
      const shipped = await step(c, rx, 'ship_packed');
      t.equal(shipped.id, f2.id);
      t.same(
        shipped.fired,
        only(profile, [
          ['fulfillment.fulfilled', f2.id],
          ['variant.stock_level_update', b.id],
          ['order.fulfilled', o.id],
        ]),
      );
      const both = await fulfillmentsOf(c, o.id);
      for (const f of both) {
        t.match(f, { status: 'fulfilled', tracking_company: /\w/, tracking_number: /\w/, shipped_at: String });
        t.ok(f.tracking_url.endsWith(f.tracking_number), 'the tracking page of that number');
      }
      t.not(both[0].tracking_number, both[1].tracking_number, 'each shipment its own tracking number');
      t.match((await c.get(`/orders/${o.id}`)).body.order, { status: 'fulfilled', fulfillment_status: 'shipped', packed_status: 'packed' });

      // Tracking given again later: a PUT of the tracking only, announced by nothing.
      const relabel = await step(c, rx, 'add_tracking');
      t.same(relabel.fired, [], 'a tracking-only change fires no webhook');
      const changed = (await fulfillmentsOf(c, o.id)).find((f: any) => f.id === relabel.id);
      const was = both.find((f: any) => f.id === relabel.id);
      t.not(changed.tracking_number, was.tracking_number, 'a new tracking number');
      t.match(changed, { status: 'fulfilled', shipped_at: was.shipped_at });

      const invoiced = await step(c, rx, 'invoice_order');
      t.equal(invoiced.id, o.id);
      const [inv] = (await c.get(`/invoices?order_id=${o.id}`)).body.invoices;
      t.ok(inv?.invoice_number, 'an invoice of the order');
      t.same(invoiced.fired, only(profile, [['invoice.create', inv.id]]));
      t.equal((await c.get(`/orders/${o.id}`)).body.order.invoice_status, 'invoiced');

      const paid = await step(c, rx, 'pay_order');
      t.equal(paid.id, o.id);
      const [payment] = (await c.get(`/payments?invoice_id=${inv.id}`)).body.payments;
      t.same(paid.fired, only(profile, [['payment.create', payment.id]]));

      // A return created, and received in a later step.
      const returned = await step(c, rx, 'return_order');
      const ret = (await c.get(`/fulfillment_returns/${returned.id}?include=fulfillment_return_line_items`)).body;
      t.match(ret.fulfillment_return, { order_id: o.id, status: 'returning', credit_note_number: String, received_at: null });
      t.match(ret.fulfillment_return_line_items, [{ order_line_item_id: la, quantity: /^1(\.0)?$/ }]);
      t.same(returned.fired, only(profile, [['fulfillment_return.create', returned.id]]), 'nothing back on hand yet');
      t.equal((await c.get(`/orders/${o.id}`)).body.order.return_status, 'returning');
      const received = await step(c, rx, 'receive_return');
      t.equal(received.id, returned.id);
      t.same(
        received.fired,
        only(profile, [
          ['fulfillment_return.received', returned.id],
          ['variant.stock_level_update', a.id],
        ]),
      );
      t.match((await c.get(`/orders/${o.id}`)).body.order, { return_status: 'returned', payment_status: 'paid', status: 'fulfilled' });
    },
  );

  t.test(`Merchant activity (${profile}): a void of an imported order fires no order event, only the stock it uncommits`, async (t) => {
    const { c, rx, a, b } = await account(t, profile);
    const o = await imported(c, 'web-5002', [
      { variant_id: a.id, quantity: '2' },
      { variant_id: b.id, quantity: '1' },
    ]);
    await step(c, rx, 'pack_order');
    const voided = await step(c, rx, 'void_order');
    t.equal(voided.id, o.id);
    t.same(
      voided.fired,
      only(profile, [
        ['variant.stock_level_update', a.id],
        ['variant.stock_level_update', b.id],
      ]),
    );
    t.equal((await c.get(`/orders/${o.id}`)).body.order.status, 'void');
    t.same(
      (await fulfillmentsOf(c, o.id)).map((f: any) => f.status),
      ['void'],
      'its packed fulfillment is voided with it',
    );
  });

  t.test(`Sandbox API (${profile}): a PUT of tracking only on a shipped fulfillment fires no webhook`, async (t) => {
    const { c, rx, a } = await account(t, profile);
    const o = await imported(c, 'web-5003', [{ variant_id: a.id, quantity: '1' }]);
    const f = (await c.call('POST', `/orders/${o.id}/actions/fulfil`)).body.fulfillments[0];
    t.equal(f.tracking_number, null, 'shipped without tracking');
    await c.admin('POST', 'deliveries/flush');
    const before = rx.got.length;
    const put = await c.call('PUT', `/fulfillments/${f.id}`, {
      fulfillment: {
        tracking_company: 'DHL',
        tracking_number: 'JD0000000042',
        tracking_url: 'https://www.dhl.com/track?tracking-number=JD0000000042',
      },
    });
    t.equal(put.status, profile === 'spec' ? 200 : 204);
    await c.admin('POST', 'deliveries/flush');
    t.equal(rx.got.length, before, 'no webhook');
    t.match((await c.get(`/fulfillments/${f.id}`)).body.fulfillment, { status: 'fulfilled', tracking_number: 'JD0000000042' });
    // add_tracking gives tracking first to a shipment that has none.
    const o2 = await imported(c, 'web-5004', [{ variant_id: a.id, quantity: '1' }]);
    const f2 = (await c.call('POST', `/orders/${o2.id}/actions/fulfil`)).body.fulfillments[0];
    await c.admin('POST', 'deliveries/flush');
    const added = await step(c, rx, 'add_tracking');
    t.equal(added.id, f2.id, 'the shipment without tracking');
    t.same(added.fired, []);
    t.match((await c.get(`/fulfillments/${f2.id}`)).body.fulfillment, {
      tracking_company: /\w/,
      tracking_number: /\w/,
      tracking_url: /^https:/,
    });
  });
}

t.test('Merchant activity: orders created through the API are picked as often as its own, older ones too', async (t) => {
  const c = await sandbox(t, { variants: 4, seed: 11 });
  const { mk } = await productSetup(c, { product: 'Fair Tee', variant: () => ({ initial_cost_price: '4.00' }) });
  const v = await mk();
  // Ten imported orders first, then ten of the activity's own: a pick of the newest would never reach the imports.
  const api = new Set<number>();
  for (let i = 0; i < 10; i++) api.add((await imported(c, `web-6${i}`, [{ variant_id: v.id, quantity: '1' }])).id);
  const own = (await c.admin('POST', 'activity', { operations: 10, kinds: ['place_order'] })).body.performed.map((p: any) => p.id);
  t.equal(own.length, 10);
  const shipped = (await c.admin('POST', 'activity', { operations: 10, kinds: ['ship_order'] })).body.performed.map((p: any) => p.id);
  t.equal(shipped.length, 10);
  t.equal(new Set(shipped).size, 10, 'a shipped order is not shipped again');
  const ofApi = shipped.filter((id: number) => api.has(id)).length;
  t.ok(ofApi >= 3 && ofApi <= 7, `imported orders shipped: ${ofApi} of 10`);
  for (const id of shipped) {
    const [f] = await fulfillmentsOf(c, id);
    t.match(
      f,
      { status: 'fulfilled', tracking_company: /\w/, tracking_number: /\w/, tracking_url: /\w/ },
      `order ${id} shipped with tracking`,
    );
  }
});

t.test('Merchant activity: ship_lines ships a one-line order in parts, each with its tracking; ship_order ships the rest', async (t) => {
  const c = await sandbox(t, { variants: 4 });
  const { mk } = await productSetup(c, { product: 'Parts Tee', variant: () => ({ initial_cost_price: '4.00' }) });
  const v = await mk();
  const o = await imported(c, 'web-7001', [{ variant_id: v.id, quantity: '5' }]);
  const part = async (kind: string) => {
    const performed = (await c.admin('POST', 'activity', { operations: 1, kinds: [kind] })).body.performed;
    t.same(performed, [{ kind, id: o.id }]);
  };
  await part('ship_lines');
  await part('ship_lines');
  t.match((await c.get(`/orders/${o.id}`)).body.order, { status: 'active', fulfillment_status: 'partial' });
  await part('ship_order');
  const shipments = await fulfillmentsOf(c, o.id);
  t.same(
    shipments.map((f: any) => f.status),
    ['fulfilled', 'fulfilled', 'fulfilled'],
  );
  const lines = (await c.get(`/fulfillment_line_items?order_line_item_id=${o.order_line_item_ids[0]}`)).body.fulfillment_line_items;
  t.same(
    lines.sort((x: any, y: any) => x.id - y.id).map((l: any) => Number(l.quantity)),
    [3, 1, 1],
    'half of what is left (rounded up), then half again, then the rest',
  );
  t.equal(new Set(shipments.map((f: any) => f.tracking_number)).size, 3, 'three tracking numbers');
  t.equal((await c.get(`/orders/${o.id}`)).body.order.status, 'fulfilled');
});
