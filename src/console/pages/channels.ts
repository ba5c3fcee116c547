// Channels: per connection each channel's rules, overrides and destination (its state, recent POSTs, Pause and
// Resume), and the stock held for channel orders.
import type { DestinationState } from '../../db/channel-destinations.ts';
import { channelOrderPath } from '../channel-orders.ts';
import type { ChannelView, ConnectionChannels } from '../channels.ts';
import { html, type Html } from '../html.ts';
import { channelOrderRows } from './channel-orders.ts';
import { ago, bufferText, enc, layout, offers, select, when, type PageContext } from './layout.ts';

export interface ChannelsPageInput {
  connections: string[];
  query: Record<string, string>;
  view: ConnectionChannels[];
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** "in 42 min" / "3 min ago": how far a time is from now. */
function fromNow(d: Date | string | null): string {
  if (!d) return '';
  const s = Math.round((new Date(d).getTime() - Date.now()) / 1000);
  if (s <= 0) return ago(new Date(d));
  return s < 120 ? `in ${s} s` : s < 7200 ? `in ${Math.round(s / 60)} min` : `in ${Math.round(s / 3600)} h`;
}

const overrideText = (o: ChannelView['overrides'][number]) =>
  o.mode === 'exclude'
    ? 'left out: the channel does not list it'
    : o.mode === 'zero'
      ? 'held at zero'
      : o.mode === 'fixed'
        ? `fixed at ${o.quantity ?? ''}`
        : `own buffer: ${bufferText(o.buffer_units ?? '0', o.buffer_percent)}`;

/** Where a destination POSTs, without the path (it may carry a secret, as hook URLs often do). */
function destinationHost(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname !== '/' || u.search ? '/…' : ''}`;
  } catch {
    return '(invalid URL)';
  }
}

/** The destination's state in a few words, the way an operator asks: is it caught up, and if not, why not. */
export function destinationHeadline(d: DestinationState): { state: 'paused' | 'failing' | 'behind' | 'caught-up'; text: string } {
  const waiting = d.behind ? `, ${plural(d.behind, 'change')} waiting` : ', nothing waiting';
  if (d.paused_at)
    return { state: 'paused', text: `Paused since ${when(d.paused_at)} UTC: ${d.paused_reason ?? 'no reason given'}${waiting}` };
  if (d.failing_since)
    return {
      state: 'failing',
      text: `Failing since ${when(d.failing_since)} UTC (${plural(d.failures, 'POST')} in a row)${waiting}${d.next_attempt_at ? `; next attempt ${fromNow(d.next_attempt_at)}` : ''}`,
    };
  if (d.behind) return { state: 'behind', text: `Behind by ${plural(d.behind, 'change')}` };
  return { state: 'caught-up', text: 'Caught up' };
}

/** How far the destination acknowledged each kind it takes. */
function acknowledged(d: { kinds: string[]; cursor: number; order_cursor: number }): string {
  const parts = [];
  if (d.kinds.includes('stock')) parts.push(`every change up to #${d.cursor}`);
  if (d.kinds.includes('orders')) parts.push(`every order event up to #${d.order_cursor}`);
  return parts.join('; ');
}

