// Public routes: the static assets (stylesheet, script, icon), the login form, logout, and sign-in through the
// OpenID provider (its start and the provider's redirect back, src/console/oidc.ts).
import type Router from '@koa/router';
import bodyParser from 'koa-bodyparser';
import { css, favicon, js } from '../assets.ts';
import type { OperatorAccess } from '../auth.ts';
import { CALLBACK_PATH, type OidcDeps, OidcSignIn, START_PATH } from '../oidc.ts';
import { loginPage, signedInPage } from '../pages/layout.ts';
import { page, safeNext } from '../web.ts';
import { auditSignIn } from '../audit.ts';

export function sessionRoutes(r: Router, access: OperatorAccess, deps: OidcDeps): void {
  const signIn = new OidcSignIn(deps);
  const issuer = deps.config.OIDC_ISSUER;
  r.get('/assets/console.css', (ctx) => {
    ctx.type = 'text/css';
    ctx.set('Cache-Control', 'max-age=300');
    ctx.body = css;
  });
  r.get('/assets/console.js', (ctx) => {
    ctx.type = 'application/javascript';
    ctx.set('Cache-Control', 'max-age=300');
    ctx.body = js;
  });
  r.get('/favicon.ico', (ctx) => {
    ctx.type = 'image/svg+xml';
    ctx.set('Cache-Control', 'max-age=86400');
    ctx.body = favicon;
  });
  r.get('/login', (ctx) => page(ctx, loginPage(undefined, safeNext(ctx.query.next), issuer)));
  r.post('/login', bodyParser({ enableTypes: ['form'], formLimit: '8kb' }), async (ctx) => {
    const body = (ctx.request.body ?? {}) as Record<string, string>;
    const next = safeNext(body.next);
    const result = await access.login(ctx, String(body.token ?? ''));
    if (!result.ok) {
      if (result.retryAfter) ctx.set('Retry-After', String(result.retryAfter));
      return page(ctx, loginPage(result.reason, next, issuer), result.status);
    }
    await auditSignIn(ctx, deps.db, deps.config, result.actor, 'token');
    ctx.redirect(next);
  });
  r.get(START_PATH, async (ctx) => {
    const started = await signIn.start(ctx);
    if (!started.ok) return page(ctx, loginPage(started.reason, started.next, issuer), started.status);
    ctx.set('Cache-Control', 'no-store');
    ctx.redirect(started.url);
  });
  // Refusals (no role, another domain, an unverified e-mail, an answer that does not check out) say why on the login page.
  r.get(CALLBACK_PATH, async (ctx) => {
    const result = await signIn.callback(ctx, access);
    if (!result.ok) return page(ctx, loginPage(result.reason, result.next, issuer), result.status);
    await auditSignIn(ctx, deps.db, deps.config, { name: result.email, role: result.role }, 'oidc');
    page(ctx, signedInPage(result.next, result.email, result.role));
  });
  r.post('/logout', async (ctx) => {
    await access.logout(ctx);
    ctx.redirect('/login');
  });
}
