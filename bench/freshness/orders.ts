// The number a channel feels for its orders: how long after a shipment, or a void, at the service does
// the channel's endpoint get the POST carrying order.shipped, or order.voided. The world of bench/freshness/run.ts
// (one sandbox account at time scale 1 and the real 300 requests / 300 s, a receiver and a worker as separate
// processes, merchant activity of all kinds at each rate), plus a channel `webshop` whose destination (kinds both)
// is an endpoint in the benchmark that verifies every POST with the `standardwebhooks` package. The channel
// imports orders through commerce-sync at a steady rate (push import-order, enqueued as POST /api/operations does),
// and the merchant's warehouse ships them (whole, or in parts: a line shipped at once, the others packed and
// shipped later, each with tracking) or voids them, through the service's API under an application of its own (its
// own rate window: the warehouse's requests do not spend commerce-sync's budget, and are left out of req/min).
// The activity acts on the imported orders too (it picks among all recent orders); those count the same.
//
// Measured from the sandbox's own record: a shipment from its fulfilment's shipped_at, a void from its order's
// updated_at, a packing from its fulfilment's created_at, to the arrival at the endpoint of the POST carrying the
// event; an import from its enqueueing to order.imported. The stock lag is measured as run.ts measures it (bench/
// freshness/lag.ts), in the same run, with the POST of each quantity change; --no-orders runs the same world with
// no imports and no warehouse (the anchor), --anchor runs the anchor and then the orders at each rate.
//
//   node_modules/.bin/node bench/freshness/orders.ts [--rates 2,10] [--minutes 5] [--imports-per-minute 6,2]
//       [--profile spec|documented] [--clock-skew=SECONDS] [--no-orders | --anchor] [--variants 500]
//       [--sweep-minutes 5] [--grace-seconds 180] [--list-order created|updated] [--seed 1]
//
// --webhooks-lost drops every delivery from the moment the channel is set up (the subscriptions stay in place):
// what the watch carries alone. A third of the orders shipped whole get a unit returned 5 to 15 s later, so that
// returns are measured too (from the return's created_at).
//
// --imports-per-minute gives one rate of channel orders for every operations rate (or one for all). The last table
// holds the issue's targets: the stock p95 beside orders against the anchor's, shipment and void to the channel's
// POST, and the requests a channel order costs the account over its life: the order-related requests of the run
// (orders, line items, fulfilments, returns, invoices, payments) less the anchor's in the same time, per channel
// order imported (the merchant's own activity makes and reads orders too; the anchor pays that part).
//
// After the load stops, the stock moves get a minute to be caught up and the order events --grace-seconds to
// arrive; what has not arrived by then is `open`. Set DATABASE_URL to use an existing PostgreSQL.
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { channelEndpoint } from '../../test/support/channel-endpoint.ts';
import type { ListOrder } from '@commerce-sync/sandbox';
import { ClientState } from '../../src/api/client-state.ts';
import { setDestination } from '../../src/channels/destinations.ts';
import type { Db } from '../../src/db/index.ts';
import { createLogger } from '../../src/log.ts';
import { enqueueOperation } from '../../src/push/enqueue.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { addChannel } from '../../src/channels/channels.ts';
import { postLags, StockLag, type StockArrivals } from './lag.ts';
import { explainTail } from './tail.ts';
import { cpuSeconds, percentile, postgresCpuSeconds, settled, startWorld, takeMoves, type Account, type World } from './world.ts';

const { values: args } = parseArgs({
  options: {
    rates: { type: 'string', default: '2,10' },
    minutes: { type: 'string', default: '5' },
    variants: { type: 'string', default: '500' },
    profile: { type: 'string' },
    'sweep-minutes': { type: 'string', default: '5' },
    'clock-skew': { type: 'string', default: '0' },
    'list-order': { type: 'string' },
    'imports-per-minute': { type: 'string', default: '6,2' },
    'grace-seconds': { type: 'string', default: '180' },
    'no-orders': { type: 'boolean', default: false },
    'webhooks-lost': { type: 'boolean', default: false },
    anchor: { type: 'boolean', default: false },
    seed: { type: 'string', default: '1' },
  },
});
const rates = args.rates!.split(',').map(Number);
const minutes = Number(args.minutes);
const sweepMinutes = Number(args['sweep-minutes']);
const clockSkew = Number(args['clock-skew']);
const importRates = args['imports-per-minute']!.split(',').map(Number);
if (importRates.length !== 1 && importRates.length !== rates.length)
  throw new Error('--imports-per-minute takes one number, or one per rate of --rates');
const importsPerMinuteAt = (rate: number) => importRates[importRates.length === 1 ? 0 : rates.indexOf(rate)]!;
const graceMs = Number(args['grace-seconds']) * 1000;
if (!Number.isFinite(clockSkew)) throw new Error('--clock-skew takes a number of seconds');
if (rates.some((r) => !(r > 0)) || !(minutes > 0)) throw new Error('--rates takes positive numbers, --minutes a positive number');
if (importRates.some((n) => !(n > 0)) || !(graceMs >= 0))
  throw new Error('--imports-per-minute takes positive numbers, --grace-seconds zero or more');
if (args['no-orders'] && args.anchor)
  throw new Error('--no-orders runs the anchor alone, --anchor the anchor and then the orders: give one');
