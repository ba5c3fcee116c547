// Public routes: the two static assets, the login form and logout.
import type Router from '@koa/router';
import bodyParser from 'koa-bodyparser';
import { css, js } from '../assets.ts';
import { sessionCookie, tokenMatches } from '../auth.ts';
import { loginPage } from '../pages/layout.ts';
import { page, safeNext, type ConsoleDeps } from '../web.ts';

export function sessionRoutes(r: Router, deps: ConsoleDeps): void {
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
  r.get('/login', (ctx) => page(ctx, loginPage(undefined, safeNext(ctx.query.next))));
  r.post('/login', bodyParser({ enableTypes: ['form'], formLimit: '8kb' }), (ctx) => {
    const body = (ctx.request.body ?? {}) as Record<string, string>;
    const next = safeNext(body.next);
    if (!tokenMatches(deps.config, String(body.token ?? ''))) {
      return page(
        ctx,
        loginPage(deps.config.OPERATOR_TOKEN ? 'That is not the operator token.' : 'Logging in needs OPERATOR_TOKEN to be set.', next),
        401,
      );
    }
    ctx.cookies.set('cs_operator', sessionCookie(deps.config), {
      httpOnly: true,
      sameSite: 'strict',
      secure: ctx.secure,
      path: '/',
      overwrite: true,
    });
    ctx.redirect(next);
  });
  r.post('/logout', (ctx) => {
    ctx.cookies.set('cs_operator', null, { path: '/' });
    ctx.redirect('/login');
  });
}
