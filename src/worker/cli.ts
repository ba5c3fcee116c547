// The worker's commands: `worker` (the worker role alone, src/worker/role.ts) and `reconcile` (a sweep now).
import { clientFor, listConnections } from '../api/index.ts';
import { UsageError, type CommandModule, sharedOptions } from '../command.ts';
import { createQueues } from '../queue/queues.ts';
import { createRuntime } from '../runtime.ts';
import { runRoles } from '../process.ts';
import * as workerRole from './role.ts';
import { runSweep } from '../sync/sweep.ts';

export const commands: CommandModule['commands'] = {
  worker: {
    summary:
      'Run the sync workers alone (deliveries, drains, sweeps, maintenance); several processes share the work. ' +
      'Serves /healthz, /readyz and /metrics on WORKER_PORT when it is set.',
    run: (ctx) => runRoles(ctx, { worker: workerRole.modules }),
  },
  reconcile: {
    summary: 'Run a reconciliation sweep now: incremental (by updated_at from the last cursor) or --full.',
    options: {
      full: {
        multiple: false,
        type: 'boolean',
        short: 'f',
        description: 'full sweep: every record, active and archived; repairs and counts drift',
      },
      connection: sharedOptions.connection('only this connection (default: every active one)'),
    },
    details: 'Waits for a sweep of the same connection that is already running. Prints drift per resource.',
    async run(ctx) {
      const { config, log } = ctx;
      const rt = await createRuntime(config, log, { poolSize: 10, boss: { supervise: false, schedule: false, max: 2 } });
      try {
        await createQueues(rt.boss);
        const all = await listConnections(rt.database.db);
        const name = ctx.values.connection as string | undefined;
        const targets = name ? all.filter((c) => c.name === name) : all.filter((c) => c.status === 'active');
        if (name && !targets.length) throw new UsageError(`no connection named ${JSON.stringify(name)}; see commerce-sync connections`);
        if (!targets.length) {
          ctx.out('no active connection to reconcile; add one with commerce-sync connect');
          return 1;
        }
        for (const c of targets) {
          const deps = rt.workerDeps();
          const r = await runSweep(deps, await clientFor(deps, c), {
            full: ctx.values.full === true,
            wait: true,
            jobId: 'cli',
          });
          ctx.out(
            `${c.name}: ${r.full ? 'full' : 'incremental'} sweep read ${r.records} records in ${(r.durationMs / 1000).toFixed(1)} s; ` +
              `${r.initial ? 'initial load of the mirror' : `drift ${r.drift}`}; channel quantity changes ${r.channelChanges}`,
          );
          const wrote = r.initial ? 'loaded' : 'repaired';
          for (const [res, s] of Object.entries(r.resources)) {
            if (s.records || s.applied || s.gone)
              ctx.out(`  ${res.padEnd(22)} records ${s.records}  ${wrote} ${s.applied}  gone ${s.gone}`);
          }
          if (r.unavailable.length) ctx.out(`  not offered by the service: ${r.unavailable.join(', ')}`);
        }
        return 0;
      } finally {
        await rt.stop();
      }
    },
  },
};
