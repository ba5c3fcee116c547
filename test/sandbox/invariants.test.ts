// States and stock under random merchant activity: every committed and on-hand figure equals what the
// orders, fulfillments, returns, purchase orders, adjustments and transfers in the snapshot imply.
import t from 'tap';
import { Decimal } from 'decimal.js';
import { sandbox } from './harness.ts';

t.test('States and stock: committed and on hand always follow the documents (600 random operations)', async (t) => {
  const c = await sandbox(t, { variants: 80, seed: 3 });
  const snap = async (r: string) => (await c.admin('GET', `snapshot?resource=${r}`)).body[r] as any[];
  const before = new Map((await snap('variants')).map((v) => [v.id, v]));
  const performed = (await c.admin('POST', 'activity', { operations: 600 })).body.performed;
  t.ok(performed.length > 500);
  const [vs, orders, lines, comps, fls, fuls, pos, pols, adjls, adjs, trls, trs, rets, retls] = await Promise.all(
    [
      'variants',
      'orders',
      'order_line_items',
      'composition',
      'fulfillment_line_items',
      'fulfillments',
      'purchase_orders',
      'purchase_order_line_items',
      'stock_adjustment_line_items',
      'stock_adjustments',
      'stock_transfer_line_items',
      'stock_transfers',
      'fulfillment_returns',
      'fulfillment_return_line_items',
    ].map(snap),
  );
  const byId = <T extends { id: number }>(rows: T[]) => new Map(rows.map((r) => [r.id, r]));
  const variants = byId(vs!),
    lineById = byId(lines!),
    fulById = byId(fuls!),
    poById = byId(pos!),
    adjById = byId(adjs!),
    trById = byId(trs!),
    retById = byId(rets!);
  t.ok(trls!.length > 0 && retls!.length > 0, 'the activity transferred and returned stock');
  const parts = new Map<number, any[]>();
  for (const x of comps!) parts.set(x.bundle_id, [...(parts.get(x.bundle_id) ?? []), x]);
  const expand = (vid: number, q: Decimal, out: Map<number, Decimal>) => {
    const v = variants.get(vid);
    if (!v) return;
    if (v.composite) {
      for (const p of parts.get(vid) ?? []) expand(p.component_id, q.times(p.quantity), out);
      return;
    }
    if (v.manage_stock !== false) out.set(vid, (out.get(vid) ?? new Decimal(0)).plus(q));
  };
  const add = (m: Map<string, Decimal>, vid: number, loc: number, q: Decimal) => {
    const e = new Map<number, Decimal>();
    expand(vid, q, e);
    for (const [id, x] of e) m.set(`${id}:${loc}`, (m.get(`${id}:${loc}`) ?? new Decimal(0)).plus(x));
  };
  const shipped = new Map<number, Decimal>();
  const onHand = new Map<string, Decimal>();
  for (const f of fls!) {
    const ful = fulById.get(f.fulfillment_id)!;
    if (ful.status !== 'fulfilled') continue;
    shipped.set(f.order_line_item_id, (shipped.get(f.order_line_item_id) ?? new Decimal(0)).plus(f.quantity));
    add(onHand, f.variant_id, ful.stock_location_id, new Decimal(f.quantity).neg());
  }
  const committed = new Map<string, Decimal>();
  for (const o of orders!) {
    if (o.status !== 'active' && o.status !== 'finalized') continue;
    for (const id of o.order_line_item_ids) {
      const l = lineById.get(id)!;
      const open = new Decimal(l.quantity).minus(shipped.get(id) ?? 0);
      if (!l.freeform && open.gt(0)) add(committed, l.variant_id, o.stock_location_id, open);
    }
  }
  for (const a of adjls!) add(onHand, a.variant_id, adjById.get(a.stock_adjustment_id)!.stock_location_id, new Decimal(a.quantity));
  for (const l of trls!) {
    const tr = trById.get(l.stock_transfer_id)!;
    if (tr.status !== 'received') continue;
    add(onHand, l.variant_id, tr.source_location_id, new Decimal(l.quantity).neg());
    add(onHand, l.variant_id, tr.destination_location_id, new Decimal(l.quantity));
  }
  for (const l of retls!) {
    const r = retById.get(l.fulfillment_return_id)!;
    if (r.status === 'received') add(onHand, l.variant_id, r.location_id, new Decimal(l.quantity));
  }
  for (const l of pols!) {
    const po = poById.get(l.purchase_order_id)!;
    if (po.status === 'received') add(onHand, l.variant_id, po.stock_location_id, new Decimal(l.quantity));
  }
  let checked = 0,
    wrongCommitted = 0,
    wrongOnHand = 0;
  for (const v of vs!) {
    const seeded = before.get(v.id);
    if (v.composite || !seeded) continue;
    for (const l of v.locations) {
      const key = `${v.id}:${l.location_id}`;
      checked++;
      if (!new Decimal(l.committed ?? 0).eq(committed.get(key) ?? 0)) wrongCommitted++;
      const start = seeded.locations.find((x: any) => x.location_id === l.location_id)?.stock_on_hand ?? '0';
      if (!new Decimal(start).plus(onHand.get(key) ?? 0).eq(l.stock_on_hand)) wrongOnHand++;
    }
  }
  t.ok(checked > 80);
  t.equal(wrongCommitted, 0, 'committed = unshipped quantities of active and finalized orders');
  t.equal(wrongOnHand, 0, 'on hand = seeded + adjustments + receipts + transfers + returns - shipments');
});
