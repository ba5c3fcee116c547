// Stock held for channel orders (docs/channels.md): a channel that takes an order holds its units at once, in
// every channel, until the service's committed stock shows the order (src/stock/held-lines.ts ends each held line
// in the mirror write that shows it), the order is cancelled, or CHANNEL_HOLD_MINUTES pass. Made through the
// API and the CLI (`POST /api/channels/:name/holds`, `channels holds add`) and by `push import-order`.
import { z } from 'zod';
import type { Config } from '../config.ts';
import {
  endHeldLines,
  expiredHolds,
  holdByKey,
  holdsWithOrders,
  insertHold,
  linesToSettle,
  setHoldOrder,
  type listHolds,
  type Hold,
  type NewHoldLine,
} from '../db/holds.ts';
import type { Db, Executor } from '../db/index.ts';
import { compositionsOf, variantStockRows } from '../db/mirror-reads.ts';
import type { HoldEnd } from '../db/schema.ts';
import { logSync } from '../db/synclog.ts';
import { variantIdsBySku } from '../push/skus.ts';
import { lockVariants, logHoldEnds } from '../stock/held-lines.ts';
import { connectionChannels, recomputeVariants, settleHolds, type NewChange } from '../stock/recompute.ts';
import { COMMITTING_STATUSES, dec, fmt, rulesFrom } from '../stock/rules.ts';
import { boundedText, channelOrderId, DECIMAL, KEY_LENGTH, wholeNumber } from '../inputs.ts';
import { decimal, timestamp } from '../openapi/registry.ts';

const quantity = z
  .union([z.string().trim().regex(DECIMAL, 'a decimal string such as "2" or "1.5"'), wholeNumber.nonnegative()])
  .transform(String)
  .refine((v) => dec(v).greaterThan(0), 'a quantity above zero');

/** Lines one hold may have: each is a row, and a statement binds a few values per row (PostgreSQL's limit is 65,535). */
export const MAX_HOLD_LINES = 1000;

/** What a channel sends to hold stock for an order: the same channel_order_id and SKU lines an import carries. */
export const holdInput = z.strictObject({
  channel_order_id: channelOrderId,
  lines: z
    .array(z.strictObject({ sku: boundedText(KEY_LENGTH), quantity }))
    .min(1, 'at least one line')
    .max(MAX_HOLD_LINES, `at most ${MAX_HOLD_LINES} lines`),
});
export type HoldInput = z.infer<typeof holdInput>;

/** The same channel order asked to be held with other lines than its hold has. */
export class HoldConflict extends Error {}

/** Settings a hold is made with. */
export type HoldSettings = Pick<
  Config,
  'CHANNEL_HOLD_MINUTES' | 'SERVICE_CLOCK_MARGIN_SECONDS' | 'CHANNEL_LOCATIONS' | 'CHANNEL_SAFETY_BUFFER'
>;

const holdEnd = z.enum(['committed', 'cancelled', 'expired']);
/** presentHold, as the API answers it. */
export const holdSchema = z
  .object({
    id: z.number().int(),
    connection: z.string(),
    channel: z.string(),
    channel_order_id: z.string(),
    source: z.enum(['api', 'cli', 'import']),
    state: z.enum(['active', 'ended']),
    lines: z.array(z.object({ sku: z.string(), quantity: decimal })).describe('The lines as asked.'),
    held: z.array(
      z.object({
        variant_id: z.number().int(),
        sku: z.string().nullable(),
        ordered_sku: z.string().describe('The SKU ordered (a bundle: its components are held).'),
        quantity: decimal,
        ended_at: timestamp.nullable(),
        end_cause: holdEnd.nullable(),
      }),
    ),
    order_id: z.number().int().nullable(),
    order_at: timestamp.nullable(),
    created_at: timestamp,
    expires_at: timestamp,
    ended_at: timestamp.nullable(),
    end_cause: holdEnd.nullable(),
  })
  .meta({ id: 'Hold' });

/** A hold as the API and the CLI show it: what was asked, what it holds per variant, and its state. */
export function presentHold(h: Awaited<ReturnType<typeof listHolds>>[number]) {
  return {
    id: h.id,
    connection: h.connection,
    channel: h.channel,
    channel_order_id: h.channel_order_id,
    source: h.source,
    state: h.ended_at ? ('ended' as const) : ('active' as const),
    lines: h.lines,
    held: h.held.map((l) => ({
      variant_id: l.variant_id,
      sku: l.sku,
      ordered_sku: l.ordered_sku,
      quantity: fmt(dec(l.quantity)),
      ended_at: l.ended_at,
      end_cause: l.end_cause,
    })),
    order_id: h.order_id,
    order_at: h.order_at,
    created_at: h.created_at,
    expires_at: h.expires_at,
    ended_at: h.ended_at,
    end_cause: h.end_cause,
  };
}