function destinationSection(pc: PageContext, c: ChannelView): Html {
  const d = c.destination;
  if (!d)
    return html`<p class="muted destination-none">No destination: the channel reads its changes from <code>GET /api/channels/${c.name}/stock</code>.</p>`;
  const head = destinationHeadline(d);
  // The sender's error names the status ("answered 503", "network error", "no answer within 10000 ms").
  const last = d.last_error ?? (d.last_status !== null ? `HTTP ${d.last_status}` : 'none yet');
  return html`<p class="destination-state state-${head.state}" role="status"><strong>${head.text}</strong></p>
<dl class="facts">
<dt>Sends to</dt><dd class="mono">${destinationHost(d.url)}</dd>
<dt>Sends</dt><dd>${d.kinds.includes('stock') && d.kinds.includes('orders') ? 'stock changes and order events' : d.kinds.includes('orders') ? 'order events' : 'stock changes'}</dd>
<dt>Acknowledged</dt><dd>${acknowledged(d)}</dd>
<dt>Last answer</dt><dd class="last-answer">${last}</dd>
<dt>Last success</dt><dd>${d.last_success_at ? html`${when(d.last_success_at)} UTC <span class="muted">(${ago(d.last_success_at)})</span>` : 'never'}</dd>
</dl>
${
  !offers(pc, d.paused_at ? '/channels/:id/destination/resume' : '/channels/:id/destination/pause')
    ? ''
    : d.paused_at
      ? html`<form method="post" action="/channels/${c.id}/destination/resume" class="inline"><button aria-label="Resume the destination of ${c.name}">Resume</button></form>
<span class="muted">Resuming sends everything after the cursor, in order: nothing was lost while paused.</span>`
      : html`<form method="post" action="/channels/${c.id}/destination/pause" class="pause"><label>Reason <input name="reason" size="28" maxlength="200" placeholder="paused from the console"></label>
<button aria-label="Pause the destination of ${c.name}">Pause</button></form>`
}
<details class="posts"${c.posts.length && !c.posts[0]!.ok ? ' open' : ''}><summary>Recent POSTs (${c.posts.length})</summary>
<div class="wide" tabindex="0" role="region" aria-label="Recent POSTs to the destination of ${c.name}"><table class="posts"><caption class="sr">Recent POSTs to the destination of ${c.name}</caption><thead><tr><th scope="col">At (UTC)</th><th scope="col">Changes</th><th scope="col">Answer</th><th scope="col" class="num">Attempts</th><th scope="col" class="num">ms</th><th scope="col">webhook-id</th></tr></thead><tbody>
${
  c.posts.length
    ? c.posts.map(
        (p) =>
          html`<tr class="${p.ok ? 'outcome-ok' : 'outcome-error'}"><td class="mono at">${when(p.at)}</td><td>${plural(p.changes, 'change')} <span class="muted">#${p.first_change}–#${p.last_change}</span></td>
<td>${p.ok ? `ok (HTTP ${p.status ?? '?'})` : `failed: ${p.error ?? `HTTP ${p.status ?? '?'}`}`}</td><td class="num">${p.attempts}</td><td class="num">${p.ms}</td><td class="mono compact">${p.webhook_id}</td></tr>`,
      )
    : html`<tr><td colspan="6" class="muted">No POST yet.</td></tr>`
}
</tbody></table></div></details>`;
}

function channelCard(pc: PageContext, c: ChannelView, connection: string): Html {
  return html`<section class="card channel" id="channel-${c.id}" data-channel="${c.name}" aria-labelledby="channel-${c.id}-title">
<h3 id="channel-${c.id}-title">${c.name}${c.applied ? '' : html` <span class="tag" title="The stored quantities do not all follow these rules yet: the worker recomputes them (at most ten minutes).">rules not applied to every variant yet</span>`}</h3>
<dl class="facts rules">
<dt>Locations counted</dt><dd class="locations">${c.locations ? c.locations.map((l) => l.name).join(', ') : 'all'}</dd>
<dt>Safety buffer</dt><dd class="buffer">${bufferText(c.bufferUnits, c.bufferPercent)}</dd>
<dt>Max online</dt><dd class="cap">${c.capMaxOnline ? 'caps the quantity' : 'does not cap'}</dd>
<dt>Quantities</dt><dd><a href="/variants?connection=${enc(connection)}&amp;channel=${enc(c.name)}">variants in ${c.name}</a></dd>
</dl>
<h4>Overrides</h4>
${
  c.overrides.length
    ? html`<table class="overrides"><caption class="sr">Overrides of ${c.name}</caption><thead><tr><th scope="col">SKU</th><th scope="col">Override</th><th scope="col">Since (UTC)</th></tr></thead><tbody>
${c.overrides.map((o) => html`<tr data-sku="${o.sku}"><td>${o.sku}</td><td>${overrideText(o)}</td><td class="mono at">${when(o.updated_at)}</td></tr>`)}</tbody></table>`
    : html`<p class="muted">No overrides: every SKU follows the rules above.</p>`
}
<h4>Destination</h4>
${destinationSection(pc, c)}
</section>`;
}

