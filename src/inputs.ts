// Bounds every input shares (JSON API, console forms, CLI): a value outside them is refused with a 400 naming the
// field, never passed on to fail deeper down (a 500 from PostgreSQL, a quantity of a thousand digits published to
// a channel). Ids are whole numbers both PostgreSQL's bigint and JavaScript's safe integers hold; decimals have at
// most 15 digits before the point and 8 after; text has a length cap and no control characters.
import { z } from 'zod';

export const MAX_ID = Number.MAX_SAFE_INTEGER;

/** Whether a path or query value is an id (or cursor): digits only, at most MAX_ID. */
export const isId = (v: unknown): v is string => typeof v === 'string' && /^\d{1,16}$/.test(v) && Number(v) <= MAX_ID;

/** The id a path or query value is, if it is one. */
export const idOf = (v: unknown): number | undefined => (isId(v) ? Number(v) : undefined);

/** A non-negative decimal as text: "5", "2.5". */
export const DECIMAL = /^\d{1,15}(\.\d{1,8})?$/;
/** A decimal that may be negative (a stock adjustment). */
export const SIGNED_DECIMAL = /^-?\d{1,15}(\.\d{1,8})?$/;
/** A whole JSON number a decimal may be given as. */
export const wholeNumber = z.number().int().min(-1e15).max(1e15);

/** Whether the text has a control character (tabs and line breaks allowed where `breaks`). */
function hasControl(v: string, breaks = false): boolean {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if ((c < 32 || c === 127) && !(breaks && (c === 9 || c === 10 || c === 13))) return true;
  }
  return false;
}

/** Trimmed text of 1 to `max` characters without control characters (a NUL byte, a newline in a key). */
export const boundedText = (max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max, `at most ${max} characters`)
    .refine((v) => !hasControl(v), 'no control characters');

/** Free text (notes, a pause reason): up to `max` characters, line breaks allowed, no other control characters. */
export const note = (max: number) =>
  z
    .string()
    .max(max, `at most ${max} characters`)
    .refine((v) => !hasControl(v, true), 'no control characters');

/** A SKU or a channel's order id: 255 characters at most. */
export const KEY_LENGTH = 255;

/** A channel's order id: text, or a whole JSON number taken as its digits. */
export const channelOrderId = z.preprocess(
  (v) => (typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : v),
  boundedText(KEY_LENGTH),
);
