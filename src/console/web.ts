// What every console route shares: the one way to answer with a page (security headers; JSON problems use server.ts),
// query parsing, the page context (access mode, the notice after an action) and the connection lookups.
import { idOf } from '../inputs.ts';
import type { RouterContext } from '@koa/router';
import type { Context } from 'koa';
import { problem } from '../server.ts';
import type { Db } from '../db/index.ts';
import type { Boss } from '../queue/boss.ts';
import type { ClientDeps } from '../api/index.ts';
import type { Runtime } from '../runtime.ts';
import { accessOf } from './auth.ts';
import type { Actor } from '../audit.ts';
import { allows, leastRole } from './roles.ts';
import type { Html } from './html.ts';
import type { PageContext } from './pages/layout.ts';
import { connectionIdOf, FilterError } from './synclog.ts';
import type { SyncLogTail } from './tail.ts';

export interface ConsoleDeps extends ClientDeps {
  boss: Boss;
  tail: SyncLogTail;
  /** The built-in sandbox when this process runs it; read per request (src/console/auth.ts). */
  demo: () => Runtime['demo'];
  /** Where this process is reached (PUBLIC_URL, or the address it listens on): OAuth redirects and webhooks. */
  publicUrl: () => string;
}

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/**
 * Answers with a console page. `leavesSite`: a form on it redirects to the service (the OAuth authorize page),
 * which form-action 'self' would block; only the connections page needs it.
 */
export function page(ctx: Context, body: Html, status = 200, opts: { leavesSite?: boolean } = {}): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Content-Security-Policy', opts.leavesSite ? CSP.replace("form-action 'self'", "form-action 'self' http: https:") : CSP);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Cache-Control', 'no-store');
  ctx.body = body.value;
}

export type Query = Record<string, string>;
export const flatQuery = (ctx: Context): Query =>
  Object.fromEntries(Object.entries(ctx.query).map(([k, v]) => [k, (Array.isArray(v) ? v[0] : v) ?? '']));
export const int = (v: string | undefined) => idOf(v);

/** The connection a parameter names (name or id): undefined when not given, null after answering 404. */
export async function optionalConnection(ctx: Context, db: Db, name: string | undefined): Promise<number | undefined | null> {
  if (!name) return undefined;
  try {
    return await connectionIdOf(db, name);
  } catch (err) {
    if (err instanceof FilterError) {
      problem(ctx, 404, err.message);
      return null;
    }
    throw err;
  }
}

/** The record a `/:connection/:id` path names, loaded by `load`; null when the connection, the id or the record is not there. */
export async function recordAt<T>(
  ctx: Context,
  db: Db,
  load: (db: Db, connectionId: number, id: number) => Promise<T | null | undefined>,
): Promise<T | null> {
  const connectionId = await optionalConnection(ctx, db, ctx.params.connection);
  const id = int(ctx.params.id);
  return (connectionId && id !== undefined ? await load(db, connectionId, id) : null) ?? null;
}

export { connectionNames } from '../db/connections.ts';

// What a redirect after an action says on the next page. Only these fixed sentences are shown, and the value
// in them only when it is what the action put there (an id, or the name of the connection the page is about),
// so a link cannot make the console display text of someone else's choosing.
const id = (v: string) => /^\d{1,18}$/.test(v);
const uuid = (v: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v);
const thisConnection = (v: string, ctx: Context) => v === ctx.params?.name;
const notices: Record<string, { valid: (v: string, ctx: Context) => boolean; say: (v: string) => Partial<PageContext> }> = {
  replayed: { valid: (v) => id(v) || uuid(v), say: (v) => ({ notice: `Replayed ${v}: it is queued again.` }) },
  missing: { valid: () => true, say: () => ({ problem: 'Nothing to replay: it is gone or no longer waiting.' }) },
  retried: { valid: id, say: (v) => ({ notice: `Operation ${v} is queued again with the same idempotency key.` }) },
  queued: { valid: id, say: (v) => ({ notice: `Operation ${v} is queued; this page shows its progress.` }) },
  voiding: {
    valid: id,
    say: (v) => ({ notice: `Operation ${v} voids the order at the service; the channel hears order.voided once the service has it.` }),
  },
  unheld: { valid: (v) => v === '1', say: () => ({ notice: 'Cancelled: the hold has ended and its units count again in every channel.' }) },
  connected: { valid: thisConnection, say: (v) => ({ notice: `Connected ${v}: its webhooks point at this console.` }) },
  disabled: {
    valid: thisConnection,
    say: (v) => ({ notice: `Disabled ${v}: nothing is sent to the service for it until it is reconnected.` }),
  },
};

/** The page context of a request: access mode (as the guard decided it), and the notice of the action that led here. */
export function pageContext(deps: ConsoleDeps, ctx: Context, extra: Partial<PageContext> = {}): PageContext {
  const q = flatQuery(ctx);
  const fromQuery = Object.entries(notices)
    .filter(([k, n]) => q[k] && n.valid(q[k], ctx))
    .map(([k, n]) => n.say(q[k]!));
  const template = deps.config.TRACE_URL_TEMPLATE;
  const traceUrl = template ? (id: string) => template.replaceAll('{trace_id}', encodeURIComponent(id)) : undefined;
  // The actions a page offers are those the person's role may POST to (src/console/roles.ts): the roles of the
  // router serving the page (@koa/router's ctx.router), where the forms are mounted too.
  const actor = ctx.state.actor as Actor | undefined;
  const router = (ctx as Partial<RouterContext>).router;
  const may = (route: string) => {
    const need = router && leastRole(router, 'POST', route);
    return !!actor && !!need && allows(actor.role, need);
  };
  const demo = deps.demo();
  const demoChannel = !!(demo && demo.channel);
  return { access: accessOf(ctx), traceUrl, may, demoChannel, ...Object.assign({}, ...fromQuery), ...extra };
}

/** Only local paths: a login must not redirect to another site. */
export function safeNext(v: unknown): string {
  const s = typeof v === 'string' ? v : '';
  return s.startsWith('/') && !s.startsWith('//') && !s.startsWith('/\\') ? s : '/';
}
