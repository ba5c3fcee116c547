// The demo's channel page: the signed POSTs its channel endpoint received (src/demo/channel-endpoint.ts), newest
// first, each as the channel saw it: verified or not by the `standardwebhooks` package, its type and what it said.
import type { DemoPost } from '../../server.ts';
import { html, type Html } from '../html.ts';
import { layout, when, type PageContext } from './layout.ts';

/** One line on what a POST told the channel. */
function summary(p: DemoPost): string {
  const data = (
    p.payload as {
      data?: { changes?: { sku: string | null; quantity: string | null }[]; events?: { type: string; channel_order_id: string }[] };
    }
  )?.data;
  if (data?.changes)
    return data.changes
      .slice(0, 6)
      .map((c) => `${c.sku ?? '(no SKU)'} = ${c.quantity ?? 'untracked'}`)
      .join(', ')
      .concat(data.changes.length > 6 ? `, and ${data.changes.length - 6} more` : '');
  if (data?.events) return data.events.map((e) => `${e.channel_order_id}: ${e.type}`).join(', ');
  return '';
}

/** `channel` null: this process runs no demo channel, and the page says where a channel's POSTs are seen instead. */
export function demoChannelPage(pc: PageContext, channel: { url: string; posts: DemoPost[] } | null): Html {
  if (!channel)
    return layout(
      pc,
      'Demo channel',
      '/demo-channel',
      html`<p>This process runs no demo channel: it runs only with the demo (<code>npm start</code> with no account connected) when CHANNEL_WEBHOOK_URL is not set. What each channel's destination was sent is on the <a href="/channels">Channels</a> page (its recent POSTs).</p>`,
    );
  const body = html`
<p>The demo's sales channel: an endpoint in this process at <code>${channel.url}</code> (CHANNEL_WEBHOOK_URL), to which the demo connection's <code>default</code> channel sends its quantities and what becomes of its orders, as signed <a href="https://www.standardwebhooks.com/">Standard Webhooks</a> POSTs. Each is verified with the <code>standardwebhooks</code> package, as a channel would. The newest ${String(channel.posts.length)} received since the demo started:</p>
<table class="demo-posts"><thead><tr><th>When (UTC)</th><th>Type</th><th>Signature</th><th>What it said</th><th>Body</th></tr></thead>
<tbody>
${
  channel.posts.length
    ? channel.posts.map(
        (p) => html`<tr class="demo-post">
<td class="mono">${when(p.at)}</td><td class="mono">${p.type}</td>
<td>${p.verified ? html`<span class="ok">verified</span>` : html`<span class="problem">refused: ${p.problem ?? ''}</span>`}</td>
<td>${summary(p)}</td>
<td><details class="raw"><summary>${p.id || 'body'}</summary><pre>${JSON.stringify(p.payload, null, 1)}</pre></details></td></tr>`,
      )
    : html`<tr><td colspan="5" class="muted">Nothing yet: a change of stock or of a channel order is POSTed within seconds.</td></tr>`
}
</tbody></table>`;
  return layout(pc, 'Demo channel', '/demo-channel', body, { refreshSeconds: 5 });
}