const sameLines = (a: unknown, b: HoldInput['lines']) =>
  JSON.stringify((a as HoldInput['lines']).map((l) => [l.sku, fmt(dec(l.quantity))])) ===
  JSON.stringify(b.map((l) => [l.sku, fmt(dec(l.quantity))]));

/**
 * What the lines hold, per variant: an ordered SKU's variant, or a bundle's components times the quantity
 * (what the service commits for it). Unknown and ambiguous SKUs throw OperationFailed naming them.
 */
async function heldLines(db: Executor, connectionId: number, lines: HoldInput['lines']): Promise<NewHoldLine[]> {
  const ids = await variantIdsBySku(
    db,
    connectionId,
    lines.map((l) => l.sku),
  );
  const variants = new Map((await variantStockRows(db, connectionId, [...ids.values()])).map((v) => [v.id, v]));
  const comps = await compositionsOf(
    db,
    connectionId,
    [...ids.values()].filter((id) => variants.get(id)?.composite),
  );
  const componentSkus = new Map(
    (
      await variantStockRows(
        db,
        connectionId,
        comps.map((c) => c.component_id),
      )
    ).map((v) => [v.id, v.sku]),
  );
  const out: NewHoldLine[] = [];
  for (const l of lines) {
    const id = ids.get(l.sku)!;
    const makeup = comps.filter((c) => c.bundle_id === id);
    if (!makeup.length) out.push({ variant_id: id, sku: l.sku, ordered_sku: l.sku, quantity: fmt(dec(l.quantity)) });
    for (const c of makeup) {
      const q = dec(l.quantity).times(dec(c.quantity));
      if (q.greaterThan(0))
        out.push({
          variant_id: c.component_id,
          sku: componentSkus.get(c.component_id) ?? null,
          ordered_sku: l.sku,
          quantity: fmt(q),
        });
    }
  }
  return out;
}

/**
 * Holds stock for a channel order, at most once per channel and channel order id: an existing hold is
 * answered as it is (`created` false; HoldConflict when asked with other lines, unless `anyLines`). Every
 * channel's quantity of the held variants drops in the same transaction.
 */
export async function createHold(
  db: Db,
  settings: HoldSettings,
  args: { connectionId: number; channel: string; source: Hold['source']; input: HoldInput; anyLines?: boolean },
): Promise<{ hold: Hold; created: boolean; changes: NewChange[] }> {
  const { connectionId, channel, input } = args;
  return db.transaction().execute(async (tx) => {
    const existing = await holdByKey(tx, connectionId, channel, input.channel_order_id);
    const answer = (hold: Hold) => {
      if (!args.anyLines && !sameLines(hold.lines, input.lines))
        throw new HoldConflict(
          `channel order ${channel}/${input.channel_order_id} is held already with other lines (hold ${hold.id}): ` +
            'cancel that hold first to hold it anew',
        );
      return { hold, created: false, changes: [] as NewChange[] };
    };
    if (existing) return answer(existing);
    await connectionChannels(tx, connectionId, rulesFrom(settings));
    const lines = await heldLines(tx, connectionId, input.lines);
    const hold = await insertHold(
      tx,
      {
        connection_id: connectionId,
        channel,
        channel_order_id: input.channel_order_id,
        source: args.source,
        clock_margin_ms: settings.SERVICE_CLOCK_MARGIN_SECONDS * 1000,
        lines: input.lines.map((l) => ({ sku: l.sku, quantity: fmt(dec(l.quantity)) })),
        expires_minutes: settings.CHANNEL_HOLD_MINUTES,
      },
      lines,
    );
    // Another transaction held it first: answer with that one.
    if (!hold) return answer((await holdByKey(tx, connectionId, channel, input.channel_order_id))!);
    const about = { id: hold.id, channel, channel_order_id: hold.channel_order_id };
    await logSync(tx, {
      connectionId,
      resource: 'hold',
      recordId: hold.id,
      action: 'hold.created',
      detail: { ...about, source: hold.source, expires_at: hold.expires_at, lines },
    });
    const changes = await recomputeVariants(
      tx,
      connectionId,
      lines.map((l) => l.variant_id),
      { kind: 'hold', hold: { ...about, event: 'created' } },
    );
    return { hold, created: true, changes };
  });
}

