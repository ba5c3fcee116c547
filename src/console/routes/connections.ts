// Connections: the list and connect forms, the OAuth round trip, a privileged token, status, disable.
import type Router from '@koa/router';
import bodyParser from 'koa-bodyparser';
import { listConnections } from '../../api/connections.ts';
import { noteAudit } from '../../audit.ts';
import {
  CALLBACK_PATH,
  connectionStatus,
  ConnectError,
  connectWithToken,
  disableConnection,
  finishOAuth,
  OAUTH_COOKIE,
  startOAuth,
} from '../connections.ts';
import { accessOf } from '../auth.ts';
import { connectionPage, connectionsPage, DEMO_CONNECT_REFUSED } from '../pages/connections.ts';
import { NOT_FOUND, notFoundPage } from '../pages/layout.ts';
import { flatQuery, page, pageContext, type ConsoleDeps } from '../web.ts';
import { documented } from '../../openapi/registry.ts';

export function connectionRoutes(r: Router, deps: ConsoleDeps): void {
  const { db } = deps;
  const pages = documented(r).page;
  const oauthReady = () => Boolean(deps.config.COMMERCE_CLIENT_ID && deps.config.COMMERCE_CLIENT_SECRET);
  const form = bodyParser({ enableTypes: ['form'], formLimit: '16kb' });
  const list = async (ctx: Parameters<Parameters<Router['get']>[1]>[0], problem?: string, status = 200) =>
    page(ctx, connectionsPage(pageContext(deps, ctx, problem ? { problem } : {}), await listConnections(db), oauthReady()), status, {
      leavesSite: true,
    });

  pages.get('/connections', { role: 'viewer' }, (ctx) => list(ctx));
  // Connecting from the open demo console would let anything reaching loopback add an account (and so
  // close demo mode under the operator's feet): the forms are disabled and the routes refuse.
  const notInDemo = async (ctx: Parameters<Parameters<Router['get']>[1]>[0], next: () => Promise<unknown>) => {
    if (accessOf(ctx) === 'open-demo') return list(ctx, DEMO_CONNECT_REFUSED, 403);
    return next();
  };
  pages.post('/connections/oauth', { role: 'admin' }, notInDemo, form, async (ctx) => {
    const body = (ctx.request.body ?? {}) as Record<string, string>;
    try {
      const { url, nonce } = startOAuth(deps, { baseUrl: String(body.base_url ?? ''), name: body.name?.trim() || undefined });
      // Lax: the cookie must come back on the service's top-level redirect to the callback.
      ctx.cookies.set(OAUTH_COOKIE, nonce, {
        httpOnly: true,
        sameSite: 'lax',
        secure: ctx.secure,
        path: CALLBACK_PATH,
        maxAge: 15 * 60_000,
        overwrite: true,
      });
      ctx.redirect(url);
    } catch (err) {
      if (!(err instanceof ConnectError)) throw err;
      await list(ctx, err.message, 400);
    }
  });
  pages.get(CALLBACK_PATH, { role: 'admin' }, notInDemo, async (ctx) => {
    try {
      const connection = await finishOAuth(deps, flatQuery(ctx), ctx.cookies.get(OAUTH_COOKIE));
      const { id, name, base_url, account_name, auth_kind } = connection;
      noteAudit(ctx, {
        changedOnGet: true,
        connection: { id: Number(id), name },
        target: `connection ${name}`,
        after: { connection: { name, base_url, account_name, auth_kind } },
      });
      ctx.cookies.set(OAUTH_COOKIE, null, { path: CALLBACK_PATH });
      ctx.redirect(`/connections/${encodeURIComponent(connection.name)}?connected=${encodeURIComponent(connection.name)}`);
    } catch (err) {
      if (!(err instanceof ConnectError)) throw err;
      await list(ctx, err.message, 400);
    }
  });
  pages.post('/connections/token', { role: 'admin' }, notInDemo, form, async (ctx) => {
    const body = (ctx.request.body ?? {}) as Record<string, string>;
    try {
      const connection = await connectWithToken(deps, {
        baseUrl: String(body.base_url ?? ''),
        token: String(body.token ?? ''),
        name: body.name?.trim() || undefined,
      });
      ctx.redirect(`/connections/${encodeURIComponent(connection.name)}?connected=${encodeURIComponent(connection.name)}`);
    } catch (err) {
      if (!(err instanceof ConnectError)) throw err;
      await list(ctx, err.message, 400);
    }
  });
  pages.get('/connections/:name', { role: 'viewer' }, async (ctx) => {
    const s = await connectionStatus(deps, ctx.params.name!);
    if (!s) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.connection), 404);
    page(ctx, connectionPage(pageContext(deps, ctx), s, oauthReady()), 200, { leavesSite: true });
  });
  pages.post('/connections/:name/disable', { role: 'admin' }, async (ctx) => {
    const c = await disableConnection(deps, ctx.params.name!);
    if (!c) return page(ctx, notFoundPage(pageContext(deps, ctx), NOT_FOUND.connection), 404);
    ctx.redirect(`/connections/${encodeURIComponent(c.name)}?disabled=${encodeURIComponent(c.name)}`);
  });
}
