// Records as the service's answers carry them, before anything is checked: what the API client answers, what the
// mirror writes, and the helpers that read their fields safely. The catalogue of resources is index.ts.

/**
 * A record as the service sends it: its numeric id, and its other fields as they came (unchecked: a value may
 * be null, "" or a decimal's text, which the mirrored columns' lenient casts deal with). The fields named are
 * the catalogue's `base` columns (index.ts), which most mirror tables have; the record is kept whole.
 */
export interface ServiceRecord {
  id: number;
  status?: unknown;
  created_at?: unknown;
  updated_at?: unknown;
  [field: string]: unknown;
}

/** Fields of an answer as they came (a record, a line item, a composition row): none of them checked. */
export type Fields = Readonly<Record<string, unknown>>;

/** Whether a value of an answer is an object whose fields can be read. */
export const isFields = (v: unknown): v is Fields => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The distinct ids one field of these records holds: the values that are whole numbers (digits only), as numbers. */
export function idsIn(records: readonly Fields[] | undefined, field: string): number[] {
  return [
    ...new Set(
      (records ?? [])
        .map((r) => r?.[field])
        .filter((v) => v !== null && v !== undefined && /^\d+$/.test(String(v)))
        .map(Number),
    ),
  ];
}

/** JSON with sorted keys, to compare values: jsonb hands objects back in its own key order. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v instanceof Date) return JSON.stringify(v.toISOString());
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v ?? null);
}
