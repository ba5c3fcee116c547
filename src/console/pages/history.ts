// Sync-log entries as an operator reads them: one sentence saying what happened, a small before/after table
// of what changed, and the raw JSON only behind a disclosure.
import { html, type Html } from '../html.ts';
import type { LogRow } from '../synclog.ts';
import { enc, json, when } from './layout.ts';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | null => {
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return null;
    }
  }
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : null;
};
const scalars = (v: unknown): v is unknown[] => Array.isArray(v) && v.every((e) => e === null || typeof e !== 'object');
const text = (v: unknown): string =>
  v === null || v === undefined ? '—' : scalars(v) ? v.join(', ') : typeof v === 'object' ? JSON.stringify(v) : String(v);
const label = (k: string) => k.replace(/_/g, ' ');

/** One sentence for an entry, from its action, record and detail. */
export function describe(r: LogRow): string {
  const d = obj(r.detail) ?? {};
  const what = r.resource ? `${r.resource}${r.record_id !== null ? ` ${r.record_id}` : ''}${r.sku ? ` (${r.sku})` : ''}` : 'the connection';
  const a = r.action;
  let s: string;
  if (a === 'delivery.received') s = `Webhook received for ${what}${d.event ? ` (${text(d.event)})` : ''}; a read is queued.`;
  else if (a === 'fetch') {
    const n = Number(d.ids ?? 0);
    const records = `${n} ${label(r.resource ?? 'record')}${n === 1 ? '' : 's'}`;
    s =
      r.outcome === 'error'
        ? `Reading ${records} back from the service failed; they stay queued.`
        : `Read back from the service: ${records} in ${text(d.requests ?? 0)} request${d.requests === 1 ? '' : 's'}, ${text(d.applied ?? 0)} changed in the mirror${d.gone ? `, ${text(d.gone)} gone` : ''}.`;
  } else if (a === 'delivery.replay' || a === 'dead-letter.replay')
    s = `An operator replayed ${a.startsWith('delivery') ? 'a delivery' : 'a dead letter'} about ${what}.`;
  else if (a.startsWith('mirror.'))
    s = `The mirror of ${what} was ${a.slice(7) === 'insert' ? 'created' : a.slice(7) === 'delete' || a.slice(7) === 'gone' ? 'marked gone' : 'updated'} from the service.`;
  else if (a === 'channel-quantity') {
    const b = obj(r.before),
      n = obj(r.after);
    const because = d.cause ? `, because of ${text(d.cause)}` : '';
    // Several channels: each one whose quantity moved.
    const bc = obj(b?.channels),
      nc = obj(n?.channels);
    const moved = nc ? Object.keys(nc).filter((k) => text(bc?.[k]) !== text(nc[k])) : [];
    s =
      nc && Object.keys(nc).length > 1 && moved.length
        ? `The channel quantities of ${what} went: ${moved.map((k) => `${k} ${text(bc?.[k])} → ${text(nc[k])}`).join(', ')}${because}.`
        : `The channel quantity of ${what} went from ${text(b?.channel_quantity)} to ${text(n?.channel_quantity)}${because}.`;
  } else if (a.startsWith('sweep')) {
    s =
      a === 'sweep.initial'
        ? `The first full sweep read ${text(d.records ?? 0)} records and loaded the mirror.`
        : `${a === 'sweep.full' ? 'A full sweep' : 'An incremental sweep'} read ${text(d.records ?? 0)} records. Of what it changed in the mirror, ${text(d.drift ?? 0)} an event should have announced and no delivery did (drift), ${text(d.unannounced ?? 0)} the service sends no event for, ${text(d.explained ?? 0)} a delivery was already bringing.`;
  } else if (a.startsWith('push.')) {
    const [, kind, state] = a.split('.');
    const sent = Array.isArray(d.requests) ? d.requests.length : 0;
    s = `Operation ${text(d.operation_id ?? r.record_id)} (${kind})${sent ? ` sent ${sent} request${sent === 1 ? '' : 's'} and` : ''} ${state === 'retry-requested' ? 'was put back in the queue by an operator' : state === 'retry' ? 'failed for now and will be tried again' : `is ${state}`}.`;
  } else s = `${a.replace(/[._]/g, ' ')} on ${what}.`;
  if (r.outcome === 'error' && r.error) s += ` Error: ${r.error}`;
  else if (r.error) s += ` ${r.error}`;
  return s;
}

