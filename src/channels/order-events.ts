// What happens to a channel's orders at the service, as events the channel is told (its feed and destination):
// order.imported / order.import_failed (from the push operation), order.packed and order.shipped (one per
// fulfilment; tracking changed on a shipped one later is order.tracking_updated), order.invoiced (one per
// invoice), order.paid, order.voided, order.returned and order.return_received (one per return), from what the
// mirror shows.
//
// Each event has a key within its order (packed:<fulfilment id>, ...) kept on the channel order's mapping, so
// however often a write, a replay or a sweep tells of the same state, it becomes an event once; all of it happens in
// the transaction of the write that learned it, so a crash loses or doubles nothing. Events of one derivation are
// ordered by their time on the service, so for one order they come in the order they happened.
//
// The service announces fulfilments, returns, invoices and payments, but not a void, tracking added later or a
// return received later: an imported order is read back (watched) a minute after its import, then less often as
// it ages, and at once when a variant of one of its lines moves (a void releases committed stock).
import { Decimal } from 'decimal.js';
import { CHANNEL_ORDER } from '../catalog/index.ts';
import { idsIn, type Fields } from '../catalog/records.ts';
import type { Executor } from '../db/index.ts';
import {
  insertOrderEvents,
  lockMappedOrders,
  noteAnnounced,
  orderFacts,
  eventTimeKey,
  latestEventTimes,
  unknownDocumentsOf,
  watchedOrdersWithVariants,
  type MappedOrder,
  type NewOrderEvent,
  type OrderFacts,
} from '../db/channel-order-events.ts';
import type { Mark } from '../db/pending.ts';
import { deliveriesFlowing } from '../db/deliveries.ts';
import type { OrderEventType } from '../db/schema.ts';

/** An event as derived, before it has an id. */
export interface DerivedEvent {
  type: OrderEventType;
  key: string;
  at: Date;
  data: Record<string, unknown>;
}

// Ties at the same service second are told in the order an order lives.
const RANK: Record<OrderEventType, number> = {
  'order.imported': 0,
  'order.import_failed': 0,
  'order.packed': 1,
  'order.shipped': 2,
  'order.tracking_updated': 3,
  'order.invoiced': 4,
  'order.paid': 5,
  'order.returned': 6,
  'order.return_received': 7,
  'order.voided': 8,
};

const time = (...candidates: (string | Date | null | undefined)[]): Date => {
  for (const c of candidates) {
    if (!c) continue;
    const d = c instanceof Date ? c : new Date(c);
    if (!Number.isNaN(d.getTime())) return d;
  }
  return new Date();
};

const LIVE = (status: string | null) => status !== 'void' && status !== 'deleted' && status !== 'gone';

/**
 * How long an event waits for the shipments that came before it to be read (a return for the shipment of its goods,
 * an invoice or a payment for the shipments the order says it has) before it is told anyway: goods shipped before the
 * import, or a fulfilment the service never lets us read. Within it, the follow-up reads and the watch find them.
 */
export const WAITS_FOR_SHIPMENTS_MS = 10 * 60_000;

/**
 * Whether the shipments told (or told in this derivation) carry a return's goods: each of its lines' quantity is
 * within what fulfilled fulfilments shipped of that order line (a line without its order line: any shipment).
 */
function shipmentsCover(ret: OrderFacts['returns'][number], shipped: OrderFacts['fulfillments']): boolean {
  if (!shipped.length) return false;
  const byLine = new Map<number, Decimal>();
  for (const f of shipped)
    for (const l of f.lines)
      if (l.order_line_item_id !== null)
        byLine.set(l.order_line_item_id, (byLine.get(l.order_line_item_id) ?? new Decimal(0)).plus(l.quantity));
  return ret.lines.every((l) => l.order_line_item_id === null || (byLine.get(l.order_line_item_id) ?? new Decimal(0)).gte(l.quantity));
}

