// The audit entry of a change made through the console or the JSON API: a request other than GET or HEAD that the
// operator guard let in and that succeeded (what an entry holds: src/audit.ts).
import type { Context } from 'koa';
import { auditJson, type Actor, type AuditNote } from '../audit.ts';
import type { Config } from '../config.ts';
import { insertAudit } from '../db/audit.ts';
import type { Db } from '../db/index.ts';
import { clientAddress } from './auth.ts';

/** After a changing request the guard let in: its entry, when it succeeded. */
export async function auditRequest(ctx: Context, db: Db, config: Pick<Config, 'TRUST_PROXY'>): Promise<void> {
  const note = (ctx.state.audit as AuditNote | undefined) ?? {};
  if (note.written) return;
  if (((ctx.method === 'GET' || ctx.method === 'HEAD') && !note.changedOnGet) || ctx.status >= 400) return;
  const actor = ctx.state.actor as Actor | undefined;
  if (!actor) return;
  const route = (ctx as Context & { _matchedRoute?: string })._matchedRoute ?? ctx.path;
  const api = ctx.path.startsWith('/api/');
  const params = Object.entries(ctx.params ?? {}).map(([k, v]) => `${k}=${v}`);
  const answer = ctx.body && typeof ctx.body === 'object' && !Buffer.isBuffer(ctx.body) ? ctx.body : undefined;
  const named =
    typeof ctx.query.connection === 'string'
      ? ctx.query.connection
      : typeof ctx.params?.connection === 'string'
        ? ctx.params.connection
        : null;
  await insertAudit(db, {
    actor: actor.name,
    role: actor.role,
    action: `${ctx.method} ${route}`,
    connection_id: note.connection?.id ?? null,
    connection: note.connection?.name ?? named,
    target: note.target ?? (params.length ? params.join(' ') : null),
    before: auditJson(note.before),
    after: auditJson(note.after ?? answer ?? (ctx.request as { body?: unknown }).body),
    source: api ? 'api' : 'console',
    address: clientAddress(ctx, config.TRUST_PROXY),
  });
}

/**
 * A console sign-in (OpenID or the token form): not a change of the account, but who came in, as what and from
 * where is what an audit is read for first.
 */
export async function auditSignIn(
  ctx: Context,
  db: Db,
  config: Pick<Config, 'TRUST_PROXY'>,
  actor: Pick<Actor, 'name' | 'role'>,
  how: 'oidc' | 'token',
): Promise<void> {
  await insertAudit(db, {
    actor: actor.name,
    role: actor.role,
    action: 'sign-in',
    connection_id: null,
    connection: null,
    target: null,
    before: null,
    after: auditJson({ how }),
    source: 'console',
    address: clientAddress(ctx, config.TRUST_PROXY),
  });
}
