// The frame every console page shares (navigation, demo banner, notices), the login and closed pages, and
// the small formatting helpers of the page modules. Every value from the database passes through the html
// tag's escaping.
import { html, type Html } from '../html.ts';
import type { QueueDepth } from '../../queue/depths.ts';

export interface PageContext {
  /** How access works now: shown in the banner and the header. */
  access: 'token' | 'open-demo' | 'closed';
  /** Set when the page follows an action (replay done, login failed...). */
  notice?: string;
  problem?: string;
  /** A traced entry's link into the team's tracing backend (TRACE_URL_TEMPLATE), when one is set. */
  traceUrl?: (traceId: string) => string;
  /**
   * Whether the person may POST to an action's route (their role reaches its least role, src/console/roles.ts):
   * a page leaves out the forms of actions the role cannot use. Unset: every action is offered.
   */
  may?: (route: string) => boolean;
  /** The demo runs its own channel endpoint: the navigation links its page. */
  demoChannel?: boolean;
}

/** Whether the page offers the action at `route` (a POST route's pattern, as the role table names it). */
export const offers = (pc: PageContext, route: string): boolean => pc.may?.(route) ?? true;

const nav: [string, string][] = [
  ['/', 'Overview'],
  ['/variants', 'Variants'],
  ['/channels', 'Channels'],
  ['/orders', 'Orders'],
  ['/operations', 'Operations'],
  ['/logs', 'Sync log'],
  ['/deliveries', 'Deliveries'],
  ['/dead-letters', 'Dead letters'],
  ['/connections', 'Connections'],
  ['/audit', 'Audit'],
];

export const when = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString().replace('T', ' ').slice(0, 19) : '');
/**
 * A time as the service gave it (issued_at, packed_at): the service gives some as a day alone, which stays a day,
 * not a midnight in some time zone.
 */
export const serviceWhen = (v: Date | string | null | undefined) => (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v) ? v : when(v));
export const json = (v: unknown) => (v === null || v === undefined ? '' : JSON.stringify(v));
export const ago = (d: Date | null) => {
  if (!d) return 'never';
  const s = Math.max(0, Math.round((Date.now() - new Date(d).getTime()) / 1000));
  return s < 120
    ? `${s} s ago`
    : s < 7200
      ? `${Math.round(s / 60)} min ago`
      : s < 172_800
        ? `${Math.round(s / 3600)} h ago`
        : `${Math.round(s / 86_400)} days ago`;
};
export const enc = encodeURIComponent;

/** A channel's safety buffer in words: units, or a percentage rounded up with its floor (docs/channels.md). */
export function bufferText(units: string, percent: string | null): string {
  if (percent === null) return units === '0' ? 'none' : `${units} unit${units === '1' ? '' : 's'}`;
  return `${percent}% of what is available, rounded up to a whole unit${units !== '0' ? `, at least ${units}` : ''}`;
}

/** The current page's query with some parameters replaced (empty values dropped). */
export function withQuery(path: string, query: Record<string, string>, change: Record<string, string | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...query, ...change })) if (v) p.set(k, v);
  const s = p.toString();
  return s ? `${path}?${s}` : path;
}

/** Previous / next links of a paged list, keeping the other parameters of the query. */
export function pager(path: string, query: Record<string, string>, page: number, pages: number): Html {
  return html`<nav class="pager" aria-label="Pages">${page > 1 ? html`<a href="${withQuery(path, query, { page: String(page - 1) })}" rel="prev">Previous page</a>` : ''}
<span>Page ${page} of ${pages}</span>
${page < pages ? html`<a href="${withQuery(path, query, { page: String(page + 1) })}" rel="next">Next page</a>` : ''}</nav>`;
}

/** Every page's head: its title, the stylesheet and the icon (served at /favicon.ico, src/console/routes/session.ts). */
const head = (title: string, extra: Html | string = '') =>
  html`<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">${extra}
<title>${title} · commerce-sync</title><link rel="icon" href="/favicon.ico" type="image/svg+xml"><link rel="stylesheet" href="/assets/console.css"></head>`;

/**
 * `refreshSeconds`: the page reloads itself (console.js) while its checkbox stays ticked; a meta refresh
 * could not be paused, which fails WCAG 2.2.1 (axe's meta-refresh rule).
 */
export function layout(pc: PageContext, title: string, here: string, body: Html, opts: { refreshSeconds?: number } = {}): Html {
  return html`<!doctype html>
<html lang="en">${head(title)}
<body>
<a class="skip" href="#main">Skip to content</a>
<header><span class="brand">commerce-sync</span>
<nav aria-label="Console">${[...nav, ...(pc.demoChannel ? [['/demo-channel', 'Demo channel'] as const] : [])].map(([href, label]) => html`<a href="${href}" ${href === here ? html`class="here" aria-current="page"` : ''}>${label}</a>`)}</nav>
${pc.access === 'token' ? html`<form method="post" action="/logout" class="inline"><button>Log out</button></form>` : ''}
</header>
${pc.access === 'open-demo' ? html`<div class="banner" id="demo-banner"><strong>Demo mode:</strong> this console is open without a password to anyone on this machine (localhost), because the built-in sandbox is the account and no OPERATOR_TOKEN is set. Set OPERATOR_TOKEN to protect it.</div>` : ''}
<main id="main" tabindex="-1">
${pc.notice ? html`<div class="notice" role="status">${pc.notice}</div>` : ''}
${pc.problem ? html`<div class="problem" role="alert">${pc.problem}</div>` : ''}
<h1>${title}</h1>
${body}
${opts.refreshSeconds ? html`<p class="muted"><label><input type="checkbox" id="auto-refresh" data-seconds="${opts.refreshSeconds}" checked> Refresh this page every ${opts.refreshSeconds} seconds</label></p>` : ''}
</main>
<script src="/assets/console.js"></script>
</body></html>`;
}