type Mode = 'anchor' | 'orders';
const modes: Mode[] = args['no-orders'] ? ['anchor'] : args.anchor ? ['anchor', 'orders'] : ['orders'];
const log = createLogger('warn', { destination: process.stderr, pretty: false });
const CHANNEL = 'webshop';
const MERCHANT_APP = 2;
const s = (ms: number) => (Number.isFinite(ms) ? (ms / 1000).toFixed(1) : '-');

console.log(
  `freshness of orders: ${minutes} min per rate, rates ${rates.join(', ')} operations/s, ${args.variants} variants, ` +
    `300 requests / 300 s, time scale 1${args.profile ? `, sandbox profile ${args.profile}` : ''}` +
    `, API clock ${clockSkew >= 0 ? '+' : ''}${clockSkew} s${args['list-order'] ? `, lists by ${args['list-order']}` : ''}` +
    `${args['webhooks-lost'] ? ', every delivery lost' : ''}, ${modes.includes('orders') ? `${rates.map((r) => `${importsPerMinuteAt(r)} imports/min at ${r}/s`).join(', ')}` : 'no orders'}${modes.length > 1 ? ' (and the anchor without)' : ''}`,
);
console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(1)} GB, node ${process.version}`);

// ---- the channel's endpoint ------------------------------------------------------------------------------------

interface Told {
  id: number;
  type: string;
  orderId: number | null;
  at: number;
  arrived: number;
  data: any;
}

/** What the endpoint heard (cleared per run): quantity changes per variant, order events by what they tell. */
const heard = {
  stock: new Map() as StockArrivals,
  /** By `${type}:${order_id}:${fulfillment_id}` (imported: by channel order id): the first POST that told it. */
  orders: new Map<string, Told>(),
  ids: new Set<number>(),
  /** The same event id in two POSTs (a retry after a 2xx would be one). */
  repeated: 0,
  /** Two events (two ids) telling the same thing: the exactly-once promise broken. */
  doubled: [] as string[],
  posts: { stock: 0, orders: 0 },
};
const secret = `whsec_${randomBytes(32).toString('base64')}`;
const eventKey = (type: string, orderId: unknown, part: unknown) => `${type}:${orderId ?? ''}:${part ?? ''}`;
const { server: endpoint, refused } = channelEndpoint(secret, ({ payload, arrived }) => {
  if (payload.type === 'channel.stock.changed') {
    heard.posts.stock++;
    for (const c of payload.data.changes) {
      const list = heard.stock.get(c.variant_id) ?? [];
      list.push({ changeAt: Date.parse(c.at), arrived });
      heard.stock.set(c.variant_id, list);
    }
  } else if (payload.type === 'channel.orders.changed') {
    heard.posts.orders++;
    for (const e of payload.data.events) {
      if (heard.ids.has(e.id)) {
        heard.repeated++;
        continue;
      }
      heard.ids.add(e.id);
      const key =
        e.type === 'order.imported'
          ? eventKey(e.type, e.channel_order_id, '')
          : eventKey(e.type, e.order_id, e.data?.fulfillment_id ?? e.data?.return_id ?? e.data?.invoice_id);
      if (heard.orders.has(key)) heard.doubled.push(key);
      else heard.orders.set(key, { id: e.id, type: e.type, orderId: e.order_id, at: Date.parse(e.at), arrived, data: e.data });
    }
  }
});
await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', r));
const endpointUrl = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/channel`;

// ---- the merchant's warehouse and the channel's imports ----------------------------------------------------------

/** mulberry32: the plan of each run repeats for a seed. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]! };
}

/** The sandbox's route names (GET stats by_route): ids as :id. */
const routeOf = (method: string, path: string) => `${method} ${path.replace(/\/\d+(?=\/|$)/g, '/:id')}`;

