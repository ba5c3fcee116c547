// The JSON each operation takes, validated before anything is stored. Quantities are decimal strings
// (an integer JSON number is accepted and turned into its string; fractions must be strings so they stay exact).
import { z } from 'zod';
import { boundedText, channelOrderId, KEY_LENGTH, MAX_ID, note, SIGNED_DECIMAL, wholeNumber } from '../inputs.ts';
import type { PushKind } from '../db/schema.ts';

export const kinds = [
  'import-order',
  'ship',
  'invoice',
  'pay',
  'void',
  'return',
  'receive-purchase-order',
  'stock-count',
] as const satisfies readonly PushKind[];

export const isKind = (k: string): k is PushKind => (kinds as readonly string[]).includes(k);

const id = z.number().int().positive().max(MAX_ID);
const text = boundedText(1000);
const key = boundedText(KEY_LENGTH);
/** An address's or a customer's other fields, passed on to the service as they come. */
const field = note(1000);
const quantity = z
  .union([z.string().trim().regex(SIGNED_DECIMAL, 'a decimal string such as "2" or "1.5"'), wholeNumber])
  .transform((v) => String(v));
// Lines of one operation: an order of several thousand lines is imported in parts (src/push/import-order.ts).
const MAX_LINES = 5000;
const positiveQuantity = quantity.refine((v) => !v.startsWith('-') && !/^0+(\.0+)?$/.test(v), 'a quantity above zero');
const countQuantity = quantity.refine((v) => !v.startsWith('-'), 'a count of zero or more');

/** An order on the service: by its id, or by the channel order it was imported from. */
const orderRef = {
  order_id: id.optional(),
  channel: key.optional(),
  channel_order_id: channelOrderId.optional(),
};
const needOrder = (v: { order_id?: number; channel?: string; channel_order_id?: string }) =>
  v.order_id !== undefined || (v.channel !== undefined && v.channel_order_id !== undefined);
const orderMessage = { message: 'give order_id, or channel and channel_order_id of an imported order' };

const address = z.looseObject({
  address1: text,
  address2: field.optional(),
  city: field.optional(),
  state: field.optional(),
  suburb: field.optional(),
  zip_code: field.optional(),
  country: field.optional(),
  country_code: field.optional(),
  label: field.optional(),
  company_name: field.optional(),
  first_name: field.optional(),
  last_name: field.optional(),
  email: field.optional(),
  phone_number: field.optional(),
});

const company = z.looseObject({
  name: text,
  company_type: z.enum(['business', 'consumer', 'supplier']).default('consumer'),
  company_code: field.optional(),
  email: field.optional(),
  website: field.optional(),
});

/**
 * Channels send year-first (2026-11-21, optionally with a time) or day-first (21/11/2026, 21-11-2026) dates; the
 * service is sent the unambiguous year-first form. Impossible dates are refused here rather than by the service.
 */
