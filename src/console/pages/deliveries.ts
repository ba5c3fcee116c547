// Stored webhook deliveries and dead letters, each with its Replay button.
import type { DeliveryRow } from '../../db/delivery-reads.ts';
import { deliveryStates } from '../deliveries.ts';
import { html, type Html } from '../html.ts';
import type { DeadLetter, QueueDepth } from '../../queue/depths.ts';
import { enc, json, layout, offers, queueTable, select, when, type PageContext } from './layout.ts';

export function deliveriesPage(
  pc: PageContext,
  rows: DeliveryRow[],
  connections: string[],
  query: Record<string, string>,
  older: string | null = null,
): Html {
  return layout(
    pc,
    'Deliveries',
    '/deliveries',
    html`
<form class="filters" method="get" action="/deliveries">
${select('Connection', 'connection', connections, query.connection)}
${select('State', 'state', deliveryStates, query.state)}
<label>Resource <input name="resource" value="${query.resource ?? ''}" size="12"></label>
<button>Filter</button> <a href="/deliveries">clear</a></form>
<table id="deliveries"><thead><tr><th scope="col">#</th><th scope="col">Received (UTC)</th><th scope="col">Connection</th><th scope="col">Event</th><th scope="col">Object</th><th scope="col">State</th><th scope="col">Error</th><th scope="col">Delivery id</th><th scope="col">Sync log</th><th scope="col"><span class="sr">Action</span></th></tr></thead><tbody>
${
  rows.length
    ? rows.map(
        (
          d,
        ) => html`<tr data-id="${d.id}"><td class="num">${d.id}</td><td class="mono at">${when(d.received_at)}</td><td>${d.connection}</td><td>${d.event ?? ''}</td>
<td>${(d.resource === 'variant' || d.resource === 'order') && d.object_id !== null ? html`<a href="/${d.resource}s/${enc(d.connection)}/${d.object_id}">${d.object_id}</a>` : (d.object_id ?? '')}</td>
<td class="state">${d.state}</td><td>${d.error ?? ''}</td><td class="mono">${d.delivery_id}</td>
<td>${d.object_id !== null && d.resource ? html`<a href="/logs?connection=${enc(d.connection)}&amp;resource=${enc(d.resource)}&amp;record=${d.object_id}">log<span class="sr"> of delivery ${d.id}</span></a>` : ''}</td>
<td>${offers(pc, '/deliveries/:id/replay') ? html`<form method="post" action="/deliveries/${d.id}/replay" class="inline"><button aria-label="Replay delivery ${d.id}">Replay</button></form>` : ''}</td></tr>`,
      )
    : html`<tr><td colspan="10" class="muted">No deliveries match.</td></tr>`
}
</tbody></table>
${older ? html`<p><a href="${older}" id="older">Older deliveries</a></p>` : ''}`,
  );
}

export function deadLettersPage(pc: PageContext, letters: DeadLetter[], queues: QueueDepth[]): Html {
  return layout(
    pc,
    'Dead letters',
    '/dead-letters',
    html`
<p>Jobs that kept failing. Replay sends a job's data back to its live queue.</p>
<table id="dead-letters"><thead><tr><th scope="col">Failed at (UTC)</th><th scope="col">Queue</th><th scope="col">Data</th><th scope="col">Last error</th><th scope="col" class="num">Retries</th><th scope="col"><span class="sr">Action</span></th></tr></thead><tbody>
${
  letters.length
    ? letters.map(
        (
          d,
        ) => html`<tr data-id="${d.id}"><td class="mono at">${when(d.failedAt)}</td><td>${d.liveQueue}</td><td class="mono json">${json(d.data)}</td>
<td class="mono json">${json(d.error)}</td><td class="num">${d.retries ?? ''}</td>
<td>${offers(pc, '/dead-letters/:queue/:id/replay') ? html`<form method="post" action="/dead-letters/${enc(d.queue)}/${d.id}/replay" class="inline"><button aria-label="Replay dead letter ${d.id}">Replay</button></form>` : ''}</td></tr>`,
      )
    : html`<tr><td colspan="6" class="muted">No dead letters: nothing is stuck.</td></tr>`
}
</tbody></table>
<h2>Queues</h2>${queueTable(queues)}`,
  );
}
