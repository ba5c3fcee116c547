// Push operations: the filterable list with Retry, and an operation's page with its input, outcome and the
// requests it sent (method, path, status and request id, from the request lists the push worker keeps in its
// outcome entries of the sync log).
import type { PushOperation } from '../../db/schema.ts';
import { html, type Html } from '../html.ts';
import type { LogRow } from '../synclog.ts';
import { fieldTable, flatFields, LOG_COLUMNS, logHead, logRowsHtml } from './history.ts';
import { enc, json, layout, offers, select, when, withQuery, type PageContext } from './layout.ts';

export type OperationRow = PushOperation & { connection: string };

export const OPERATION_HEAD = html`<thead><tr><th scope="col">#</th><th scope="col">Created (UTC)</th><th scope="col">Connection</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Reason</th><th scope="col" class="num">Attempts</th><th scope="col"><span class="sr">Action</span></th></tr></thead>`;

const fieldErrors = (v: unknown) =>
  v && typeof v === 'object'
    ? Object.entries(v as Record<string, unknown>)
        .map(([k, m]) => `${k}: ${Array.isArray(m) ? m.join(', ') : String(m)}`)
        .join('; ')
    : '';
const retryable = (op: Pick<PushOperation, 'state'>) => op.state === 'failed';

/** What a row of the operations table shows (a row, or an operation as the API presents it). */
type OperationLine = Pick<PushOperation, 'id' | 'created_at' | 'kind' | 'state' | 'reason' | 'field_errors' | 'attempts'> & {
  connection: string;
};

/** `canRetry`: whether a failed operation's Retry is offered (an order's page also asks the order's state). */
export function operationRows(pc: PageContext, ops: OperationLine[], canRetry: (op: OperationLine) => boolean = () => true): Html {
  const mayRetry = offers(pc, '/operations/:id/retry');
  return html`${ops.map(
    (
      op,
    ) => html`<tr data-id="${op.id}" class="state-${op.state}"><td><a href="/operations/${op.id}">${op.id}</a></td><td class="mono at">${when(op.created_at)}</td><td>${op.connection}</td>
<td>${op.kind}</td><td class="state">${op.state}</td><td>${op.reason ?? ''}${op.field_errors ? html`<div class="field-errors">${fieldErrors(op.field_errors)}</div>` : ''}</td><td class="num">${op.attempts}</td>
<td>${mayRetry && retryable(op) && canRetry(op) ? html`<form method="post" action="/operations/${op.id}/retry" class="inline"><button aria-label="Retry operation ${op.id}">Retry</button></form>` : ''}</td></tr>`,
  )}`;
}

export interface OperationIndexInput {
  connections: string[];
  kinds: readonly string[];
  states: readonly string[];
  query: Record<string, string>;
  rows: OperationRow[];
  older: string | null;
}

export function operationIndexPage(pc: PageContext, input: OperationIndexInput): Html {
  const q = input.query;
  return layout(
    pc,
    'Operations',
    '/operations',
    html`
<p>Changes sent to the service: imported orders, shipments, invoices, payments, voids, returns, receipts and stock counts. A failed one can be retried with the same idempotency key, so it never happens twice.</p>
<form class="filters" method="get" action="/operations">
${select('Connection', 'connection', input.connections, q.connection)}
${select('State', 'state', input.states, q.state)}
${select('Kind', 'kind', input.kinds, q.kind)}
<button>Filter</button> <a href="/operations">clear</a></form>
<table id="operations">${OPERATION_HEAD}<tbody>
${input.rows.length ? operationRows(pc, input.rows) : html`<tr><td colspan="8" class="muted">No operation matches.</td></tr>`}
</tbody></table>
${input.older ? html`<p><a href="${input.older}">Older operations</a></p>` : ''}`,
  );
}

interface RequestRow {
  at: Date;
  step: string;
  method: string;
  path: string;
  status: string;
  requestId: string;
  ms: string;
}

/** Each request the operation sent, in the order sent, from the request lists its outcome entries carry. */
function requestRows(log: LogRow[]): RequestRow[] {
  return [...log].reverse().flatMap((e) => {
    const d = (e.detail && typeof e.detail === 'object' ? e.detail : {}) as {
      requests?: { method: string; path: string; status: number | null; requestId: string | null; ms: number }[];
    };
    const step = e.action.split('.').pop() ?? e.action;
    return (Array.isArray(d.requests) ? d.requests : []).map((r) => ({
      at: e.at,
      step,
      method: r.method,
      path: r.path,
      status: r.status === null ? 'no answer' : String(r.status),
      requestId: r.requestId ?? '',
      ms: String(r.ms),
    }));
  });
}

export function operationPage(pc: PageContext, op: OperationRow, log: LogRow[]): Html {
  const result = (op.result ?? {}) as Record<string, unknown>;
  const orderId = typeof result.order_id === 'number' ? result.order_id : (op.input as Record<string, unknown>)?.order_id;
  const requests = requestRows(log);
  return layout(
    pc,
    `Operation ${op.id}: ${op.kind}`,
    '/operations',
    html`
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
${retryable(op) && offers(pc, '/operations/:id/retry') ? html`<form method="post" action="/operations/${op.id}/retry"><button>Retry this operation</button></form>` : ''}
<h2>Requests sent</h2>
<table id="operation-requests"><caption class="sr">Requests in the order sent</caption><thead><tr><th scope="col">Attempt ended (UTC)</th><th scope="col">Outcome</th><th scope="col">Method</th><th scope="col">Path</th><th scope="col" class="num">Status</th><th scope="col">Request id</th><th scope="col" class="num">ms</th></tr></thead><tbody>
${
  requests.length
    ? requests.map(
        (r) =>
          html`<tr><td class="mono at">${when(r.at)}</td><td>${r.step}</td><td class="mono">${r.method}</td><td class="mono">${r.path}</td><td class="num">${r.status}</td><td class="mono">${r.requestId}</td><td class="num">${r.ms}</td></tr>`,
      )
    : html`<tr><td colspan="7" class="muted">${op.state === 'queued' || op.state === 'sent' ? 'Nothing sent yet.' : 'No request was sent (the operation was refused before reaching the service).'}</td></tr>`
}
</tbody></table>
<h2>Input</h2>
${fieldTable(flatFields(op.input), 'What was asked')}
<details class="raw"><summary>raw JSON</summary><pre>${JSON.stringify(op.input, null, 2)}</pre></details>
${op.result ? html`<h2>Result</h2>${fieldTable(flatFields(op.result), 'What the service answered')}<details class="raw"><summary>raw JSON</summary><pre>${json(op.result)}</pre></details>` : ''}
<h2>History</h2>
<table id="operation-history" class="log">${logHead}<tbody>
${log.length ? logRowsHtml(log, pc.traceUrl) : html`<tr><td colspan="${LOG_COLUMNS}" class="muted">No entries.</td></tr>`}
</tbody></table>
<p><a href="${withQuery('/operations', {}, { connection: op.connection })}">All operations of ${op.connection}</a></p>`,
  );
}
