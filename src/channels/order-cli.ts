// The `channels` command's verbs about channel orders (docs/channels.md): `holds list|add|cancel`, the stock held
// for them, and `orders show|cancel`, what the service has of one and its cancel. The command itself: cli.ts.
import { formatTable, type CommandContext, UsageError } from '../command.ts';
import { chooseConnection } from '../api/connections.ts';
import { destinationOf } from '../db/channel-destinations.ts';
import { listHolds, type HoldState } from '../db/holds.ts';
import type { Db } from '../db/index.ts';
import { startBoss, stopBoss } from '../queue/boss.ts';
import { createQueues } from '../queue/queues.ts';
import { findChannel, parseInput } from './channels.ts';
import { announceChanges } from './dispatch.ts';
import { cancelHold, createHold, holdInput, presentHold } from './holds.ts';
import { orderTimeline, toldText } from './order-timeline.ts';
import { cancelChannelOrder, channelOrderView, type ChannelRef } from './orders.ts';

/** What a verb of the `channels` command is given. */
export interface Verb {
  ctx: CommandContext;
  db: Db;
  databaseUrl: string;
  /** --connection, when given. */
  connection: string | undefined;
  /** An option's value, when given as text. */
  text: (option: string) => string | undefined;
  /** Prints the value as JSON with --json, else the lines. */
  print: (value: unknown, lines: () => string[]) => void;
}

function holdLines(rows: ReturnType<typeof presentHold>[]): string[] {
  return formatTable([
    ['HOLD', 'CONNECTION', 'CHANNEL', 'ORDER', 'STATE', 'HELD', 'EXPIRES', 'ENDED'],
    ...rows.map((h) => [
      String(h.id),
      h.connection ?? '-',
      h.channel,
      h.channel_order_id,
      h.state,
      h.held.map((l) => `${l.sku ?? l.variant_id}=${l.quantity}${l.end_cause ? ` (${l.end_cause})` : ''}`).join(' '),
      h.expires_at.toISOString(),
      h.end_cause ? `${h.end_cause} ${h.ended_at!.toISOString()}` : '-',
    ]),
  ]);
}

/** A channel order as `channels orders show` prints it: what it is, its timeline, shipments, returns, operations. */
function channelOrderLines(view: NonNullable<Awaited<ReturnType<typeof channelOrderView>>>, ordersDestination: boolean): string[] {
  const o = view.order;
  // A date alone (the service gives some times as days) stays a date.
  const at = (d: Date | string | null | undefined) =>
    !d ? '-' : typeof d === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(d) ? d : new Date(d).toISOString().replace('T', ' ').slice(0, 19);
  const lines = (ls: { sku: string | null; quantity: string }[]) => ls.map((l) => `${l.sku ?? '?'}=${l.quantity}`).join(' ') || '-';
  const tracking = (t: { company: string | null; number: string | null; url: string | null } | null) =>
    t ? [t.company, t.number, t.url].filter(Boolean).join(' ') : '';
  const out = [
    `${view.channel} ${view.channel_order_id}: ${
      view.order_id === null
        ? 'not imported'
        : `order ${o?.order_number ?? view.order_id} (id ${view.order_id})${
            o
              ? `, ${o.status ?? 'no status'}, invoice ${o.invoice_status ?? '-'}, payment ${o.payment_status ?? '-'}`
              : ', not read by the mirror yet'
          }`
    }`,
    `hold: ${view.hold ? (view.hold.ended_at ? `ended ${at(view.hold.ended_at)} (${view.hold.end_cause})` : `active until ${at(view.hold.expires_at)}`) : 'none'}`,
    '',
    ...formatTable([
      ['AT (UTC)', 'WHAT', 'DETAIL', 'TOLD THE CHANNEL'],
      ...orderTimeline(view, ordersDestination).map((e) => [
        at(e.at),
        e.what,
        [e.detail, tracking(e.tracking)].filter(Boolean).join('; ') || '-',
        toldText(e.told),
      ]),
    ]),
  ];
  if (view.fulfillments.length)
    out.push(
      '',
      ...formatTable([
        ['FULFILMENT', 'STATUS', 'PACKED', 'SHIPPED', 'TRACKING', 'LINES'],
        ...view.fulfillments.map((f) => [
          String(f.id),
          f.status ?? '-',
          at(f.packed_at),
          at(f.shipped_at),
          tracking({ company: f.tracking_company, number: f.tracking_number, url: f.tracking_url }) || '-',
          lines(f.lines),
        ]),
      ]),
    );
  if (view.returns.length)
    out.push(
      '',
      ...formatTable([
        ['RETURN', 'STATUS', 'CREDIT NOTE', 'RECEIVED', 'LINES'],
        ...view.returns.map((r) => [String(r.id), r.status ?? '-', r.credit_note_number ?? '-', at(r.received_at), lines(r.lines)]),
      ]),
    );
  if (view.operations.length)
    out.push(
      '',
      ...formatTable([
        ['OPERATION', 'KIND', 'STATE', 'CREATED', 'REASON'],
        ...view.operations.map((op) => [String(op.id), op.kind, op.state, at(op.created_at), op.reason ?? '-']),
      ]),
    );
  return out;
}