/**
 * The events an order's mirrored state calls for that `announced` has not told yet, in the order they happened,
 * and the keys to remember with them (a shipment's tracking is remembered so that a later change of it is told).
 * Events learnt ahead of the shipments that came before them wait for those (`waiting`: the fulfilments to read,
 * and when the events are told anyway, WAITS_FOR_SHIPMENTS_MS on), so that across writes a channel hears them in
 * the order they happened: a return whose goods no known shipment carries, and the order's own invoice and payment
 * while the order names fulfilments the mirror lacks or calls itself shipped with some not shipped in the mirror.
 * Pure: the mirror's state and the time in, events out.
 */
export function dueEvents(
  f: OrderFacts,
  announced: readonly string[],
  now: Date = new Date(),
): { events: DerivedEvent[]; keys: string[]; waiting: { fulfillments: number[]; until: Date } | null } {
  const told = new Set(announced);
  const events: DerivedEvent[] = [];
  const keys: string[] = [];
  const add = (e: DerivedEvent, ...also: string[]) => {
    if (told.has(e.key)) return;
    told.add(e.key);
    events.push(e);
    keys.push(e.key, ...also.filter((k) => !told.has(k)));
    for (const k of also) told.add(k);
  };
  if (LIVE(f.status) || f.status === 'void')
    add({ type: 'order.imported', key: 'imported', at: time(f.created_at), data: { status: f.status } });
  for (const ful of f.fulfillments) {
    if (!LIVE(ful.status)) continue;
    const lines = ful.lines.map((l) => ({ sku: l.sku, quantity: l.quantity }));
    const base = { fulfillment_id: ful.id, stock_location_id: ful.stock_location_id, lines };
    add({
      type: 'order.packed',
      key: `packed:${ful.id}`,
      at: time(ful.created_at, ful.packed_at),
      data: { ...base, packed_at: ful.packed_at },
    });
    if (ful.status !== 'fulfilled') continue;
    const tracking = { tracking_company: ful.tracking_company, tracking_number: ful.tracking_number, tracking_url: ful.tracking_url };
    const trackingKey = `tracking:${ful.id}:${ful.tracking_company ?? ''}:${ful.tracking_number ?? ''}:${ful.tracking_url ?? ''}`;
    if (!told.has(`shipped:${ful.id}`)) {
      add(
        { type: 'order.shipped', key: `shipped:${ful.id}`, at: time(ful.shipped_at, ful.updated_at), data: { ...base, ...tracking } },
        trackingKey,
      );
    } else if (ful.tracking_number || ful.tracking_url || ful.tracking_company) {
      add({
        type: 'order.tracking_updated',
        key: trackingKey,
        at: time(ful.updated_at),
        data: { fulfillment_id: ful.id, ...tracking },
      });
    }
  }
  let waiting: { fulfillments: number[]; until: Date } | null = null;
  /** Whether events made at `at` wait for these fulfilments' reads (noted in `waiting`), or are told now. */
  const waitsFor = (fulfillments: number[], at: Date): boolean => {
    const until = new Date(at.getTime() + WAITS_FOR_SHIPMENTS_MS);
    if (now >= until) return false;
    const earlier: Date | undefined = (waiting as { until: Date } | null)?.until;
    waiting = {
      fulfillments: [...new Set([...((waiting as { fulfillments: number[] } | null)?.fulfillments ?? []), ...fulfillments])],
      until: earlier && earlier < until ? earlier : until,
    };
    return true;
  };
  const known = new Set(f.fulfillments.map((ful) => ful.id));
  const unshipped = f.fulfillments.filter((ful) => LIVE(ful.status) && ful.status !== 'fulfilled').map((ful) => ful.id);
  const unread = [...(f.fulfillment_ids ?? []).filter((id) => !known.has(id)), ...(f.status === 'fulfilled' ? unshipped : [])];
  const orderWaits = unread.length > 0 && waitsFor(unread, time(f.updated_at));
  const invoices = orderWaits ? [] : Object.entries(f.invoice_numbers ?? {});
  for (const [id, number] of invoices)
    add({
      type: 'order.invoiced',
      key: `invoiced:${id}`,
      at: time(f.updated_at),
      data: { invoice_id: Number(id), invoice_number: number },
    });
  if (!orderWaits && !invoices.length && f.invoice_status && f.invoice_status !== 'uninvoiced')
    add({ type: 'order.invoiced', key: 'invoiced', at: time(f.updated_at), data: { invoice_status: f.invoice_status } });
  if (!orderWaits && f.payment_status === 'paid') add({ type: 'order.paid', key: 'paid', at: time(f.updated_at), data: {} });
  const shipped = f.fulfillments.filter((ful) => ful.status === 'fulfilled');
  for (const ret of f.returns) {
    if (!LIVE(ret.status)) continue;
    if (!told.has(`returned:${ret.id}`) && !shipmentsCover(ret, shipped) && waitsFor(unshipped, time(ret.created_at))) continue;
    // Told after the shipments it returns goods of, whatever the service's clocks say.
    const lines = new Set(ret.lines.map((l) => l.order_line_item_id));
    const from = shipped.filter((ful) => lines.has(null) || ful.lines.some((l) => lines.has(l.order_line_item_id)));
    const at = new Date(Math.max(time(ret.created_at).getTime(), ...from.map((ful) => time(ful.shipped_at, ful.updated_at).getTime())));
    add({
      type: 'order.returned',
      key: `returned:${ret.id}`,
      at,
      data: {
        return_id: ret.id,
        status: ret.status,
        credit_note_number: ret.credit_note_number,
        location_id: ret.location_id,
        lines: ret.lines.map((l) => ({ sku: l.sku, quantity: l.quantity })),
      },
    });
    // The goods came back to a location (a return received later, no webhook says so: the watch reads it).
    if (ret.status === 'received')
      add({
        type: 'order.return_received',
        key: `return_received:${ret.id}`,
        at: new Date(Math.max(time(ret.received_at).getTime(), at.getTime())),
        data: {
          return_id: ret.id,
          location_id: ret.location_id,
          received_at: ret.received_at,
          lines: ret.lines.map((l) => ({ sku: l.sku, quantity: l.quantity })),
        },
      });
  }
  // A deleted order (the service allows it before shipping) is as good as voided for the channel.
  if (ENDED.includes(f.status ?? '')) add({ type: 'order.voided', key: 'voided', at: time(f.updated_at), data: { status: f.status } });
  const order = events.map((e, i) => ({ e, i }));
  order.sort((a, b) => a.e.at.getTime() - b.e.at.getTime() || RANK[a.e.type] - RANK[b.e.type] || a.i - b.i);
  return { events: order.map((o) => o.e), keys, waiting };
}

