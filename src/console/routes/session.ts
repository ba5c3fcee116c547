// Public routes: the two static assets, the login form and logout.
import type Router from '@koa/router';
import bodyParser from 'koa-bodyparser';
import { css, js } from '../assets.ts';
import type { OperatorAccess } from '../auth.ts';
import { loginPage } from '../pages/layout.ts';
import { page, safeNext } from '../web.ts';

export function sessionRoutes(r: Router, access: OperatorAccess): void {
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
  r.post('/login', bodyParser({ enableTypes: ['form'], formLimit: '8kb' }), async (ctx) => {
    const body = (ctx.request.body ?? {}) as Record<string, string>;
    const next = safeNext(body.next);
    const result = await access.login(ctx, String(body.token ?? ''));
    if (!result.ok) {
      if (result.retryAfter) ctx.set('Retry-After', String(result.retryAfter));
      return page(ctx, loginPage(result.reason, next), result.status);
    }
    ctx.redirect(next);
  });
  r.post('/logout', async (ctx) => {
    await access.logout(ctx);
    ctx.redirect('/login');
  });
}
