// `commerce-sync start`: one process running the roles in ROLES (receiver, worker, console) on one HTTP
// server, with the embedded PostgreSQL when DATABASE_URL is unset and the demo sandbox when no account is
// connected. `receiver` and `worker` reuse this with a single role and never run the demo.
// Ports: a process with the receiver or the console serves on PORT; one running only workers serves health,
// readiness and metrics on WORKER_PORT, or nothing when that is empty, so workers and receivers on one host
// never fight over a port.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { CommandModule, CommandContext } from './command.ts';
import { publicUrl } from './config.ts';
import { openDatabase } from './db/index.ts';
import { guardProcess } from './guard.ts';
import { startBoss, stopBoss } from './queue/boss.ts';
import { OperatorAccess } from './console/auth.ts';
import { serveMetrics } from './metrics.ts';
import { createApp, listen } from './server.ts';
import { handleShutdown, Interrupted } from './shutdown.ts';
import type { RoleModule, Runtime } from './runtime.ts';

// A role is one or more modules exporting mount(rt).
const roleModules: Record<string, string[]> = {
  receiver: ['./receiver/role.ts'],
  worker: ['./sync/role.ts', './push/role.ts', './alerts/role.ts'],
  console: ['./console/role.ts'],
};
const demoModule = './demo/index.ts';

const present = (rel: string) => existsSync(fileURLToPath(new URL(rel, import.meta.url)));

/** The port this process serves on, or null for none: see the header. */
export function portFor(config: CommandContext['config'], roles: string[]): number | null {
  if (roles.some((r) => r !== 'worker')) return config.PORT;
  return config.WORKER_PORT === '' ? null : config.WORKER_PORT;
}

/**
 * The demo sandbox (for `start` only) needs a receiver for its webhooks and workers to process them; a
 * process running part of a split deployment never starts one unless SANDBOX=on asks for it.
 */
function runsDemo(config: CommandContext['config'], roles: string[]): boolean {
  if (config.SANDBOX === 'on') return true;
  return config.SANDBOX === 'auto' && roles.includes('receiver') && roles.includes('worker');
}

export async function runRoles(ctx: CommandContext, roles: string[], opts: { demo?: boolean } = {}): Promise<number> {
  const { config, log } = ctx;
  // A database outage must not end a long-running process: see guard.ts.
  guardProcess(log);
  const shutdown = handleShutdown(log);
  try {
    const database = await openDatabase(config, log, { poolSize: config.DATABASE_POOL_SIZE });
    shutdown.add(() => database.close());
    // Stop order (reverse of registration): stop accepting, let the workers finish their jobs, then the
    // roles' own stop steps (the demo sandbox among them), then the database.
    const onStop: Runtime['onStop'] = [];
    shutdown.add(async () => {
      for (const step of [...onStop].reverse()) await step();
    });
    shutdown.check();
    const boss = await startBoss(database.url, log, {
      supervise: roles.includes('worker'),
      schedule: roles.includes('worker'),
      max: config.QUEUE_POOL_SIZE,
    });
    shutdown.add(() => stopBoss(boss));
    shutdown.check();
    // /readyz asks the roles' checks too; they push them onto rt.readiness while mounting.
    const readiness: Runtime['readiness'] = [];
    const { app, router } = createApp(database.pool, log, readiness);
    const rt: Runtime = {
      config,
      log,
      database,
      boss,
      app,
      router,
      publicUrl: '',
      demo: false,
      readiness,
      afterListen: [],
      onStop,
    };
    // The demo sandbox goes first so the roles find a connection to work on.
    if (opts.demo && runsDemo(config, roles) && present(demoModule)) {
      const demo = (await import(demoModule)) as RoleModule;
      await demo.mount(rt);
    }
    for (const role of roles) {
      for (const path of roleModules[role]!) {
        shutdown.check();
        const mod = (await import(path)) as RoleModule;
        await mod.mount(rt);
      }
    }
    // The console serves /metrics with its database-wide gauges; other processes serve their own counters.
    if (!roles.includes('console'))
      router.get(
        '/metrics',
        new OperatorAccess({ config, db: database.db, demo: () => rt.demo, publicUrl: () => rt.publicUrl }).guard(),
        serveMetrics,
      );
    shutdown.check();
    const port = portFor(config, roles);
    const server = port === null ? null : await listen(app, port, config.HOST, { requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS });
    if (server) {
      shutdown.add(() => server.close());
      rt.publicUrl = publicUrl(config, server.port);
    }
    for (const step of rt.afterListen) await step();
    ctx.out(
      `commerce-sync ${roles.join(' + ')} ` +
        (server
          ? `listening on http://${config.HOST}:${server.port}`
          : 'running without an HTTP server: set WORKER_PORT to serve /healthz, /readyz and /metrics') +
        (config.DATABASE_URL ? '' : ` (embedded PostgreSQL in ${database.embedded?.dataDir})`),
    );
  } catch (err) {
    if (!(err instanceof Interrupted)) {
      // Undo what started before failing (the embedded PostgreSQL above all), then report.
      await shutdown.stop('start-up failed');
      throw err;
    }
  }
  await shutdown.done;
  return 0;
}

export const commands: CommandModule['commands'] = {
  start: {
    summary:
      'Run the receiver, workers and console in one process (the roles in ROLES). With no DATABASE_URL an ' +
      'embedded PostgreSQL starts under DATA_DIR; with no connected account the sandbox runs as a demo.',
    run: (ctx) => runRoles(ctx, ctx.config.ROLES.split(','), { demo: true }),
  },
};
