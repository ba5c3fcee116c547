// Connections: the list with a form to connect another account (OAuth or a privileged token), and one
// connection's status, webhook subscriptions, disable and reconnect. No token or secret is rendered.
import type { Connection } from '../../db/schema.ts';
import type { ConnectionStatus } from '../connections.ts';
import { html, type Html } from '../html.ts';
import { enc, layout, offers, when, type PageContext } from './layout.ts';

type Listed = Pick<Connection, 'id' | 'name' | 'base_url' | 'account_name' | 'auth_kind' | 'status' | 'status_reason'>;

/** Why the open demo console connects no account: anyone on this machine could use it to add one. */
export const DEMO_CONNECT_REFUSED =
  'The open demo console cannot connect accounts: set OPERATOR_TOKEN to connect one (the console is then protected by it).';

function connectForms(
  pc: PageContext,
  opts: { oauthReady: boolean; demo: boolean; name?: string; baseUrl?: string; authKind?: string },
): Html {
  if (!offers(pc, '/connections/token')) return html`<p class="muted" id="connect-role">Connecting an account needs the admin role.</p>`;
  const fixed = opts.name !== undefined;
  const oauthOn = opts.oauthReady && !opts.demo;
  const nameField = fixed
    ? html`<input type="hidden" name="name" value="${opts.name}">`
    : html`<label>Name (optional) <input name="name" size="14" pattern="[a-z0-9][a-z0-9_-]{0,62}" title="lowercase letters, digits, - and _"></label>`;
  const baseField = fixed
    ? html`<input type="hidden" name="base_url" value="${opts.baseUrl}">`
    : html`<label>Service address <input name="base_url" size="32" required placeholder="https://api.example-commerce.com" type="url"></label>`;
  return html`<div class="connect">
${opts.demo ? html`<p class="muted" id="connect-demo">${DEMO_CONNECT_REFUSED}</p>` : ''}
${
  !fixed || opts.authKind === 'oauth'
    ? html`<form method="post" action="/connections/oauth" class="filters" id="connect-oauth" aria-labelledby="connect-oauth-title">
${fixed ? '' : html`<h3 id="connect-oauth-title">With OAuth (the service asks the account owner to approve)</h3>`}
${baseField}${nameField}
<button ${oauthOn ? '' : 'disabled'}>${fixed ? 'Reconnect (authorize again)' : 'Connect with OAuth'}</button>
${opts.oauthReady ? '' : html`<span class="muted">needs COMMERCE_CLIENT_ID and COMMERCE_CLIENT_SECRET</span>`}
</form>`
    : ''
}
${
  !fixed || opts.authKind === 'token'
    ? html`<form method="post" action="/connections/token" class="filters" id="connect-token" aria-labelledby="connect-token-title">
${fixed ? '' : html`<h3 id="connect-token-title">With a privileged access token</h3>`}
${baseField}${nameField}
<label>Privileged access token <input name="token" type="password" required autocomplete="off" size="24"></label>
<button ${opts.demo ? 'disabled' : ''}>${fixed ? 'Reconnect with this token' : 'Connect with a token'}</button>
</form>`
    : ''
}
</div>`;
}

export function connectionsPage(pc: PageContext, rows: Listed[], oauthReady: boolean): Html {
  return layout(
    pc,
    'Connections',
    '/connections',
    html`
<table id="connections"><thead><tr><th scope="col">Name</th><th scope="col">Account</th><th scope="col">Service address</th><th scope="col">Sign-in</th><th scope="col">Status</th></tr></thead><tbody>
${
  rows.length
    ? rows.map(
        (
          c,
        ) => html`<tr data-name="${c.name}"><td><a href="/connections/${enc(c.name)}">${c.name}</a></td><td>${c.account_name ?? ''}</td><td class="mono">${c.base_url}</td>
<td>${c.auth_kind === 'oauth' ? 'OAuth' : 'privileged token'}</td><td class="state">${c.status}${c.status_reason ? html` <span class="muted">(${c.status_reason})</span>` : ''}</td></tr>`,
      )
    : html`<tr><td colspan="5" class="muted">No account connected yet.</td></tr>`
}
</tbody></table>
<h2>Connect an account</h2>
<p>OAuth sends you to the service to approve access for commerce-sync, then back here. A privileged access token (single-account applications) is checked with the service and stored encrypted. Either way the account's webhooks are pointed at this console.</p>
${connectForms(pc, { oauthReady, demo: pc.access === 'open-demo' })}`,
  );
}

export function connectionPage(pc: PageContext, s: ConnectionStatus, oauthReady: boolean): Html {
  const c = s.connection;
  return layout(
    pc,
    `Connection ${c.name}`,
    '/connections',
    html`
<dl class="facts" id="connection-facts">
<dt>Status</dt><dd class="state">${c.status}${c.status_reason ? html` (${c.status_reason})` : ''}</dd>
<dt>Account</dt><dd>${c.account_name ?? ''} <span class="muted">(id ${c.account_id ?? '?'})</span></dd>
<dt>Service address</dt><dd class="mono">${c.base_url}</dd>
<dt>Sign-in</dt><dd>${c.auth_kind === 'oauth' ? html`OAuth${c.token_expires_at ? `, access token valid until ${when(c.token_expires_at)} UTC (refreshed by itself)` : ''}` : 'privileged access token'} <span class="muted">(stored encrypted, never shown)</span></dd>
<dt>Connected</dt><dd>${when(c.created_at)} UTC, changed ${when(c.updated_at)} UTC</dd>
</dl>
<h2>Webhook subscriptions</h2>
${s.webhooksReadAt ? html`<p class="muted" id="webhooks-read">As the service listed them at ${when(s.webhooksReadAt)} UTC (the subscription check).</p>` : ''}
${
  s.webhooks
    ? html`<table id="webhooks"><thead><tr><th scope="col">Event</th><th scope="col">Address</th><th scope="col">Ours</th></tr></thead><tbody>
${s.webhooks.length ? s.webhooks.map((w) => html`<tr><td>${w.event}</td><td class="mono">${w.address}</td><td>${w.ours ? 'yes' : 'no (another integration)'}</td></tr>`) : html`<tr><td colspan="3" class="muted">No subscriptions.</td></tr>`}
</tbody></table>`
    : html`<p class="muted" id="webhooks-unavailable">Subscriptions ${s.webhooksError ?? 'unavailable'}.</p>`
}
<h2>Disable or reconnect</h2>
${
  c.status !== 'disabled' && offers(pc, '/connections/:name/disable')
    ? html`<form method="post" action="/connections/${enc(c.name)}/disable"><button>Disable ${c.name}</button>
<span class="muted">Stops all requests for this account until it is reconnected; the mirror is kept.</span></form>`
    : ''
}
${connectForms(pc, { oauthReady, demo: pc.access === 'open-demo', name: c.name, baseUrl: c.base_url, authKind: c.auth_kind })}
<p><a href="/logs?connection=${enc(c.name)}">Sync log of ${c.name}</a> · <a href="/variants?connection=${enc(c.name)}">Variants</a> · <a href="/orders?connection=${enc(c.name)}">Orders</a></p>`,
  );
}