/**
 * An order's events never go back in time: one learnt by a later write, stamped earlier than what the channel was
 * already told of the order (the service's clocks differ, a record read late), is told at that latest time instead.
 */
export function notBefore(events: DerivedEvent[], told: Date | null): DerivedEvent[] {
  let last = told?.getTime() ?? Number.NEGATIVE_INFINITY;
  return events.map((e) => {
    const at = Math.max(e.at.getTime(), last);
    last = at;
    return at === e.at.getTime() ? e : { ...e, at: new Date(at) };
  });
}

const ENDED = ['void', 'deleted', 'gone'];

/**
 * When a channel order imported at `importedAt` is read back next, by its state: one not shipped yet (a void may
 * come) each minute in its first hour, every 5 minutes in its first day, then every 30; a shipped one (tracking
 * or a return may follow) every 30 minutes in its first day, then every 2 hours; none after 30 days or once it
 * is voided or deleted. While deliveries flow (`flowing`) and the mirror has the order, the service's own
 * announcements bring a shipment or a return when it happens, and a void shows in the stock of the order's lines,
 * which is announced (a drain that writes those variants reads the order then, which needs the order and its lines
 * mirrored): a first hour's read-back every 5 minutes is enough. Every read of the order, by any road, counts as its
 * read-back.
 */
export function nextWatch(importedAt: Date, now: Date, order: { status: string | null }, flowing = false): Date | null {
  const age = now.getTime() - new Date(importedAt).getTime();
  if (ENDED.includes(order.status ?? '') || age > 30 * 86_400_000) return null;
  const hour = 3_600_000;
  const relaxed = flowing && order.status !== null;
  const minutes = order.status === 'fulfilled' ? (age < 24 * hour ? 30 : 120) : age < hour && !relaxed ? 1 : age < 24 * hour ? 5 : 30;
  return new Date(now.getTime() + minutes * 60_000);
}