/** `channels holds list [NAME] | add NAME ORDER_ID --line SKU=QTY | cancel NAME ORDER_ID`. */
export async function runHolds({ ctx, db, connection, text, print }: Verb, args: string[]): Promise<number> {
  const [sub, name, orderId] = args;
  if (sub === 'list') {
    if (args.length > 2) throw new UsageError('channels holds list takes at most the channel name');
    const state = (text('state') ?? 'active') as HoldState;
    if (!['active', 'ended', 'all'].includes(state)) throw new UsageError(`--state must be active, ended or all, not "${state}"`);
    const limit = text('limit') ?? '50';
    if (!/^\d+$/.test(limit) || Number(limit) < 1) throw new UsageError(`--limit must be a whole number above 0, not "${limit}"`);
    const ch = name ? await findChannel(db, name, connection) : undefined;
    const conn = !ch && connection ? await chooseConnection(db, connection) : undefined;
    const rows = (await listHolds(db, { connectionId: ch?.connection_id ?? conn?.id, channel: ch?.name, state, limit: Number(limit) })).map(
      presentHold,
    );
    print(rows, () => (rows.length ? holdLines(rows) : ['no holds']));
    return 0;
  }
  if (sub === 'add') {
    if (args.length !== 3) throw new UsageError('channels holds add takes NAME CHANNEL_ORDER_ID and --line SKU=QTY (repeatable)');
    const lines = ((ctx.values.line as string[] | undefined) ?? []).map((l) => {
      const m = /^(.+)=([^=]+)$/.exec(l);
      if (!m) throw new UsageError(`--line "${l}": expected SKU=QUANTITY`);
      return { sku: m[1]!, quantity: m[2]! };
    });
    const input = parseInput(holdInput, { channel_order_id: orderId, lines });
    const ch = await findChannel(db, name!, connection);
    const made = await createHold(db, ctx.config, { connectionId: ch.connection_id, channel: ch.name, source: 'cli', input });
    const [hold] = await listHolds(db, { ids: [made.hold.id], state: 'all' });
    const row = presentHold(hold!);
    print({ hold: row, created: made.created, changes: made.changes.length }, () => [
      ...holdLines([row]),
      made.created ? `held; ${made.changes.length} quantities changed` : 'held already (nothing changed)',
    ]);
    return 0;
  }
  if (sub === 'cancel') {
    if (args.length !== 3) throw new UsageError('channels holds cancel takes NAME CHANNEL_ORDER_ID');
    const ch = await findChannel(db, name!, connection);
    const done = await cancelHold(db, { connectionId: ch.connection_id, channel: ch.name, channelOrderId: orderId! });
    if (!done) {
      console.error(`commerce-sync channels: no hold for channel order ${ch.name}/${orderId}`);
      return 1;
    }
    const [hold] = await listHolds(db, { ids: [done.hold.id], state: 'all' });
    const row = presentHold(hold!);
    print({ hold: row, ended: done.ended, changes: done.changes.length }, () => [
      ...holdLines([row]),
      done.ended ? `cancelled; ${done.changes.length} quantities changed` : `ended already (${row.end_cause})`,
    ]);
    return 0;
  }
  throw new UsageError('channels holds takes list [NAME], add NAME CHANNEL_ORDER_ID --line SKU=QTY, or cancel NAME CHANNEL_ORDER_ID');
}

/** `channels orders show|cancel NAME CHANNEL_ORDER_ID`. */
export async function runOrders({ ctx, db, databaseUrl, connection, print }: Verb, args: string[]): Promise<number> {
  const [sub, name, orderId] = args;
  if (args.length !== 3 || !orderId || !['show', 'cancel'].includes(sub!))
    throw new UsageError('channels orders takes show NAME CHANNEL_ORDER_ID [--json], or cancel NAME CHANNEL_ORDER_ID');
  const ch = await findChannel(db, name!, connection);
  const ref: ChannelRef = { connectionId: ch.connection_id, channelId: ch.id, channel: ch.name, channelOrderId: orderId };
  if (sub === 'show') {
    const view = await channelOrderView(db, ref);
    if (!view) {
      console.error(`commerce-sync channels: channel ${ch.connection}/${ch.name} has no order ${orderId} (not imported, held or told of)`);
      return 1;
    }
    const dest = await destinationOf(db, ch.id);
    print({ order: view }, () => channelOrderLines(view, !!dest?.kinds.includes('orders')));
    return 0;
  }
  // A void is a push operation: queued here, sent by a worker (`commerce-sync start`).
  const boss = await startBoss(databaseUrl, ctx.log, { supervise: false, schedule: false, max: 2 });
  try {
    await createQueues(boss);
    const done = await cancelChannelOrder(db, boss, ref);
    if (!done) {
      console.error(`commerce-sync channels: channel ${ch.connection}/${ch.name} has no order ${orderId} (not imported, nor held)`);
      return 1;
    }
    if (done.kind === 'hold') {
      await announceChanges({ db, boss, config: ctx.config }, done.changes);
      print({ cancelled: 'hold', hold: done.hold, ended: done.ended }, () => [
        ...holdLines([done.hold]),
        done.ended
          ? `not imported: its hold is cancelled; ${done.changes.length} quantities changed`
          : `not imported, and its hold ended already (${done.hold.end_cause})`,
      ]);
      return 0;
    }
    const op = done.operation;
    print({ cancelled: 'order', operation: op, created: done.created }, () => [
      done.created
        ? `void of ${ch.name} order ${orderId} queued: operation ${op.id} (${op.state})`
        : `a void was asked already: operation ${op.id} (${op.state})`,
      `follow it with \`commerce-sync push show ${op.id}\`; the channel hears order.voided once the service has it`,
    ]);
    return 0;
  } finally {
    await stopBoss(boss);
  }
}
