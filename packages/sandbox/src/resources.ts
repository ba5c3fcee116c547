// What each resource accepts and how it is listed: writable fields with their types, required fields,
// list filters, sideloads and the default status filter, one file per aggregate under resources/. The domain
// rules live in service.ts.
import { invalid, parseDecimal } from './store.ts';
import type { ResourceDef } from './resources/shared.ts';
import { CATALOG_RESOURCES } from './resources/catalog-fields.ts';
import { ORDER_RESOURCES } from './resources/orders-fields.ts';
import { RETURN_RESOURCES } from './resources/returns-fields.ts';
import { PURCHASING_RESOURCES } from './resources/purchasing-fields.ts';
import { ADJUSTMENT_RESOURCES } from './resources/adjustments-fields.ts';

export const RESOURCES: Record<string, ResourceDef> = {
  ...CATALOG_RESOURCES,
  ...ORDER_RESOURCES,
  ...RETURN_RESOURCES,
  ...PURCHASING_RESOURCES,
  ...ADJUSTMENT_RESOURCES,
};

/** Day-first or year-first date strings, or an ISO timestamp; rendered as YYYY-MM-DD. */
export function parseDate(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const s = v.trim();
  let m = /^(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:[T ].*)?$/.exec(s);
  let y: number, mo: number, d: number;
  if (m) [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  else if ((m = /^(\d{1,2})[-/.](\d{1,2})[-/.](\d{4})$/.exec(s))) [d, mo, y] = [Number(m[1]), Number(m[2]), Number(m[3])];
  else return null;
  const date = new Date(Date.UTC(y, mo - 1, d));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d) return null;
  return date.toISOString().slice(0, 10);
}

/** Picks the writable fields of a request body, converting and checking their types (422 on a bad value). */
export function pickFields(def: ResourceDef, body: Record<string, unknown>, opts: { create: boolean }): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const errors: Record<string, string[]> = {};
  for (const [field, type] of Object.entries(def.writable)) {
    if (!(field in body)) continue;
    const v = body[field];
    if (v === null) {
      out[field] = null;
      continue;
    }
    const bad = (msg: string) => {
      (errors[field] ??= []).push(msg);
    };
    switch (type) {
      case 'int':
        if (typeof v === 'number' && Number.isInteger(v)) out[field] = v;
        else if (typeof v === 'string' && /^\d+$/.test(v)) out[field] = Number(v);
        else bad('is not a number');
        break;
      case 'string':
        if (typeof v === 'string') out[field] = v;
        else if (typeof v === 'number' || typeof v === 'boolean') out[field] = String(v);
        else bad('is invalid');
        break;
      case 'bool':
        if (typeof v === 'boolean') out[field] = v;
        else if (v === 'true' || v === 'false') out[field] = v === 'true';
        else bad('is not a boolean');
        break;
      case 'decimal': {
        const d = parseDecimal(v);
        if (d) out[field] = d.toString();
        else bad('is not a number');
        break;
      }
      case 'strings':
        if (Array.isArray(v) && v.every((x) => typeof x === 'string')) out[field] = v;
        else if (typeof v === 'string')
          out[field] = v
            .split(',')
            .map((x) => x.trim())
            .filter(Boolean);
        else bad('is invalid');
        break;
      case 'date': {
        const d = parseDate(v);
        if (d) out[field] = d;
        else bad('is not a valid date');
        break;
      }
      default:
        out[field] = v;
    }
  }
  if (opts.create) {
    for (const field of def.required ?? []) {
      const v = field in out ? out[field] : body[field];
      if (v === undefined || v === null || v === '') (errors[field] ??= []).push("can't be blank");
    }
  }
  if (Object.keys(errors).length) throw invalid(errors);
  return out;
}