/**
 * The login page. `issuer`: OIDC_ISSUER; when sign-in by name is set up, its button (named by the provider's host)
 * comes first, and the token form stays for the break-glass OPERATOR_TOKEN.
 */
export function loginPage(problem?: string, next = '/', issuer = ''): Html {
  const issuerHost = issuer && new URL(issuer).host;
  const tokenForm = html`<form method="post" action="/login"><input type="hidden" name="next" value="${next}">
<label>Token <input type="password" name="token" autocomplete="current-password" ${issuerHost ? '' : 'autofocus'}></label> <button>Log in</button></form>`;
  return html`<!doctype html>
<html lang="en">${head('Log in')}
<body><header><span class="brand">commerce-sync</span></header><main>
${problem ? html`<div class="problem" role="alert">${problem}</div>` : ''}
${
  issuerHost
    ? html`<h1>Sign in</h1>
<p><a id="sign-in" href="/auth/oidc/start?next=${encodeURIComponent(next)}">Sign in with ${issuerHost}</a></p>
<p>Your role (viewer, operator or admin) comes from your groups there.</p>
<h2>Break-glass operator token</h2>
<p>When the sign-in service is out of reach: the operator token (OPERATOR_TOKEN). Scripts send a personal token as <code>Authorization: Bearer TOKEN</code> instead.</p>
${tokenForm}`
    : html`<h1>Operator login</h1>
<p>Enter the operator token (OPERATOR_TOKEN). API clients send it as <code>Authorization: Bearer TOKEN</code> instead.</p>
${tokenForm}`
}
</main></body></html>`;
}

/**
 * After a sign-in through the OpenID provider: the browser goes on to `next` from this page, not by a redirect, so the
 * navigation is same-site and the session cookie (SameSite=Strict) is sent with it; after the provider's cross-site
 * redirect it would not be. A zero-second refresh, with a link for a browser that does not follow it.
 */
export function signedInPage(next: string, who: string, role: string): Html {
  return html`<!doctype html>
<html lang="en">${head('Signed in', html`<meta http-equiv="refresh" content="0;url=${next}">`)}
<body><header><span class="brand">commerce-sync</span></header><main>
<h1>Signed in</h1>
<p>Signed in as ${who} (${role}). <a id="continue" href="${next}">Continue</a></p>
</main></body></html>`;
}

export function closedPage(): Html {
  return html`<!doctype html><html lang="en">${head('Console closed')}
<body><main><h1>Operator console closed</h1><p>Set OPERATOR_TOKEN to use the console and the API.</p></main></body></html>`;
}

/**
 * `what`: one of the console's own sentences (NOT_FOUND), never a name or id from the request: a link could
 * otherwise make the page say anything. A 404 follows no action, so it shows no notice either.
 */
export function notFoundPage(pc: PageContext, what: string): Html {
  return layout(
    { access: pc.access, demoChannel: pc.demoChannel },
    'Not found',
    '',
    html`<p>${what}</p><p><a href="/" id="back">Back to the overview</a></p>`,
  );
}

export const NOT_FOUND = {
  connection: 'No connection of that name.',
  variant: 'No such variant on that connection.',
  order: 'No such order on that connection.',
  operation: 'No such operation.',
  channel: 'No such channel.',
  channelOrder: 'No such channel order: the channel has not imported, held or been told of an order with that id.',
  page: 'The console has no page at this address.',
} as const;

export function queueTable(queues: QueueDepth[]): Html {
  return html`<table id="queues"><caption class="sr">Queue depths</caption><thead><tr><th scope="col">Queue</th><th scope="col" class="num">Waiting</th><th scope="col" class="num">Active</th><th scope="col" class="num">Failed (retained)</th></tr></thead><tbody>
${queues.map((q) => html`<tr><td>${q.queue.endsWith('-dead') ? html`<a href="/dead-letters?queue=${enc(q.queue)}">${q.queue}</a>` : q.queue}</td><td class="num">${q.queued}</td><td class="num">${q.active}</td><td class="num">${q.failed}</td></tr>`)}
</tbody></table>`;
}

/** A select of choices (the empty value first, labelled `all`). */
export function select(label: string, name: string, choices: readonly string[], current: string | undefined, all = 'all'): Html {
  return html`<label>${label} <select name="${name}"><option value="">${all}</option>${choices.map((c) => html`<option ${current === c ? 'selected' : ''}>${c}</option>`)}</select></label>`;
}