/** A channel order's id, linked to its page while its channel exists. */
function channelOrderLink(c: ConnectionChannels, channel: string, channelOrderId: string): Html | string {
  const ch = c.channels.find((x) => x.name === channel);
  return ch ? html`<a href="${channelOrderPath(ch.id, channelOrderId)}">${channelOrderId}</a>` : channelOrderId;
}

function holdsTable(c: ConnectionChannels): Html {
  if (!c.holds.length) return html`<p class="muted" id="holds-${c.id}">No stock is held for channel orders.</p>`;
  return html`<table class="holds" id="holds-${c.id}"><caption class="sr">Active holds of ${c.name}</caption><thead><tr><th scope="col">Channel</th><th scope="col">Channel order</th><th scope="col">Held</th><th scope="col">Made by</th><th scope="col">Age</th><th scope="col">Expires (UTC)</th><th scope="col">Order at the service</th></tr></thead><tbody>
${c.holds.map(
  (
    h,
  ) => html`<tr id="hold-${h.id}" data-order="${h.channel_order_id}"><td>${h.channel}</td><td class="mono">${channelOrderLink(c, h.channel, h.channel_order_id)}</td>
<td>${h.held
    .filter((l) => !l.ended_at)
    .map(
      (l) =>
        html`<div><a href="/variants/${enc(c.name)}/${l.variant_id}">${l.sku ?? `variant ${l.variant_id}`}</a> × ${l.quantity}${l.ordered_sku && l.ordered_sku !== l.sku ? html` <span class="muted">(in ${l.ordered_sku})</span>` : ''}</div>`,
    )}</td>
<td>${h.source}</td><td>${ago(h.created_at)}</td><td class="mono at">${when(h.expires_at)} <span class="muted">(${fromNow(h.expires_at)})</span></td>
<td>${h.order_id !== null ? html`<a href="/orders/${enc(c.name)}/${h.order_id}">order ${h.order_id}</a>` : html`<span class="muted">not imported yet</span>`}</td></tr>`,
)}</tbody></table>`;
}

export function channelsPage(pc: PageContext, input: ChannelsPageInput): Html {
  return layout(
    pc,
    'Channels',
    '/channels',
    html`
<p>Each connection sells through its channels: each counts the stock of its locations, keeps a safety buffer back, may be capped at max online, and has per-SKU overrides. An order a channel has taken holds its units in every channel until the service's committed stock shows it. A destination receives the channel's changes as signed POSTs, in order, from its cursor.</p>
<form class="filters" method="get" action="/channels">
${select('Connection', 'connection', input.connections, input.query.connection)}
<button>Show</button> <a href="/channels">clear</a></form>
${
  input.view.length
    ? input.view.map(
        (c) => html`<section class="card connection-channels" data-connection="${c.name}" aria-labelledby="channels-${c.id}">
<h2 id="channels-${c.id}">${c.name} <span class="muted">${plural(c.channels.length, 'channel')}</span></h2>
<div class="channel-grid">${c.channels.map((ch) => channelCard(pc, ch, c.name))}</div>
<h3>Stock held for channel orders</h3>
${holdsTable(c)}
<h3>Recent channel orders</h3>
${
  c.orders.length
    ? html`${channelOrderRows(`channel-orders-${c.id}`, `Recent channel orders of ${c.name}`, c.name, c.orders)}
<p class="muted">Each links to its timeline: what happened at the service and the POST that told the channel. Find an older one by its id with the <a href="/orders?connection=${enc(c.name)}">Orders</a> search.</p>`
    : html`<p class="muted" id="channel-orders-${c.id}">No channel order has moved yet: an import, a hold or an event lists it here.</p>`
}
</section>`,
      )
    : html`<p>No channel yet: a connection gets its <code>default</code> channel at its first mirror write. <a href="/connections">Connections</a></p>`
}
<p class="muted">Times are UTC. Add, change or remove channels, overrides and holds with <code>commerce-sync channels</code> or the JSON API (<code>/api/channels</code>).</p>`,
    { refreshSeconds: 30 },
  );
}
