// A process of commerce-sync: the roles it runs (receiver, worker, console) on one HTTP server, with the embedded
// PostgreSQL when DATABASE_URL is unset. `start` (src/start.ts) runs the roles in ROLES and the demo sandbox when
// no account is connected; `receiver` (src/receiver/cli.ts) and `worker` (src/worker/cli.ts) run a single role and
// never the demo.
// Ports: a process with the receiver or the console serves on PORT; one running only workers serves health,
// readiness and metrics on WORKER_PORT, or nothing when that is empty, so workers and receivers on one host
// never fight over a port.
import type { CommandContext } from './command.ts';
import { OperatorAccess } from './console/auth.ts';
import * as demo from './demo/index.ts';
import { guardProcess } from './guard.ts';
import { serveMetrics } from './metrics.ts';
import { createRuntime, type RoleModule } from './runtime.ts';
import { handleShutdown, Interrupted } from './shutdown.ts';

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
    const worker = roles.includes('worker');
    const rt = await createRuntime(config, log, { shutdown, boss: { supervise: worker, schedule: worker } });
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
    shutdown.check();
    const port = portFor(config, roles);
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
    if (!(err instanceof Interrupted)) {
      // Undo what started before failing (the embedded PostgreSQL above all), then report.
      await shutdown.stop('start-up failed');
      throw err;
    }
  }
  await shutdown.done;
  return 0;
}
