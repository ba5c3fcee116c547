// The audit page: who changed what, newest first, with filters; each entry's values before and after.
import type { AuditEntry } from '../../db/audit.ts';
import { html, type Html } from '../html.ts';
import { layout, select, when, type PageContext } from './layout.ts';

export interface AuditPageInput {
  rows: AuditEntry[];
  connections: string[];
  query: Record<string, string>;
  older: string | null;
}

const value = (v: unknown) =>
  v === null || v === undefined ? html`<span class="muted">-</span>` : html`<pre class="audit-value">${JSON.stringify(v, null, 1)}</pre>`;

export function auditPage(pc: PageContext, input: AuditPageInput): Html {
  const q = input.query;
  const body = html`
<p>Every change made through the console, the API or the CLI: who, in which role, what, on which connection and record, from where, and the values before and after. Entries are never changed; they are kept AUDIT_RETENTION_DAYS. <code>GET /api/audit?since=ID</code> exports them, <code>commerce-sync audit</code> prints them.</p>
<form class="filters" method="get" action="/audit">
<label>Who <input name="actor" value="${q.actor ?? ''}" size="24"></label>
<label>Action <input name="action" value="${q.action ?? ''}" size="24" placeholder="PATCH, channels, void"></label>
${select('Connection', 'connection', input.connections, q.connection)}
<button>Filter</button> <a href="/audit">clear</a>
</form>
<table class="audit"><thead><tr><th>#</th><th>When (UTC)</th><th>Who</th><th>Role</th><th>Action</th><th>Connection</th><th>Target</th><th>From</th><th>Before</th><th>After</th></tr></thead>
<tbody>
${
  input.rows.length
    ? input.rows.map(
        (e) => html`<tr class="audit-entry">
<td>${String(e.id)}</td><td class="mono">${when(e.at)}</td><td>${e.actor}</td><td>${e.role}</td><td class="mono">${e.action}</td>
<td>${e.connection ?? ''}</td><td>${e.target ?? ''}</td><td class="mono">${e.source}${e.address ? html` ${e.address}` : ''}</td>
<td>${value(e.before)}</td><td>${value(e.after)}</td></tr>`,
      )
    : html`<tr><td colspan="10" class="muted">No entries match.</td></tr>`
}
</tbody></table>
${input.older ? html`<p><a href="${input.older}" id="older">Older entries</a></p>` : ''}`;
  return layout(pc, 'Audit', '/audit', body);
}
