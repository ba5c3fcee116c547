// The console role: pages, /api, the live tail and /metrics on the shared Koa app, all behind operator
// auth (never /webhooks, /healthz or /readyz, which stay on the app's own router). The channels, stock and push
// areas add their /api routes through `mountRoutes(rt, router)` under the same auth.
import type Router from '@koa/router';
import * as channelRoutes from '../channels/routes.ts';
import * as pushRoutes from '../push/routes.ts';
import type { Runtime } from '../runtime.ts';
import * as stockRoutes from '../stock/variant-routes.ts';
import { startSampler } from './gauges.ts';
import { consoleRouters } from './routes.ts';
import { SyncLogTail } from './tail.ts';

type RouteModule = { mountRoutes(rt: Runtime, router: Router): void | Promise<void> };

const routeModules: Record<string, RouteModule> = { channels: channelRoutes, stock: stockRoutes, push: pushRoutes };

export async function mount(rt: Runtime): Promise<void> {
  const { db } = rt.database;
  const tail = new SyncLogTail(rt.database.url, db, rt.log.child({ component: 'tail' }));
  await tail.start();
  const {
    open,
    guarded,
    notFound,
    streams,
    stop: stopRouters,
  } = consoleRouters({
    config: rt.config,
    log: rt.log,
    db,
    clients: rt.clients,
    boss: rt.boss,
    tail,
    demo: () => rt.demo,
    publicUrl: () => rt.publicUrl,
  });
  for (const [area, mod] of Object.entries(routeModules)) {
    try {
      await mod.mountRoutes(rt, guarded);
    } catch (err) {
      // One area failing to mount must not take the console (the way to see what failed) down with it.
      rt.log.error({ err, area }, 'could not mount API routes; the console runs without them');
    }
  }
  rt.app.use(notFound);
  rt.app.use(open.routes()).use(open.allowedMethods());
  rt.app.use(guarded.routes()).use(guarded.allowedMethods());

  const stopSampler = startSampler(db, rt.log);
  rt.onStop.push(async () => {
    stopSampler();
    stopRouters();
    for (const s of streams.keys()) s.end();
    await tail.stop();
  });
  rt.afterListen.push(async () => {
    rt.log.info(
      {
        url: `${rt.publicUrl}/`,
        access: rt.config.OPERATOR_TOKEN ? 'token' : rt.demo ? 'open on localhost while the demo sandbox is the only connection' : 'closed',
      },
      'console ready',
    );
  });
}
