// A process of commerce-sync: the roles it runs (receiver, worker, console) on one HTTP server, with the embedded
// PostgreSQL when DATABASE_URL is unset. `start` (src/start.ts) runs the roles in ROLES and the demo sandbox when
// no account is connected; `receiver` (src/receiver/cli.ts) and `worker` (src/worker/cli.ts) run a single role and
// never the demo.
// Ports: a process with the receiver or the console serves on PORT; one running only workers serves health,
// readiness and metrics on WORKER_PORT, or nothing when that is empty, so workers and receivers on one host
// never fight over a port.
// Start order: the server listens first (/healthz 200, /readyz 503 "starting: ..." until the roles are mounted); a
// start that fails because an external database is away (not up yet, restarting, crashed half-way through) is
// undone and tried again with backoff until it answers (src/db/wait.ts), so processes and their database start in
// any order. Any other failure (a wrong password, a missing database, a migration) still ends the start at once.
import type { CommandContext } from './command.ts';
import { OperatorAccess } from './console/auth.ts';
import * as demo from './demo/index.ts';
import { errorSummary } from './db/index.ts';
import { whileDatabaseAway } from './db/wait.ts';
import { guardProcess } from './guard.ts';
import { serveMetrics } from './metrics.ts';
import { createRuntime, type RoleModule, type Runtime } from './runtime.ts';
import { listenStarting, type StartingServer } from './server.ts';
import { handleShutdown, Interrupted, type Shutdown } from './shutdown.ts';

/** The roles a process can run (ROLES in the settings). */
export type RoleName = 'receiver' | 'worker' | 'console';
/** The roles to run, in order, each with the modules that mount it (the commands pass them: this file imports none). */
export type Roles = Partial<Record<RoleName, readonly RoleModule[]>>;

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

export async function runRoles(ctx: CommandContext, mounted: Roles, opts: { demo?: boolean } = {}): Promise<number> {
  const { config, log } = ctx;
  const roles = Object.keys(mounted) as RoleName[];
  // A database outage must not end a long-running process: see guard.ts.
  guardProcess(log);
  const shutdown = handleShutdown(log);
  try {
    // Listening from the start: /healthz answers while the process starts, /readyz says 503 and why.
    const port = portFor(config, roles);
    let starting = 'starting';
    const early =
      port === null
        ? undefined
        : await listenStarting(port, config.HOST, () => starting, { requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS }).catch(
            (err: NodeJS.ErrnoException) => {
              // A second `npm start`, or another program on 3000: say which setting moves it.
              if (err.code !== 'EADDRINUSE' && err.code !== 'EACCES') throw err;
              const setting = roles.some((r) => r !== 'worker') ? 'PORT' : 'WORKER_PORT';
              throw new Error(
                `${setting} ${port} on ${config.HOST}: ${err.code === 'EACCES' ? 'not allowed to listen there' : 'another program listens there'}; ` +
                  `stop it, or set ${setting} to another port (${setting}=0 picks a free one)`,
              );
            },
          );
    if (early) shutdown.add(() => early.close());
    const attempt = () => startRoles(ctx, mounted, shutdown, { demo: opts.demo, server: early });
    // An external database that is away (not up yet, restarting) is waited for; the embedded one is this process's own.
    const rt = config.DATABASE_URL
      ? await whileDatabaseAway(config.DATABASE_URL, log, attempt, {
          onWait: (reason) => {
            starting = reason ?? 'starting';
          },
          stopping: shutdown.done,
          check: () => shutdown.check(),
        })
      : await attempt();
    shutdown.check();
    const server = port === null ? null : await rt.listen(port);
    for (const step of rt.afterListen) await step();
    ctx.out(
      `commerce-sync ${roles.join(' + ')} ` +
        (server
          ? `listening on http://${config.HOST}:${server.port}`
          : 'running without an HTTP server: set WORKER_PORT to serve /healthz, /readyz and /metrics') +
        (config.DATABASE_URL ? '' : ` (embedded PostgreSQL in ${rt.database.embedded?.dataDir})`),
    );
  } catch (err) {
    // Stopped while starting, a part still starting fails on what the stop closed under it: not a failed start.
    if (!(err instanceof Interrupted) && !shutdown.stopping) {
      // Undo what started before failing (the embedded PostgreSQL above all), then report.
      await shutdown.stop('start-up failed');
      throw err;
    }
  }
  await shutdown.done;
  return 0;
}

/**
 * One try at starting: the runtime, the demo sandbox, the roles' mounts. What it starts stops with the process, or
 * at once when the try fails (a database that went away meanwhile: src/db/wait.ts tries again from the start).
 */
async function startRoles(
  ctx: CommandContext,
  mounted: Roles,
  shutdown: Shutdown,
  opts: { demo?: boolean; server?: StartingServer },
): Promise<Runtime> {
  const { config, log } = ctx;
  const roles = Object.keys(mounted) as RoleName[];
  const steps: (() => Promise<void>)[] = [];
  let stopped = false;
  const stop = async (failed: boolean) => {
    stopped = true;
    for (const step of steps.splice(0).reverse()) {
      await step().catch((err) =>
        // A failed start stops its parts with the database likely away: expected to fail, not an error.
        failed
          ? log.warn({ err: errorSummary(err) }, 'a part of a failed start did not stop cleanly')
          : log.error({ err }, 'error during shutdown'),
      );
    }
  };
  shutdown.add(() => stop(false));
  // Once stopped (a signal), a part that starts after stops at once.
  const part = { add: (step: () => Promise<void>) => (stopped ? shutdown.add(step) : void steps.push(step)), check: shutdown.check };
  try {
    const worker = roles.includes('worker');
    const rt = await createRuntime(config, log, { shutdown: part, server: opts.server, boss: { supervise: worker, schedule: worker } });
    // The demo sandbox goes first so the roles find a connection to work on.
    if (opts.demo && runsDemo(config, roles)) await demo.mount(rt);
    for (const role of roles) {
      for (const mod of mounted[role]!) {
        shutdown.check();
        await mod.mount(rt);
      }
    }
    // The console serves /metrics with its database-wide gauges; other processes serve their own counters.
    if (!roles.includes('console'))
      rt.router.get(
        '/metrics',
        new OperatorAccess({ config, db: rt.database.db, demo: () => rt.demo, publicUrl: () => rt.publicUrl }).guard(),
        serveMetrics,
      );
    return rt;
  } catch (err) {
    await stop(true);
    throw err;
  }
}