const issuedAt = z
  .string()
  .trim()
  .transform((v, ctx) => {
    const dayFirst = /^(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})$/.exec(v);
    const iso = dayFirst ? `${dayFirst[3]}-${dayFirst[2]!.padStart(2, '0')}-${dayFirst[1]!.padStart(2, '0')}` : v;
    const m = /^(\d{4})-(\d{2})-(\d{2})([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.exec(iso);
    const d = m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : null;
    if (!m || !d || d.getUTCMonth() !== Number(m[2]) - 1 || d.getUTCDate() !== Number(m[3])) {
      ctx.addIssue({ code: 'custom', message: 'a date such as 2026-11-21 (or day-first 21/11/2026)' });
      return z.NEVER;
    }
    return iso;
  });

const orderLine = z.union([
  z.strictObject({ sku: key, quantity: positiveQuantity, price: quantity.optional() }),
  // A line not tied to a variant (shipping, gift wrap): the service requires its label.
  z.looseObject({ freeform: z.literal(true), label: text, quantity: positiveQuantity, price: quantity.optional() }),
]);

export const importOrderInput = z.strictObject({
  channel: key,
  channel_order_id: channelOrderId,
  customer: z.union([
    z.strictObject({ company_id: id, shipping_address_id: id.optional(), billing_address_id: id.optional() }),
    z.strictObject({ company, shipping_address: address, billing_address: address.optional() }),
  ]),
  currency: z
    .string()
    .trim()
    .regex(/^[A-Za-z]{3}$/, 'a three-letter ISO currency code')
    .transform((v) => v.toUpperCase()),
  issued_at: issuedAt,
  status: z.enum(['draft', 'active']).optional(),
  stock_location_id: id.optional(),
  lines: z.array(orderLine).min(1, 'at least one line').max(MAX_LINES, `at most ${MAX_LINES} lines`),
});

const lineRef = z
  .strictObject({ order_line_item_id: id.optional(), sku: key.optional(), quantity: positiveQuantity })
  .refine((l) => (l.order_line_item_id === undefined) !== (l.sku === undefined), 'each line: order_line_item_id or sku (one of them)');

const tracking = z.strictObject({ company: field.optional(), number: field.optional(), url: field.optional() });

export const shipInput = z
  .strictObject({
    ...orderRef,
    /** Lines to pack; omitted: everything not yet packed. */
    lines: z.array(lineRef).min(1).max(MAX_LINES).optional(),
    /** Ship an existing packed fulfillment instead of packing. */
    fulfillment_id: id.optional(),
    /** false: pack only. */
    fulfil: z.boolean().default(true),
    tracking: tracking.optional(),
    stock_location_id: id.optional(),
  })
  .refine(needOrder, orderMessage)
  .refine((v) => !(v.lines && v.fulfillment_id), { message: 'give lines to pack, or fulfillment_id of a packed fulfillment, not both' })
  .refine((v) => v.fulfil || v.fulfillment_id === undefined || Object.values(v.tracking ?? {}).some((x) => x !== undefined), {
    message: 'fulfillment_id with fulfil false and no tracking changes nothing: give tracking, or leave fulfil on',
  });

export const orderActionInput = z.strictObject(orderRef).refine(needOrder, orderMessage);

export const returnInput = z
  .strictObject({
    ...orderRef,
    lines: z.array(lineRef).min(1, 'at least one line').max(MAX_LINES, `at most ${MAX_LINES} lines`),
    location_id: id.optional(),
    notes: note(2000).optional(),
    tracking: tracking.optional(),
  })
  .refine(needOrder, orderMessage);

export const receiveInput = z.strictObject({
  purchase_order_id: id,
  /** Optional: the lines being received. The service only receives whole orders, so they must match it. */
  lines: z
    .array(z.strictObject({ purchase_order_line_item_id: id.optional(), sku: key.optional(), quantity: positiveQuantity }))
    .max(MAX_LINES)
    .optional(),
});

export const stockCountInput = z.strictObject({
  counts: z
    .array(z.strictObject({ sku: key, location_id: id, quantity: countQuantity }))
    .max(MAX_LINES)
    .min(1, 'at least one count')
    .refine((cs) => new Set(cs.map((c) => `${c.location_id}\u0000${c.sku}`)).size === cs.length, 'each sku and location_id once'),
  notes: note(2000).optional(),
});

export const inputSchemas = {
  'import-order': importOrderInput,
  ship: shipInput,
  invoice: orderActionInput,
  pay: orderActionInput,
  void: orderActionInput,
  return: returnInput,
  'receive-purchase-order': receiveInput,
  'stock-count': stockCountInput,
} satisfies Record<PushKind, z.ZodType>;

export type ImportOrderInput = z.output<typeof importOrderInput>;
export type ShipInput = z.output<typeof shipInput>;
export type OrderActionInput = z.output<typeof orderActionInput>;
export type ReturnInput = z.output<typeof returnInput>;
export type ReceiveInput = z.output<typeof receiveInput>;
export type StockCountInput = z.output<typeof stockCountInput>;
export type OrderRef = { order_id?: number; channel?: string; channel_order_id?: string };

export class InputError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('; '));
    this.problems = problems;
  }
}

/** Validates an operation's input; throws InputError listing every problem as `path: message`. */
export function parseInput(kind: PushKind, raw: unknown): Record<string, unknown> {
  const result = (inputSchemas[kind] as z.ZodType).safeParse(raw);
  if (result.success) return result.data as Record<string, unknown>;
  throw new InputError(result.error.issues.flatMap((i) => describe(i, [])));
}

/** `path: message` lines; for a value matching none of several shapes, the problems of the closest shape. */
function describe(issue: z.core.$ZodIssue, prefix: PropertyKey[]): string[] {
  const path = [...prefix, ...issue.path];
  if (issue.code === 'invalid_union' && issue.errors.length) {
    const closest = [...issue.errors].sort((a, b) => a.length - b.length)[0]!;
    if (closest.length) return closest.flatMap((i) => describe(i, path));
  }
  return [`${path.length ? path.map(String).join('.') : 'input'}: ${issue.message}`];
}