/** The warehouse: the service's API under an application of its own; counts its requests by route. */
function warehouse(account: Account, token: string) {
  const routes = new Map<string, number>();
  /** Refusals by what the service said (the activity got there first: shipped, packed or voided the order). */
  const refused = new Map<string, number>();
  let labels = 0;
  /** The answer's body ({} when none, as a PUT answers 204), or null when the service refused (422, 404). */
  const call = async (method: string, path: string, body?: unknown): Promise<any> => {
    routes.set(routeOf(method, path), (routes.get(routeOf(method, path)) ?? 0) + 1);
    const res = await fetch(`${account.sandbox.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status === 422 || res.status === 404) {
      let why = text.slice(0, 80);
      try {
        why = JSON.parse(text).message ?? why;
      } catch {
        /* as it came */
      }
      const key = `${routeOf(method, path)}: ${why}`;
      refused.set(key, (refused.get(key) ?? 0) + 1);
      return null;
    }
    if (!res.ok) throw new Error(`warehouse ${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : {};
  };
  const label = () => {
    const n = ++labels;
    const number = `BN${String(n).padStart(10, '0')}`;
    return { tracking_company: 'DHL', tracking_number: number, tracking_url: `https://www.dhl.com/track?tracking-number=${number}` };
  };
  return {
    routes,
    refused,
    /** Everything not packed yet, packed and shipped at once with its tracking. */
    async shipWhole(orderId: number): Promise<number[]> {
      const r = await call('POST', '/fulfillments', { fulfillment: { order_id: orderId, status: 'fulfilled', ...label() } });
      return r ? [Number(r.fulfillment.id)] : [];
    },
    /** Some lines shipped at once (a part), with tracking. */
    async shipLines(orderId: number, lines: { id: number; quantity: string }[]): Promise<number | null> {
      const r = await call('POST', '/fulfillments', {
        fulfillment: {
          order_id: orderId,
          status: 'fulfilled',
          fulfillment_line_items: lines.map((l) => ({ order_line_item_id: l.id, quantity: l.quantity })),
          ...label(),
        },
      });
      return r ? Number(r.fulfillment.id) : null;
    },
    /** Some lines packed, to ship later (shipPacked). */
    async pack(orderId: number, lines: { id: number; quantity: string }[]): Promise<number | null> {
      const r = await call('POST', '/fulfillments', {
        fulfillment: { order_id: orderId, fulfillment_line_items: lines.map((l) => ({ order_line_item_id: l.id, quantity: l.quantity })) },
      });
      return r ? Number(r.fulfillment.id) : null;
    },
    /** A packed fulfilment shipped: PUT to fulfilled with its tracking, as a 3PL does. */
    async shipPacked(fulfillmentId: number): Promise<boolean> {
      return (await call('PUT', `/fulfillments/${fulfillmentId}`, { fulfillment: { status: 'fulfilled', ...label() } })) !== null;
    },
    /** One unit of a line returned (the goods on their way back). */
    async returnOne(orderId: number, lineId: number): Promise<number | null> {
      const r = await call('POST', '/fulfillment_returns', {
        fulfillment_return: { order_id: orderId, fulfillment_return_line_items: [{ order_line_item_id: lineId, quantity: '1' }] },
      });
      return r ? Number(r.fulfillment_return.id) : null;
    },
    async void(orderId: number): Promise<boolean> {
      return (await call('POST', `/orders/${orderId}/actions/void`, {})) !== null;
    },
  };
}

interface Imported {
  opId: number;
  channelOrderId: string;
  enqueuedAt: number;
  orderId?: number;
  lines?: { id: number; quantity: string }[];
  state: 'queued' | 'confirmed' | 'failed';
}

/**
 * The channel's imports and the warehouse's work on them, during one run: an import every 60 / --imports-per-minute s,
 * and 10 to 50 s after each is confirmed, a void (1 in 5), a shipment of the whole order (2 in 5), or a shipment in
 * parts (2 in 5: the first line at once, each other line packed 5 s later and shipped 5 to 15 s after that).
 */
async function channelTraffic(world: World, rate: number, stopped: () => boolean) {
  const account = world.accounts[0]!;
  const rng = random(Number(args.seed) * 1000 + rate);
  const { token } = await account.admin('POST', 'tokens', { application_id: MERCHANT_APP });
  const wh = warehouse(account, token);
  const { companies } = await account.admin('GET', 'snapshot?resource=companies');
  const customers = (companies as any[]).filter((c) => c.company_type !== 'supplier' && c.status === 'active').map((c) => Number(c.id));
  const { variants } = await account.admin('GET', 'snapshot?resource=variants');
  const skus = (variants as any[])
    .filter((v) => v.sku && v.status === 'active' && !v.composite && v.manage_stock !== false)
    .map((v) => String(v.sku));
  if (!customers.length || skus.length < 3) throw new Error('the sandbox has no customers or too few plain variants to order');
  const boss = await startBoss(world.database.url, log, { supervise: false, schedule: false, max: 2 });
  const imports: Imported[] = [];
  const tasks: { due: number; run: () => Promise<void> }[] = [];
  const mine = { shipments: new Set<number>(), voids: new Set<number>(), returns: new Set<number>(), dropped: 0 };
  const later = (ms: number, run: () => Promise<void>) => tasks.push({ due: Date.now() + ms, run });

  const plan = (o: Imported) => {
    const orderId = o.orderId!;
    const lines = o.lines!;
    const r = rng.next();
    const delay = 10_000 + rng.next() * 40_000;
    if (r < 0.2)
      later(delay, async () => {
        if (await wh.void(orderId)) mine.voids.add(orderId);
      });
    else if (r < 0.6 || lines.length < 2)
      later(delay, async () => {
        const shipped = await wh.shipWhole(orderId);
        for (const id of shipped) mine.shipments.add(id);
        if (shipped.length && rng.next() < 1 / 3)
          later(5000 + rng.next() * 10_000, async () => {
            const id = await wh.returnOne(orderId, lines[0]!.id);
            if (id !== null) mine.returns.add(id);
          });
      });
    else
      later(delay, async () => {
        const first = await wh.shipLines(orderId, lines.slice(0, 1));
        if (first === null) return;
        mine.shipments.add(first);
        for (const line of lines.slice(1))
          later(5000, async () => {
            const packed = await wh.pack(orderId, [line]);
            if (packed !== null)
              later(5000 + rng.next() * 10_000, async () => {
                if (await wh.shipPacked(packed)) mine.shipments.add(packed);
              });
          });
      });
  };

  let n = 0;
  const importing = (async () => {
    const every = 60_000 / importsPerMinuteAt(rate);
    for (let next = Date.now(); !stopped(); next += every) {
      while (!stopped() && Date.now() < next) await new Promise((r) => setTimeout(r, Math.min(250, next - Date.now())));
      if (stopped()) break;
      const channelOrderId = `WS-${rate}-${++n}`;
      const picked = new Set<string>();
      const count = 2 + Math.floor(rng.next() * 2);
      while (picked.size < count) picked.add(rng.pick(skus));
      const input = {
        channel: CHANNEL,
        channel_order_id: channelOrderId,
        customer: { company_id: rng.pick(customers) },
        currency: 'SGD',
        issued_at: new Date().toISOString().slice(0, 10),
        lines: [...picked].map((sku) => ({ sku, quantity: String(1 + Math.floor(rng.next() * 2)) })),
      };
      const enqueuedAt = Date.now();
      const op = await enqueueOperation({ db: world.db, boss }, 'import-order', input, account.connectionId);
      imports.push({ opId: Number(op.id), channelOrderId, enqueuedAt, state: 'queued' });
    }
  })();

  /** Imports confirmed since the last call get their plan (while the load runs); answers how many are still queued. */
  const follow = async (planning: boolean): Promise<number> => {
    const queued = imports.filter((o) => o.state === 'queued');
    if (!queued.length) return 0;
    const rows = (
      await sql<{ id: string; state: string; result: any; input: any }>`
        SELECT id, state, result, input FROM push_operations WHERE id = ANY(${queued.map((o) => o.opId)}::bigint[])`.execute(world.db)
    ).rows;
    for (const r of rows) {
      const o = queued.find((q) => q.opId === Number(r.id))!;
      if (r.state === 'failed') o.state = 'failed';
      if (r.state !== 'confirmed') continue;
      o.state = 'confirmed';
      o.orderId = Number(r.result.order_id);
      // The service answers the lines in the order they were sent; each was ordered with its quantity.
      const ids = (r.result.order_line_item_ids ?? []) as number[];
      o.lines = ids.map((id, i) => ({ id: Number(id), quantity: String(r.input.lines[i]?.quantity ?? '1') }));
      if (planning && o.lines.length) plan(o);
    }
    return imports.filter((o) => o.state === 'queued').length;
  };

  const working = (async () => {
    while (!stopped()) {
      await follow(true);
      const now = Date.now();
      const due = tasks.filter((t) => t.due <= now);
      for (const t of due) {
        tasks.splice(tasks.indexOf(t), 1);
        await t.run().catch((err) => log.warn({ err }, 'warehouse task failed'));
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    mine.dropped = tasks.length;
  })();

  return {
    imports,
    mine,
    warehouse: wh,
    /** Waits for the loops to end (after `stopped`). */
    async done() {
      await importing;
      await working;
    },
    follow: () => follow(false),
    close: () => stopBoss(boss),
  };
}

/**
 * What the events said, checked: per order, in id order, the events' times never go back (they come as they
 * happened); a packing told before its shipment; every shipment with its lines, and those of the warehouse (which
 * always gives one) with their tracking number.
 */
function checkEvents(warehouseShipments: Set<number>): string[] {
  const byOrder = new Map<number, Told[]>();
  for (const t of heard.orders.values()) if (t.orderId !== null) byOrder.set(t.orderId, [...(byOrder.get(t.orderId) ?? []), t]);
  let backwards = 0;
  let shippedBeforePacked = 0;
  for (const list of byOrder.values()) {
    list.sort((a, b) => a.id - b.id);
    for (let i = 1; i < list.length; i++) if (list[i]!.at < list[i - 1]!.at) backwards++;
    for (const t of list) {
      if (t.type !== 'order.shipped') continue;
      const packed = list.find((p) => p.type === 'order.packed' && p.data?.fulfillment_id === t.data?.fulfillment_id);
      if (!packed || packed.id > t.id) shippedBeforePacked++;
    }
  }
  const shipped = [...heard.orders.values()].filter((t) => t.type === 'order.shipped');
  const noLines = shipped.filter(
    (t) => !Array.isArray(t.data?.lines) || !t.data.lines.length || t.data.lines.some((l: any) => !l.sku),
  ).length;
  const noTracking = shipped.filter((t) => warehouseShipments.has(Number(t.data?.fulfillment_id)) && !t.data?.tracking_number).length;
  return [
    `an order's event earlier on the service than the one before it ${backwards}`,
    `a shipment told without its packing before it ${shippedBeforePacked}`,
    `shipments told without their lines by SKU ${noLines}`,
    `the warehouse's shipments told without their tracking number ${noTracking}`,
  ];
}

// ---- one run ------------------------------------------------------------------------------------------------------

interface Lags {
  n: number;
  sorted: number[];
  open: number;
  atOff: number;
  /** Shipment/void -> its event row, and the event row -> the POST (ms, sorted). */
  toRow: number[];
  rowToPost: number[];
  /** The slowest few: what, when, and the key of its event row. */
  slowest: { what: string; orderId: number; at: number; lag: number; recorded?: number; key: string; resource: string; objectId: number }[];
}

const emptyLags = (): Lags => ({ n: 0, sorted: [], open: 0, atOff: 0, toRow: [], rowToPost: [], slowest: [] });

function summarise(
  items: { what: string; key: string; row: string; orderId: number; at: number; resource: string; objectId: number }[],
  rows: Map<string, number>,
  checkAt: boolean,
): Lags {
  const out = emptyLags();
  const all: Lags['slowest'] = [];
  for (const it of items) {
    out.n++;
    const told = heard.orders.get(it.key);
    const recorded = rows.get(it.row);
    if (recorded !== undefined) out.toRow.push(recorded - it.at);
    if (!told) {
      out.open++;
      all.push({ ...it, lag: Number.POSITIVE_INFINITY, recorded });
      continue;
    }
    out.sorted.push(told.arrived - it.at);
    if (recorded !== undefined) out.rowToPost.push(told.arrived - recorded);
    if (checkAt && Math.abs(told.at - it.at) > 1000) out.atOff++;
    all.push({ ...it, lag: told.arrived - it.at, recorded });
  }
  for (const l of [out.sorted, out.toRow, out.rowToPost]) l.sort((a, b) => a - b);
  out.slowest = all.sort((a, b) => b.lag - a.lag).slice(0, 5);
  return out;
}

/** Why an order event was slow: the deliveries about its record after the fact, and when the mirror last wrote it. */
async function explainOrders(db: Db, connectionId: number, slow: Lags['slowest']): Promise<string[]> {
  const out: string[] = [];
  for (const m of slow) {
    const deliveries = (
      await sql<{ received_at: Date; state: string; event: string | null }>`
        SELECT received_at, state, event FROM webhook_deliveries
        WHERE connection_id = ${connectionId} AND resource = ${m.resource} AND object_id = ${m.objectId}
          AND received_at >= ${new Date(m.at - 1000)} ORDER BY received_at LIMIT 4`.execute(db)
    ).rows;
    const table = m.resource === 'order' ? 'orders' : 'fulfillments';
    const row = (
      await sql<{
        synced_at: Date;
      }>`SELECT synced_at FROM ${sql.table(table)} WHERE connection_id = ${connectionId} AND id = ${m.objectId}`.execute(db)
    ).rows[0];
    const rel = (d: Date | number) => `+${s((d instanceof Date ? d.getTime() : d) - m.at)} s`;
    out.push(
      `${Number.isFinite(m.lag) ? `${s(m.lag)} s` : 'never'} ${m.what} of order ${m.orderId} at ${new Date(m.at).toISOString()}: ` +
        `${deliveries.length ? `deliveries ${deliveries.map((d) => `${d.event ?? '?'} ${rel(d.received_at)} (${d.state})`).join(', ')}` : 'no delivery about it'}` +
        `; ${m.resource} last written ${row ? rel(row.synced_at) : 'never'}; event row ${m.recorded !== undefined ? rel(m.recorded) : 'none'}`,
    );
  }
  return out;
}

interface Result {
  rate: number;
  mode: Mode;
  stock: string[];
  /** The stock moves' p95 (ms); the run's length (ms); commerce-sync's requests, all and by route. */
  stockP95: number;
  elapsed: number;
  requests: number;
  byRoute: Map<string, number>;
  orders?: { shipped: Lags; voided: Lags; returned: Lags; packed: Lags; imported: Lags; notes: string[]; confirmed: number };
}

/** Routes of order work: orders, their line items, fulfilments, returns, invoices, payments. */
const isOrderRoute = (route: string) => /\/(orders|order_line_items|fulfillments|fulfillment_returns|invoices|payments)\b/.test(route);

async function run(rate: number, mode: Mode): Promise<Result> {
  heard.stock.clear();
  heard.orders.clear();
  heard.ids.clear();
  heard.repeated = 0;
  heard.doubled = [];
  refused.length = 0;
  heard.posts = { stock: 0, orders: 0 };
  const world = await startWorld({
    name: `forders${String(rate).replace('.', '_')}${mode === 'anchor' ? 'a' : ''}`,
    accounts: 1,
    variants: Number(args.variants),
    profile: args.profile,
    sandbox: { clockSkewSeconds: clockSkew, ...(args['list-order'] ? { listOrder: args['list-order'] as ListOrder } : {}) },
    // The endpoint listens on loopback, which a channel destination may not reach unless allowed.
    env: { RECONCILE_INTERVAL_MINUTES: String(sweepMinutes), OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' },
    log,
  });
  const account = world.accounts[0]!;
  const label = `${rate}/s${mode === 'anchor' ? ' anchor' : ''}`;
  try {
    await settled(world);
    // The channel and its destination, from now: the endpoint hears what changes from here on, stock and orders.
    const { channel } = await addChannel(world.db, account.connectionId, { name: CHANNEL });
    const channelId = Number(channel.id);
    await setDestination(
      world.db,
      new ClientState().key(world.config),
      channelId,
      {
        url: endpointUrl,
        secret,
        kinds: 'both',
        from: 'now',
      },
      ['127.0.0.1'],
    );
    // Every delivery lost from now on, the subscriptions in place: the watch alone carries the orders' road.
    if (args['webhooks-lost']) await account.admin('POST', 'faults', { deliveries: { drop: 1 } });
    let stopped = false;
    const traffic = mode === 'orders' ? await channelTraffic(world, rate, () => stopped) : null;
    const stats0 = await account.admin('GET', 'stats');
    const start = Date.now();
    const cpu0 = { worker: cpuSeconds(world.worker.pid), pg: postgresCpuSeconds(world.database.postmaster) };
    const lag = new StockLag();
    const cursors = new Map<number, number>();
    await takeMoves(account, cursors); // skip the moves of the set-up
    const load = (async () => {
      let due = 0;
      while (!stopped) {
        due += rate / 10;
        const n = Math.floor(due);
        due -= n;
        if (n > 0) await account.admin('POST', 'activity', { operations: n }).catch(() => {});
        // The warehouse's and the imports' moves are listed too.
        lag.add(account.connectionId, await takeMoves(account, cursors));
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    let nextReport = start + 60_000;
    while (Date.now() - start < minutes * 60_000) {
      await lag.check(world.db);
      if (Date.now() >= nextReport) {
        nextReport += 60_000;
        const imports = traffic?.imports ?? [];
        console.log(
          `  ${label}, minute ${Math.round((Date.now() - start) / 60_000)}: ${lag.times.length} moves, ${lag.open} open ` +
            `(oldest ${s(lag.oldestOpenMs())} s)` +
            (traffic
              ? `; imports ${imports.length} (${imports.filter((o) => o.state === 'confirmed').length} confirmed, ` +
                `${imports.filter((o) => o.state === 'failed').length} failed), warehouse ${traffic.mine.shipments.size} shipments ` +
                `${traffic.mine.voids.size} voids; order events heard ${heard.orders.size}`
              : ''),
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    stopped = true;
    await load;
    await traffic?.done();
    const elapsed = Date.now() - start;
    const stats1 = await account.admin('GET', 'stats');
    const cpu1 = { worker: cpuSeconds(world.worker.pid), pg: postgresCpuSeconds(world.database.postmaster) };
    lag.add(account.connectionId, await takeMoves(account, cursors));

    // What the service did to the imported orders, from its own record (nothing changes there any more).
    let expect: { what: string; key: string; row: string; orderId: number; at: number; resource: string; objectId: number }[] = [];
    const snapshotOrders = async () => {
      if (!traffic) return;
      const confirmed = new Map(traffic.imports.filter((o) => o.orderId !== undefined).map((o) => [o.orderId!, o]));
      const { orders } = await account.admin('GET', 'snapshot?resource=orders');
      const { fulfillments } = await account.admin('GET', 'snapshot?resource=fulfillments');
      expect = [];
      for (const o of traffic.imports)
        if (o.state === 'confirmed')
          expect.push({
            what: 'import',
            key: eventKey('order.imported', o.channelOrderId, ''),
            row: `${o.orderId}:imported`,
            orderId: o.orderId!,
            at: o.enqueuedAt,
            resource: 'order',
            objectId: o.orderId!,
          });
      for (const f of fulfillments as any[]) {
        const orderId = Number(f.order_id);
        if (!confirmed.has(orderId) || f.status === 'void' || f.status === 'deleted') continue;
        const base = { orderId, resource: 'fulfillment', objectId: Number(f.id) };
        expect.push({
          ...base,
          what: 'packing',
          key: eventKey('order.packed', orderId, f.id),
          row: `${orderId}:packed:${f.id}`,
          at: Date.parse(f.created_at),
        });
        if (f.status === 'fulfilled' && f.shipped_at)
          expect.push({
            ...base,
            what: 'shipment',
            key: eventKey('order.shipped', orderId, f.id),
            row: `${orderId}:shipped:${f.id}`,
            at: Date.parse(f.shipped_at),
          });
      }
      const { fulfillment_returns: returns } = await account.admin('GET', 'snapshot?resource=fulfillment_returns');
      for (const r of returns as any[])
        if (confirmed.has(Number(r.order_id)) && r.status !== 'void' && r.status !== 'deleted')
          expect.push({
            what: 'return',
            key: eventKey('order.returned', r.order_id, r.id),
            row: `${r.order_id}:returned:${r.id}`,
            orderId: Number(r.order_id),
            at: Date.parse(r.created_at),
            resource: 'fulfillment_return',
            objectId: Number(r.id),
          });
      for (const o of orders as any[])
        if (confirmed.has(Number(o.id)) && o.status === 'void')
          expect.push({
            what: 'void',
            key: eventKey('order.voided', o.id, ''),
            row: `${o.id}:voided`,
            orderId: Number(o.id),
            at: Date.parse(o.updated_at),
            resource: 'order',
            objectId: Number(o.id),
          });
    };
    // The stock moves get a minute, as in run.ts; the imports still queued are followed, and the order events get
    // the grace to arrive.
    const stockEnd = Date.now() + 60_000;
    const ordersEnd = Date.now() + graceMs;
    let queued = (await traffic?.follow()) ?? 0;
    await snapshotOrders();
    for (;;) {
      const stockOpen = lag.open > 0 && Date.now() < stockEnd;
      const ordersOpen = traffic && Date.now() < ordersEnd && (queued > 0 || expect.some((e) => !heard.orders.has(e.key)));
      if (!stockOpen && !ordersOpen) break;
      if (stockOpen) await lag.check(world.db);
      if (ordersOpen && queued > 0) {
        queued = await traffic.follow();
        if (!queued) await snapshotOrders();
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    const sweeps = (
      await sql<{ n: number }>`SELECT count(*)::int AS n FROM sync_log WHERE action = 'sweep' AND at >= ${new Date(start)}`.execute(
        world.db,
      )
    ).rows[0]!.n;
    const sorted = lag.all();
    // The warehouse's requests were its own application's: not commerce-sync's budget.
    const own = traffic?.warehouse.routes ?? new Map<string, number>();
    const ownTotal = [...own.values()].reduce((a, b) => a + b, 0);
    const requests = stats1.requests.total - stats0.requests.total - ownTotal;
    const byRoute = Object.entries(stats1.requests.by_route as Record<string, number>)
      .map(([r, n]) => [r, n - (stats0.requests.by_route[r] ?? 0) - (own.get(r) ?? 0)] as const)
      .filter(([, n]) => n > 0)
      .sort((a, b) => b[1] - a[1]);
    const orderRequests = byRoute.filter(([r]) => isOrderRoute(r)).reduce((a, [, n]) => a + n, 0);
    const posted = postLags(lag.caught, heard.stock);
    const perMin = (n: number) => (n / (elapsed / 60_000)).toFixed(1);
    const stockRow = [
      String(rate),
      mode === 'anchor' ? 'no' : 'yes',
      String(lag.times.length),
      s(percentile(sorted, 50)),
      s(percentile(sorted, 95)),
      s(percentile(sorted, 99)),
      s(sorted.at(-1) ?? NaN),
      String(lag.open),
      `${s(percentile(posted, 50))} / ${s(percentile(posted, 95))} / ${s(posted.at(-1) ?? NaN)}`,
      perMin(requests),
      perMin(orderRequests),
      String(stats1.rate_limited - stats0.rate_limited),
      `${sweeps}/${Math.floor(minutes / sweepMinutes)}`,
      ((100 * (cpu1.worker - cpu0.worker)) / (elapsed / 1000)).toFixed(1),
      cpu1.pg === null || cpu0.pg === null ? '-' : ((100 * (cpu1.pg - cpu0.pg)) / (elapsed / 1000)).toFixed(1),
    ];
    console.log(`  ${label} requests by route (commerce-sync's): ${byRoute.map(([r, n]) => `${r} ${n}`).join(', ')}`);
    if (ownTotal)
      console.log(`  ${label} the warehouse's requests (its own application): ${[...own].map(([r, n]) => `${r} ${n}`).join(', ')}`);
    console.log(`  ${label} the stock moves at or above p95, by the operation that made them: ${lag.tailCauses(percentile(sorted, 95))}`);
    const slow = lag.slowest(20).filter((m) => m.lag >= 15_000);
    console.log(`  ${label} stock moves caught up 15 s or more after they happened: ${slow.length}${slow.length ? ', why:' : ''}`);
    for (const line of await explainTail(world.db, slow)) console.log(`    ${line}`);
    const result: Result = {
      rate,
      mode,
      stock: stockRow,
      stockP95: percentile(sorted, 95),
      elapsed,
      requests,
      byRoute: new Map(byRoute),
    };
    if (traffic) {
      const rows = new Map(
        (
          await sql<{ order_id: string; key: string; recorded_at: Date }>`
            SELECT order_id, key, recorded_at FROM channel_order_events WHERE channel_id = ${channelId}`.execute(world.db)
        ).rows.map((r) => [`${r.order_id}:${r.key}`, r.recorded_at.getTime()]),
      );
      const of = (what: string) => expect.filter((e) => e.what === what);
      const shipped = summarise(of('shipment'), rows, true);
      const voided = summarise(of('void'), rows, true);
      const returned = summarise(of('return'), rows, false);
      const packed = summarise(of('packing'), rows, false);
      const imported = summarise(of('import'), rows, false);
      const ships = of('shipment');
      const byWarehouse = ships.filter((e) => traffic.mine.shipments.has(e.objectId)).length;
      const voidsByWarehouse = of('void').filter((e) => traffic.mine.voids.has(e.orderId)).length;
      const notes = [
        `imports ${traffic.imports.length}: ${traffic.imports.filter((o) => o.state === 'confirmed').length} confirmed, ` +
          `${traffic.imports.filter((o) => o.state === 'failed').length} failed, ${traffic.imports.filter((o) => o.state === 'queued').length} still queued`,
        `shipments ${ships.length} (${byWarehouse} by the warehouse, ${ships.length - byWarehouse} by the activity), voids ${of('void').length} ` +
          `(${voidsByWarehouse} by the warehouse); warehouse calls refused ${[...traffic.warehouse.refused.values()].reduce((a, b) => a + b, 0)}, ` +
          `left undone at the end ${traffic.mine.dropped}`,
        `POSTs: ${heard.posts.orders} of order events, ${heard.posts.stock} of stock; refused signatures ${refused.length}; ` +
          `events told twice (two ids) ${heard.doubled.length}${heard.doubled.length ? ` (${heard.doubled.slice(0, 5).join(', ')})` : ''}; ` +
          `an event id in two POSTs ${heard.repeated}`,
      ];
      notes.push(`checks: ${checkEvents(traffic.mine.shipments).join(', ')}`);
      if (traffic.warehouse.refused.size)
        notes.push(`the warehouse refused: ${[...traffic.warehouse.refused].map(([why, n]) => `${why} ${n}`).join('; ')}`);
      for (const n of notes) console.log(`  ${label} ${n}`);
      for (const [what, l] of [
        ['shipments', shipped],
        ['voids', voided],
      ] as const) {
        console.log(`  ${label} the slowest ${what}:`);
        for (const line of await explainOrders(world.db, account.connectionId, l.slowest)) console.log(`    ${line}`);
      }
      result.orders = {
        shipped,
        voided,
        returned,
        packed,
        imported,
        notes,
        confirmed: traffic.imports.filter((o) => o.state === 'confirmed').length,
      };
    }
    await traffic?.close();
    return result;
  } finally {
    await world.close();
  }
}

const results: Result[] = [];
for (const rate of rates) for (const mode of modes) results.push(await run(rate, mode));
endpoint.closeAllConnections();
endpoint.close();

const table = (head: string[], rows: string[][]) => {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  console.log(head.map((h, i) => h.padStart(widths[i]!)).join('  '));
  for (const r of rows) console.log(r.map((c, i) => c.padStart(widths[i]!)).join('  '));
};

console.log('\nstock lag: from a move at the service to the mirror row showing it; POST: to the POST at the endpoint carrying it');
table(
  [
    'ops/s',
    'orders',
    'moves',
    'p50 s',
    'p95 s',
    'p99 s',
    'max s',
    'open',
    'POST p50/p95/max s',
    'req/min',
    'order req/min',
    '429',
    'sweeps',
    'worker CPU %',
    'pg CPU %',
  ],
  results.map((r) => r.stock),
);
console.log(
  "req/min: commerce-sync's requests (the warehouse's are its own application's); order req/min: those to orders, fulfilments, returns, invoices, payments.",
);

const withOrders = results.filter((r) => r.orders);
if (withOrders.length) {
  console.log(
    "\nthe number a channel feels for its orders: from the event at the service to the POST at the channel's endpoint carrying it",
  );
  const rows: string[][] = [];
  for (const r of withOrders)
    for (const [what, l] of [
      ['shipped', r.orders!.shipped],
      ['voided', r.orders!.voided],
      ['returned', r.orders!.returned],
      ['packed', r.orders!.packed],
      ['imported', r.orders!.imported],
    ] as const)
      rows.push([
        String(r.rate),
        what,
        String(l.n),
        s(percentile(l.sorted, 50)),
        s(percentile(l.sorted, 95)),
        s(percentile(l.sorted, 99)),
        s(l.sorted.at(-1) ?? NaN),
        String(l.open),
        `${s(percentile(l.toRow, 50))} / ${s(percentile(l.toRow, 95))}`,
        `${s(percentile(l.rowToPost, 50))} / ${s(percentile(l.rowToPost, 95))}`,
        what === 'shipped' || what === 'voided' ? String(l.atOff) : '-',
      ]);
  table(
    ['ops/s', 'event', 'n', 'p50 s', 'p95 s', 'p99 s', 'max s', 'open', 'to event row p50/p95 s', 'row to POST p50/p95 s', 'at off'],
    rows,
  );
  console.log(
    "shipped: from the fulfilment's shipped_at at the service; voided: from the order's updated_at (no event announces a void); packed: from the " +
      "fulfilment's created_at; returned: from the return's created_at; imported: from the import's enqueueing. open: not heard within the grace after the load stopped. at off: the event's " +
      "`at` more than 1 s from the service's record.",
  );
}

// The issue's targets, each rate's orders beside its anchor of the same run.
const targets: string[][] = [];
for (const r of withOrders) {
  const anchor = results.find((a) => a.rate === r.rate && a.mode === 'anchor');
  const o = r.orders!;
  const perMinute = (n: number, of: Result) => n / (of.elapsed / 60_000);
  const orderRequests = (of: Result) => [...of.byRoute].filter(([route]) => isOrderRoute(route)).reduce((a, [, n]) => a + n, 0);
  // The anchor's order requests (the merchant's own orders) scaled to this run's length, then per channel order.
  const extra = anchor ? orderRequests(r) - perMinute(orderRequests(anchor), anchor) * (r.elapsed / 60_000) : NaN;
  targets.push([
    String(r.rate),
    String(importsPerMinuteAt(r.rate)),
    anchor ? s(anchor.stockP95) : '-',
    s(r.stockP95),
    anchor ? `${((100 * (r.stockP95 - anchor.stockP95)) / anchor.stockP95).toFixed(0)}%` : '-',
    `${s(percentile(o.shipped.sorted, 95))} / ${s(o.shipped.sorted.at(-1) ?? NaN)}`,
    s(percentile(o.voided.sorted, 95)),
    `${s(percentile(o.returned.sorted, 95))} / ${s(o.returned.sorted.at(-1) ?? NaN)}`,
    String(o.shipped.open + o.voided.open + o.returned.open + o.packed.open + o.imported.open),
    anchor
      ? `${perMinute(anchor.requests, anchor).toFixed(1)} / ${perMinute(r.requests, r).toFixed(1)}`
      : perMinute(r.requests, r).toFixed(1),
    o.confirmed ? (extra / o.confirmed).toFixed(2) : '-',
  ]);
  if (anchor && o.confirmed) {
    const routes = new Set([...r.byRoute.keys(), ...anchor.byRoute.keys()].filter(isOrderRoute));
    const per = [...routes]
      .map((route) => {
        const more = (r.byRoute.get(route) ?? 0) - perMinute(anchor.byRoute.get(route) ?? 0, anchor) * (r.elapsed / 60_000);
        return [route, more / o.confirmed] as const;
      })
      .filter(([, n]) => Math.abs(n) >= 0.01)
      .sort((a, b) => b[1] - a[1]);
    console.log(
      `\n${r.rate}/s: a channel order's requests beyond the anchor, by route: ${per.map(([route, n]) => `${route} ${n.toFixed(2)}`).join(', ')}`,
    );
  }
}
if (targets.length) {
  console.log('\nthe targets: the orders beside the anchor of the same run');
  table(
    [
      'ops/s',
      'orders/min',
      'anchor stock p95 s',
      'stock p95 s',
      'vs anchor',
      'shipped p95/max s',
      'voided p95 s',
      'returned p95/max s',
      'open',
      'req/min anchor / orders',
      'req per channel order',
    ],
    targets,
  );
  console.log(
    'targets: stock p95 within 25% of the anchor; shipped p95 <= anchor stock p95 + 5 s, max <= 60 s; voided p95 <= 60 s; ' +
      'req per channel order <= 1.5 (its order requests beyond the anchor, per order imported).',
  );
}
