// The sync log page: filters, the entries newest first, and the live tail (src/console/assets.ts) following on.
import { html, type Html } from '../html.ts';
import { outcomes, type LogRow } from '../synclog.ts';
import { LOG_COLUMNS, logHead, logRowsHtml } from './history.ts';
import { layout, select, type PageContext } from './layout.ts';

export interface LogPageInput {
  rows: LogRow[];
  connections: string[];
  query: Record<string, string>;
  /** SSE URL carrying the same filters and the id to follow on from, or null for a closed time range. */
  stream: string | null;
  /** The next page of older entries, when there may be one. */
  older: string | null;
}

export function logPage(pc: PageContext, input: LogPageInput): Html {
  const q = input.query;
  return layout(
    pc,
    'Sync log',
    '/logs',
    html`
<form class="filters" method="get" action="/logs" id="log-filters">
${select('Connection', 'connection', input.connections, q.connection)}
<label>Resource <input name="resource" value="${q.resource ?? ''}" size="12"></label>
<label>SKU <input name="sku" value="${q.sku ?? ''}" size="14"></label>
${select('Outcome', 'outcome', outcomes, q.outcome)}
<label>Record id <input name="record" value="${q.record ?? ''}" size="8"></label>
<label>From <input name="from" value="${q.from ?? ''}" placeholder="2026-01-01T00:00Z" size="18"></label>
<label>To <input name="to" value="${q.to ?? ''}" placeholder="(live)" size="18"></label>
<button>Filter</button> <a href="/logs">clear</a>
</form>
<p id="tail-state" role="status">${input.stream ? 'connecting to the live tail...' : 'time range closed: not following'}</p>
<table class="log">${logHead}
<tbody id="log-rows" data-stream="${input.stream ?? ''}">
${input.rows.length ? logRowsHtml(input.rows, pc.traceUrl) : html`<tr id="log-empty"><td colspan="${LOG_COLUMNS}" class="muted">No entries match.</td></tr>`}
</tbody></table>
${input.older ? html`<p><a href="${input.older}" id="older">Older entries</a></p>` : ''}`,
  );
}