/** Fields whose value differs between before and after (top level; stock locations one row each). */
export function changedFields(before: unknown, after: unknown): { field: string; before: string; after: string }[] {
  const b = obj(before) ?? {},
    a = obj(after) ?? {};
  const rows: { field: string; before: string; after: string }[] = [];
  for (const k of [...new Set([...Object.keys(b), ...Object.keys(a)])]) {
    if (k === 'locations' && (Array.isArray(b[k]) || Array.isArray(a[k]))) {
      const byId = (v: unknown) => new Map(((Array.isArray(v) ? v : []) as Obj[]).map((l) => [String(l.location_id), l]));
      const bl = byId(b[k]),
        al = byId(a[k]);
      for (const id of [...new Set([...bl.keys(), ...al.keys()])]) {
        for (const f of ['on_hand', 'committed', 'incoming', 'available']) {
          const was = text(bl.get(id)?.[f]),
            now = text(al.get(id)?.[f]);
          if (was !== now) rows.push({ field: `location ${id}: ${label(f)}`, before: was, after: now });
        }
      }
      continue;
    }
    // An object of scalars (a quantity per channel): one row per key.
    const bo = obj(b[k]),
      ao = obj(a[k]);
    if ((bo || ao) && [bo, ao].every((o) => !o || Object.values(o).every((x) => x === null || typeof x !== 'object'))) {
      for (const sub of [...new Set([...Object.keys(bo ?? {}), ...Object.keys(ao ?? {})])]) {
        const was = text(bo?.[sub]),
          now = text(ao?.[sub]);
        if (was !== now) rows.push({ field: `${label(k)} ${sub}`, before: was, after: now });
      }
      continue;
    }
    const was = text(b[k]),
      now = text(a[k]);
    if (was !== now) rows.push({ field: label(k), before: was, after: now });
  }
  return rows;
}

/** Nested fields as "tracking company: DHL" rows; arrays of scalars joined, arrays of objects one row each. */
export function flatFields(v: unknown, prefix = ''): { field: string; value: string }[] {
  const o = obj(v);
  if (!o) return prefix ? [{ field: prefix, value: text(v) }] : [];
  return Object.entries(o).flatMap(([k, x]) => {
    const name = prefix ? `${prefix} ${label(k)}` : label(k);
    if (Array.isArray(x)) {
      return scalars(x) ? [{ field: name, value: text(x) }] : x.flatMap((e, i) => flatFields(e, `${name} ${i + 1}`));
    }
    return x && typeof x === 'object' ? flatFields(x, name) : [{ field: name, value: text(x) }];
  });
}

/** A small two-column table of fields and values. */
export function fieldTable(rows: { field: string; value: string }[], caption?: string): Html {
  return html`<table class="diff">${caption ? html`<caption class="sr">${caption}</caption>` : ''}<tbody>${rows.map((f) => html`<tr><th scope="row">${f.field}</th><td>${f.value}</td></tr>`)}</tbody></table>`;
}

/**
 * What changed between two values as a small table: before and after side by side, or, when nothing was
 * there before, the new values alone. `locationName` names stock locations (else "location 7").
 */
export function changeTable(before: unknown, after: unknown, locationName?: (id: number) => string): Html {
  const named = (f: string) => (locationName ? f.replace(/^location (\d+):/, (_, id: string) => `${locationName(Number(id))}:`) : f);
  const changes = changedFields(before, after)
    .slice(0, 12)
    .map((c) => ({ ...c, field: named(c.field) }));
  if (!changes.length) return html``;
  if (changes.every((c) => c.before === '—')) return fieldTable(changes.map((c) => ({ field: c.field, value: c.after })));
  return html`<table class="diff"><thead><tr><th scope="col">Field</th><th scope="col">Before</th><th scope="col">After</th></tr></thead><tbody>
${changes.map((c) => html`<tr><th scope="row">${c.field}</th><td class="num">${c.before}</td><td class="num">${c.after}</td></tr>`)}</tbody></table>`;
}

/** The detail cell: what changed, the trace it was written in (linked when TRACE_URL_TEMPLATE is set), and the raw entry. */
export function detailCell(r: LogRow, traceUrl?: (traceId: string) => string): Html {
  const raw = {
    before: r.before,
    after: r.after,
    detail: r.detail,
    job_id: r.job_id,
    delivery_id: r.delivery_id,
    request_id: r.request_id,
    trace_id: r.trace_id,
  };
  const traced = r.trace_id && traceUrl ? html`<a class="trace" href="${traceUrl(r.trace_id)}" rel="noopener">trace</a>` : '';
  return html`${changeTable(r.before, r.after)}${traced}
<details class="raw"><summary>raw JSON</summary><pre>${json(raw)}</pre></details>`;
}

export function logRowsHtml(rows: LogRow[], traceUrl?: (traceId: string) => string): Html {
  return html`${rows.map(
    (r) => html`<tr class="outcome-${r.outcome}" data-id="${r.id}">
<td class="mono at">${when(r.at)}</td><td>${r.connection ?? ''}</td><td>${r.resource ?? ''}</td>
<td>${
      r.record_id !== null && r.connection && (r.resource === 'variant' || r.resource === 'order' || r.resource === 'operation')
        ? html`<a href="/${r.resource}s/${r.resource === 'operation' ? '' : `${enc(r.connection)}/`}${r.record_id}">${r.record_id}</a>`
        : (r.record_id ?? '')
    }</td>
<td>${r.sku ?? ''}</td><td class="mono">${r.action}</td><td>${r.outcome}</td><td class="sentence">${describe(r)}</td>
<td class="num">${r.duration_ms ?? ''}</td><td class="detail">${detailCell(r, traceUrl)}</td></tr>`,
  )}`;
}

export const logHead = html`<thead><tr><th scope="col">At (UTC)</th><th scope="col">Connection</th><th scope="col">Resource</th><th scope="col">Record</th><th scope="col">SKU</th><th scope="col">Action</th><th scope="col">Outcome</th><th scope="col">What happened</th><th scope="col" class="num">ms</th><th scope="col">Detail</th></tr></thead>`;
export const LOG_COLUMNS = 10;