/**
 * Records the events the mirror's state of these orders calls for, for those that are channel orders, in the
 * caller's transaction (the one that wrote the mirror). Answers the channels that got events (to wake their senders)
 * and the reads a waiting return calls for: the order's fulfilments not shipped in the mirror, or the order itself
 * (which names them) when the mirror knows none. `orderRead`: the write read the orders themselves, which is what
 * their watch would do, so their next read-back moves on from now (by any road, an order is read once per interval).
 * `knownFlowing`: deliveriesFlowing for the connection, when the caller asked it already in this transaction.
 */
export async function recordOrderEvents(
  tx: Executor,
  connectionId: number,
  orderIds: number[],
  orderRead = false,
  knownFlowing?: boolean,
): Promise<{ channels: number[]; followUps: Mark[] }> {
  const ids = [...new Set(orderIds.filter(Number.isSafeInteger))];
  const mapped = await lockMappedOrders(tx, connectionId, ids);
  const followUps: Mark[] = [];
  if (!mapped.length) return { channels: [], followUps };
  const facts = await orderFacts(
    tx,
    connectionId,
    mapped.map((m) => m.order_id),
  );
  const rows: NewOrderEvent[] = [];
  const now = new Date();
  const toldUntil = await latestEventTimes(tx, connectionId, mapped);
  // Whether deliveries flow (the watch's interval) is asked only for an order that has something to note, once.
  let flowing = knownFlowing;
  for (const m of mapped) {
    const f = facts.get(m.order_id);
    if (!f || m.channel_id === null) continue;
    const due = dueEvents(f, m.announced, now);
    if (due.waiting) {
      const reads = due.waiting.fulfillments.length
        ? due.waiting.fulfillments.map((id) => ({ resource: 'fulfillment', id }))
        : [{ resource: CHANNEL_ORDER, id: m.order_id }];
      for (const r of reads) followUps.push({ connectionId, ...r, reason: 'order.return-waits-for-shipment' });
    }
    if (!due.keys.length && !due.waiting && !orderRead) continue;
    rows.push(...notBefore(due.events, toldUntil.get(eventTimeKey(m)) ?? null).map((e) => eventRow(m, f, e)));
    flowing ??= await deliveriesFlowing(tx, connectionId);
    // A waiting return is read back by the time it is told anyway, at the latest.
    const next = nextWatch(m.created_at, now, f, flowing);
    await noteAnnounced(tx, {
      connectionId,
      channel: m.channel,
      channelOrderId: m.channel_order_id,
      keys: due.keys,
      watchAt: due.waiting && (!next || due.waiting.until < next) ? due.waiting.until : next,
    });
  }
  return { channels: await insertOrderEvents(tx, rows), followUps };
}

// The field of a record of these resources that names the order a write of it may have moved on.
const ORDER_FIELD: Record<string, string> = { order: 'id', fulfillment: 'order_id', fulfillment_return: 'order_id', invoice: 'order_id' };

/** A write to the mirror, as far as channel orders care. */
export interface WriteOfOrders {
  connectionId: number;
  /** The resource written: its catalogue name. */
  resource: string;
  /** What the read returned, written or not. */
  records: readonly Fields[];
  /** Ids the write inserted or changed. */
  applied: number[];
  /** Ids the service no longer has. */
  gone: number[];
  /** Whether the write asks for follow-up reads (drains do; sweeps read everything anyway). */
  followUps: boolean;
}

/**
 * The channels' part after a write to the mirror (src/sync/after-write.ts hands it every write), in the write's
 * transaction: the order events the orders it touched call for (an order gone from the service is told as voided),
 * and, for a stock move on a line of a watched channel order, a read of that order (a void releases committed stock
 * and no webhook tells of it). Answers the channels that got events and the reads it calls for.
 */
