// What a long-running role gets from `start`, `receiver` or `worker`: config, logger, database, pg-boss,
// the shared Koa app, and hooks for readiness, after-listen work and shutdown.
import type Router from '@koa/router';
import type Koa from 'koa';
import type { Config } from './config.ts';
import type { Db, OpenDatabase } from './db/index.ts';
import type { Logger } from './log.ts';
import type { Boss } from './queue/boss.ts';
import type { ReadinessCheck } from './server.ts';

export interface Runtime {
  config: Config;
  log: Logger;
  database: OpenDatabase;
  boss: Boss;
  app: Koa;
  router: Router;
  /** Set once the server listens: where the service should deliver webhooks. */
  publicUrl: string;
  /**
   * The built-in sandbox when this process runs it (demo mode): where it listens. Without OPERATOR_TOKEN the
   * console is open on localhost only while that sandbox is the only connection (src/console/auth.ts).
   */
  demo: false | { baseUrl: string };
  readiness: ReadinessCheck[];
  /** Run after the HTTP server listens (publicUrl is known then). */
  afterListen: (() => Promise<void>)[];
  /** Run at shutdown, in reverse order of registration, before the database closes. */
  onStop: (() => Promise<void>)[];
}

/** What a queue's handler needs (a worker process builds it from its Runtime). */
export interface WorkerDeps {
  db: Db;
  boss: Boss;
  config: Config;
  log: Logger;
}

/** A role module (receiver/role.ts, sync/role.ts, console/role.ts) exports `mount`. */
export type RoleModule = { mount(rt: Runtime): Promise<void> };
