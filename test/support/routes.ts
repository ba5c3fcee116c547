// The routes actually mounted on a Koa app, read from its routers (not from a hand-written list), for tests
// that must cover every route: access checks, secrets never rendered.
import type Router from '@koa/router';
import type Koa from 'koa';

export interface Route {
  method: string;
  path: string;
  /** The router it is mounted on (whose registry knows its role: src/console/roles.ts leastRole). */
  router: Router;
}

/** Every route of every @koa/router mounted on the app (routers carry themselves on their middleware). */
export function routesOf(app: Koa): Route[] {
  const out: Route[] = [];
  for (const mw of app.middleware as ((...a: unknown[]) => unknown)[]) {
    const router = (mw as { router?: Router }).router;
    if (!router) continue;
    for (const layer of router.stack as { path: string; methods: string[] }[]) {
      for (const method of layer.methods) if (method !== 'OPTIONS') out.push({ method, path: layer.path, router });
    }
  }
  return out;
}
