// Bounds every input shares (JSON API, console forms, CLI): a value outside them is refused with a 400 naming the
// field, never passed on to fail deeper down (a 500 from PostgreSQL, a quantity of a thousand digits published to
// a channel). Ids are whole numbers both PostgreSQL's bigint and JavaScript's safe integers hold; decimals have at
// most 15 digits before the point and 8 after; text has a length cap and no control characters. Before any of these,
// every request passes one boundary (refusedPath, refusedQuery, refusedBody; src/server.ts applies them), which
// refuses text PostgreSQL cannot store (unstorable) wherever it is.
import { z } from 'zod';

export const MAX_ID = Number.MAX_SAFE_INTEGER;

/**
 * Whether a path or query value is an id (or cursor): digits only, at most MAX_ID. Nothing else is taken as an id:
 * more digits, a sign, a point or an exponent would be refused by PostgreSQL or read as another number.
 */
export const isId = (v: unknown): v is string => typeof v === 'string' && /^\d{1,16}$/.test(v) && Number(v) <= MAX_ID;

/** The id a path or query value is, if it is one. */
export const idOf = (v: unknown): number | undefined => (isId(v) ? Number(v) : undefined);

/** A non-negative decimal as text: "5", "2.5". */
export const DECIMAL = /^\d{1,15}(\.\d{1,8})?$/;
/** A decimal that may be negative (a stock adjustment). */
export const SIGNED_DECIMAL = /^-?\d{1,15}(\.\d{1,8})?$/;
/** A whole JSON number a decimal may be given as. */
export const wholeNumber = z.number().int().min(-1e15).max(1e15);

/**
 * What in the text PostgreSQL cannot store, if anything: a NUL byte (text and jsonb refuse it), or a lone UTF-16
 * surrogate (half of a pair, from a JSON escape such as `\ud800`: it has no UTF-8 form, jsonb refuses its escape).
 */
export function unstorable(v: string): string | undefined {
  if (v.includes('\u0000')) return 'a NUL byte';
  if (!v.isWellFormed()) return 'a lone surrogate';
  return undefined;
}

/** The text with what PostgreSQL cannot store replaced by U+FFFD: for a record of what was refused. */
export const storable = (v: string): string => v.replaceAll('\u0000', '\uFFFD').toWellFormed();

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

/** How deep a request body may nest: deeper than any input of ours, shallow enough for every recursive reader. */
export const MAX_DEPTH = 32;

const named = (name: string) => JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}...` : name);

const decoded = (segment: string) => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // not percent-encoding: the router takes it as it is too
  }
};

/** What a path segment or a query field has that none of ours may: a control character, or text PostgreSQL cannot store. */
const urlRefusal = (v: string) => (hasControl(v) ? 'a control character' : unstorable(v));

/** Why a request path is refused, if it is: a segment with a control character or a lone surrogate (names, ids and SKUs have none). */
export function refusedPath(path: string): string | undefined {
  const segments = path.split('/');
  for (let i = 1; i < segments.length; i++) {
    const refused = urlRefusal(decoded(segments[i]!));
    if (refused) return `path segment ${i} has ${refused}`;
  }
  return undefined;
}

/**
 * Why a request query is refused, if it is: a field given more than once (code reading it expects one string),
 * or a control character or a lone surrogate (queries carry names, filters, searches and cursors, none of which has one).
 */
export function refusedQuery(query: Record<string, string | string[] | undefined>): string | undefined {
  for (const [k, v] of Object.entries(query)) {
    const inName = urlRefusal(k);
    if (inName) return `a query field name has ${inName}`;
    if (Array.isArray(v)) return `query field ${named(k)} is given more than once`;
    const refused = v === undefined ? undefined : urlRefusal(v);
    if (refused) return `query field ${named(k)} has ${refused}`;
  }
  return undefined;
}

/**
 * Why a parsed request body is refused, if it is: a string or field name PostgreSQL cannot store (unstorable; other
 * control characters are for each field's own check, as a note may have line breaks), nesting deeper than
 * MAX_DEPTH, and in a form a field given more than once or with brackets (an array or object where every reader
 * expects a string).
 */
export function refusedBody(body: unknown, form: boolean): string | undefined {
  const where = (at: string) => (at ? `${form ? 'form' : 'body'} field ${named(at)}` : 'the body');
  const check = (v: unknown, at: string, depth: number): string | undefined => {
    if (typeof v === 'string') {
      const refused = unstorable(v);
      return refused && `${where(at)} has ${refused}`;
    }
    if (!v || typeof v !== 'object') return undefined;
    if (form && at) return `${where(at)} is given more than once or with brackets: give it once`;
    if (depth >= MAX_DEPTH) return `${where(at)} nests deeper than ${MAX_DEPTH} levels`;
    for (const [k, x] of Object.entries(v)) {
      const inName = unstorable(k);
      if (inName) return `${where(at)} has a field name with ${inName}`;
      const refused = check(x, Array.isArray(v) ? `${at}[${k}]` : at ? `${at}.${k}` : k, depth + 1);
      if (refused) return refused;
    }
    return undefined;
  };
  return check(body, '', 0);
}
