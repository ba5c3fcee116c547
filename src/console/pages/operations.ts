// Push operations: the filterable list with Retry, and an operation's page with its input, outcome and the
// requests it sent (from its sync-log entries: each attempt's request id, status and error).
import type { PushOperation } from '../../db/schema.ts';
import { html, type Html } from '../html.ts';
import type { LogRow } from '../synclog.ts';
import { LOG_COLUMNS, logHead, logRowsHtml } from './history.ts';
import { enc, json, layout, select, when, withQuery, type PageContext } from './layout.ts';

export type OperationRow = PushOperation & { connection: string };

export const OPERATION_HEAD = html`<thead><tr><th scope="col">#</th><th scope="col">Created (UTC)</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Reason</th><th scope="col" class="num">Attempts</th><th scope="col"><span class="sr">Action</span></th></tr></thead>`;

const fieldErrors = (v: unknown) => v && typeof v === 'object'
  ? Object.entries(v as Record<string, unknown>).map(([k, m]) => `${k}: ${Array.isArray(m) ? m.join(', ') : String(m)}`).join('; ') : '';
const retryable = (op: PushOperation) => op.state === 'failed';

export function operationRows(ops: OperationRow[]): Html {
  return html`${ops.map((op) => html`<tr data-id="${op.id}" class="state-${op.state}"><td><a href="/operations/${op.id}">${op.id}</a></td><td class="mono at">${when(op.created_at)}</td>
<td>${op.kind}</td><td class="state">${op.state}</td><td>${op.reason ?? ''}${op.field_errors ? html`<div class="field-errors">${fieldErrors(op.field_errors)}</div>` : ''}</td><td class="num">${op.attempts}</td>
<td>${retryable(op) ? html`<form method="post" action="/operations/${op.id}/retry" class="inline"><button aria-label="Retry operation ${op.id}">Retry</button></form>` : ''}</td></tr>`)}`;
}

export interface OperationIndexInput { connections: string[]; kinds: readonly string[]; states: readonly string[]; query: Record<string, string>; rows: OperationRow[]; older: string | null }

export function operationIndexPage(pc: PageContext, input: OperationIndexInput): Html {
  const q = input.query;
  return layout(pc, 'Operations', '/operations', html`
<p>Changes sent to the service: imported orders, shipments, invoices, payments, voids, returns, receipts and stock counts. A failed one can be retried with the same idempotency key, so it never happens twice.</p>
<form class="filters" method="get" action="/operations">
${select('Connection', 'connection', input.connections, q.connection)}
${select('State', 'state', input.states, q.state)}
${select('Kind', 'kind', input.kinds, q.kind)}
<button>Filter</button> <a href="/operations">clear</a></form>
<table id="operations">${OPERATION_HEAD}<tbody>
${input.rows.length ? operationRows(input.rows) : html`<tr><td colspan="7" class="muted">No operation matches.</td></tr>`}
</tbody></table>
${input.older ? html`<p><a href="${input.older}">Older operations</a></p>` : ''}`);
}

export function operationPage(pc: PageContext, op: OperationRow, log: LogRow[]): Html {
  const result = (op.result ?? {}) as Record<string, unknown>;
  const orderId = typeof result.order_id === 'number' ? result.order_id : (op.input as Record<string, unknown>)?.order_id;
  const requests = log.filter((e) => e.request_id || e.error || e.action.endsWith('.sent') || e.action.endsWith('.confirmed') || e.action.endsWith('.failed') || e.action.endsWith('.retry'));
  return layout(pc, `Operation ${op.id}: ${op.kind}`, '/operations', html`
<dl class="facts" id="operation-facts">
<dt>Connection</dt><dd>${op.connection}</dd><dt>State</dt><dd class="state">${op.state}</dd>
${op.reason ? html`<dt>Reason</dt><dd>${op.reason}</dd>` : ''}
${op.field_errors ? html`<dt>Field errors</dt><dd>${fieldErrors(op.field_errors)}</dd>` : ''}
<dt>Attempts</dt><dd>${op.attempts}</dd>
<dt>Last request</dt><dd>${op.status_code ? `answered ${op.status_code}` : op.state === 'confirmed' ? 'succeeded' : '—'}${op.request_id ? html`, request id <span class="mono">${op.request_id}</span>` : ''}</dd>
${typeof orderId === 'number' ? html`<dt>Order</dt><dd><a href="/orders/${enc(op.connection)}/${orderId}">order ${orderId}</a></dd>` : ''}
<dt>Idempotency key</dt><dd class="mono">${op.idempotency_key}</dd>
<dt>Created</dt><dd>${when(op.created_at)} UTC${op.finished_at ? `, finished ${when(op.finished_at)} UTC` : ''}</dd>
</dl>
${retryable(op) ? html`<form method="post" action="/operations/${op.id}/retry"><button>Retry this operation</button></form>` : ''}
<h2>Requests sent</h2>
<table id="operation-requests"><thead><tr><th scope="col">At (UTC)</th><th scope="col">Step</th><th scope="col">Outcome</th><th scope="col">Request id</th><th scope="col" class="num">ms</th><th scope="col">Error</th></tr></thead><tbody>
${requests.length ? requests.map((e) => html`<tr><td class="mono at">${when(e.at)}</td><td class="mono">${e.action}</td><td>${e.outcome}</td><td class="mono">${e.request_id ?? ''}</td><td class="num">${e.duration_ms ?? ''}</td><td>${e.error ?? ''}</td></tr>`)
    : html`<tr><td colspan="6" class="muted">Nothing sent yet.</td></tr>`}
</tbody></table>
<h2>Input</h2>
<details open><summary>what was asked</summary><pre class="mono">${JSON.stringify(op.input, null, 2)}</pre></details>
${op.result ? html`<h2>Result</h2><details><summary>what the service answered</summary><pre class="mono">${json(op.result)}</pre></details>` : ''}
<h2>History</h2>
<table id="operation-history" class="log">${logHead}<tbody>
${log.length ? logRowsHtml(log) : html`<tr><td colspan="${LOG_COLUMNS}" class="muted">No entries.</td></tr>`}
</tbody></table>
<p><a href="${withQuery('/operations', {}, { connection: op.connection })}">All operations of ${op.connection}</a></p>`);
}