/** Ends holds as a whole (cancelled, expired) and recomputes what they held, in one transaction. */
async function endHolds(
  tx: Executor,
  connectionId: number,
  holds: Pick<Hold, 'id' | 'channel' | 'channel_order_id'>[],
  cause: HoldEnd,
): Promise<NewChange[]> {
  if (!holds.length) return [];
  const holdIds = holds.map((h) => h.id);
  // Lock before touching the lines, as every writer of held lines does (lockVariants).
  await lockVariants(
    tx,
    connectionId,
    (await linesToSettle(tx, connectionId, { holdIds })).map((l) => l.variant_id),
  );
  const ended = await endHeldLines(tx, { holdIds }, cause);
  const about = new Map(holds.map((h) => [h.id, { channel: h.channel, channel_order_id: h.channel_order_id }]));
  await logHoldEnds(tx, connectionId, ended, cause, about);
  const one = holds.length === 1 ? holds[0]! : null;
  return recomputeVariants(
    tx,
    connectionId,
    ended.lines.map((l) => l.variant_id),
    {
      kind: 'hold',
      ...(one ? { hold: { id: one.id, channel: one.channel, channel_order_id: one.channel_order_id, event: cause } } : {}),
    },
  );
}

/** The channel cancels its hold (the order will not come). undefined: no such hold. */
export async function cancelHold(
  db: Db,
  args: { connectionId: number; channel: string; channelOrderId: string },
): Promise<{ hold: Hold; ended: boolean; changes: NewChange[] } | undefined> {
  return db.transaction().execute(async (tx) => {
    const hold = await holdByKey(tx, args.connectionId, args.channel, args.channelOrderId);
    if (!hold) return undefined;
    if (hold.ended_at) return { hold, ended: false, changes: [] };
    const changes = await endHolds(tx, args.connectionId, [hold], 'cancelled');
    return { hold: (await holdByKey(tx, args.connectionId, args.channel, args.channelOrderId))!, ended: true, changes };
  });
}

/**
 * The import of a channel order reached the service: records its order on the hold (if the channel order has
 * one), with `orderAt` when the answer showed the order committing stock (its updated_at, on the service's
 * clock), and ends the lines whose variants were already read after it.
 */
export async function recordHoldOrder(
  db: Db,
  args: {
    connectionId: number;
    channel: string;
    channelOrderId: string;
    orderId: number;
    order?: { status?: unknown; updated_at?: unknown };
  },
): Promise<NewChange[]> {
  const status = typeof args.order?.status === 'string' ? args.order.status : null;
  const stamp = typeof args.order?.updated_at === 'string' ? new Date(args.order.updated_at) : null;
  const orderAt = status && COMMITTING_STATUSES.includes(status) && stamp && !Number.isNaN(stamp.getTime()) ? stamp : null;
  return db.transaction().execute(async (tx) => {
    const hold = await holdByKey(tx, args.connectionId, args.channel, args.channelOrderId);
    if (!hold || hold.ended_at) return [];
    await setHoldOrder(tx, hold.id, args.orderId, orderAt);
    return settleHolds(
      tx,
      args.connectionId,
      { holdIds: [hold.id] },
      { kind: 'hold', hold: { id: hold.id, channel: hold.channel, channel_order_id: hold.channel_order_id, event: 'committed' } },
    );
  });
}

const byConnection = <T extends { connection_id: number }>(rows: T[]) => {
  const out = new Map<number, T[]>();
  for (const r of rows) out.set(r.connection_id, [...(out.get(r.connection_id) ?? []), r]);
  return out;
};

/**
 * Housekeeping for the maintenance job: ends holds past their expires_at (cause expired), and settles the holds
 * whose order the service has by what the mirror shows now (lines whose variants were read after the order
 * committed; orders voided): what no mirror write has settled yet. At most `limit` holds of each kind a run, one
 * transaction per connection. Returns how many expired, the changes (for whoever publishes them), and per
 * connection the variants still held for an order the service has: a read of them now shows the commitment
 * (the caller marks them for one), which a read that came too soon after the order could not tell.
 */
export async function expireHolds(
  db: Db,
  opts: { limit?: number } = {},
): Promise<{ expired: number; changes: NewChange[]; toRead: Map<number, number[]> }> {
  const limit = opts.limit ?? 500;
  const changes: NewChange[] = [];
  const toRead = new Map<number, number[]>();
  const expired = await expiredHolds(db, limit);
  for (const [connectionId, holds] of byConnection(expired))
    changes.push(...(await db.transaction().execute((tx) => endHolds(tx, connectionId, holds, 'expired'))));
  for (const [connectionId, holds] of byConnection(await holdsWithOrders(db, limit))) {
    const holdIds = holds.map((h) => h.id);
    changes.push(...(await db.transaction().execute((tx) => settleHolds(tx, connectionId, { holdIds }, { kind: 'hold' }))));
    const left = (await linesToSettle(db, connectionId, { holdIds })).filter(
      (l) => l.order_at || COMMITTING_STATUSES.includes(l.order_status ?? ''),
    );
    if (left.length) toRead.set(connectionId, [...new Set(left.map((l) => l.variant_id))]);
  }
  return { expired: expired.length, changes, toRead };
}