export async function orderEventsAfterWrite(tx: Executor, w: WriteOfOrders): Promise<{ orderEvents: number[]; followUps: Mark[] }> {
  const field = ORDER_FIELD[w.resource];
  const orderIds = [...(field ? idsIn(w.records, field) : []), ...(w.resource === 'order' ? w.gone : [])];
  const orderRead = w.resource === 'order' || w.resource === CHANNEL_ORDER;
  const recorded = orderIds.length ? await recordOrderEvents(tx, w.connectionId, orderIds, orderRead) : { channels: [], followUps: [] };
  const orderEvents = recorded.channels;
  const followUps: Mark[] = w.followUps ? [...recorded.followUps] : [];
  if (w.resource === 'variant' && w.followUps && w.applied.length) {
    for (const id of await watchedOrdersWithVariants(tx, w.connectionId, w.applied))
      followUps.push({ connectionId: w.connectionId, resource: CHANNEL_ORDER, id, reason: 'order.watch' });
  }
  // A channel order read (by its watch, or a delivery) names its fulfilments and returns: those the mirror has not
  // seen are read too, so a shipment or a return reaches the channel with no webhook about it.
  if ((w.resource === CHANNEL_ORDER || w.resource === 'order') && w.followUps) {
    const ids = (r: Fields, f: string) => (Array.isArray(r[f]) ? (r[f] as unknown[]).map(Number).filter(Number.isSafeInteger) : []);
    const named = w.records.map((r) => ({ orderId: Number(r.id), fulfillments: ids(r, 'fulfillment_ids'), returns: ids(r, 'return_ids') }));
    for (const d of await unknownDocumentsOf(tx, w.connectionId, named))
      followUps.push({ connectionId: w.connectionId, resource: d.resource, id: d.id, reason: `${d.resource}.of-order` });
  }
  return { orderEvents, followUps };
}

const eventRow = (m: MappedOrder, f: Pick<OrderFacts, 'order_id' | 'order_number'> | null, e: DerivedEvent): NewOrderEvent => ({
  connection_id: m.connection_id,
  channel_id: m.channel_id!,
  channel_order_id: m.channel_order_id,
  order_id: f?.order_id ?? m.order_id,
  order_number: f?.order_number ?? m.order_number,
  type: e.type,
  key: e.key,
  at: e.at,
  data: JSON.stringify(e.data),
});

/**
 * An import of a channel order reached the service (its mapping was just made in `tx`): order.imported with the
 * status the service answered, then whatever the mirror already shows of the order.
 */
export async function recordImported(
  tx: Executor,
  o: { connectionId: number; orderId: number; status: unknown; orderNumber: unknown; createdAt?: unknown },
): Promise<number[]> {
  const [m] = await lockMappedOrders(tx, o.connectionId, [o.orderId]);
  const touched: number[] = [];
  let flowing: boolean | undefined;
  if (m && m.channel_id !== null && !m.announced.includes('imported')) {
    const e: DerivedEvent = {
      type: 'order.imported',
      key: 'imported',
      at: time(typeof o.createdAt === 'string' ? o.createdAt : null),
      data: { status: typeof o.status === 'string' ? o.status : null },
    };
    const number = typeof o.orderNumber === 'string' ? o.orderNumber : null;
    touched.push(...(await insertOrderEvents(tx, [eventRow(m, { order_id: o.orderId, order_number: number }, e)])));
    await noteAnnounced(tx, {
      connectionId: o.connectionId,
      channel: m.channel,
      channelOrderId: m.channel_order_id,
      keys: ['imported'],
      watchAt: nextWatch(m.created_at, new Date(), { status: null }, (flowing = await deliveriesFlowing(tx, o.connectionId))),
    });
  }
  return [...new Set([...touched, ...(await recordOrderEvents(tx, o.connectionId, [o.orderId], false, flowing)).channels])];
}

/** An import of a channel order failed for good: order.import_failed with the reason and the field problems. */
export async function recordImportFailed(
  tx: Executor,
  o: { connectionId: number; channelId: number; channelOrderId: string; operationId: number; reason: string | null; problems: unknown },
): Promise<number[]> {
  return insertOrderEvents(tx, [
    {
      connection_id: o.connectionId,
      channel_id: o.channelId,
      channel_order_id: o.channelOrderId,
      order_id: null,
      order_number: null,
      type: 'order.import_failed',
      key: `import_failed:${o.operationId}`,
      at: new Date(),
      data: JSON.stringify({ operation_id: o.operationId, reason: o.reason, problems: o.problems ?? null }),
    },
  ]);
}
