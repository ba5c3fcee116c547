// The worker's commands: `worker` (the worker role alone, src/worker/role.ts) and `reconcile` (a sweep now).
import { clientFor, listConnections } from '../api/index.ts';
import { UsageError, type CommandModule, sharedOptions } from '../command.ts';
import { createQueues } from '../queue/queues.ts';
import { createRuntime } from '../runtime.ts';
import { runRoles } from '../process.ts';
import * as workerRole from './role.ts';
import { runSweep, type ResourceSweep, type SweepResult } from '../sync/sweep.ts';

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
    details:
      'Waits for a sweep of the same connection that is already running. Prints, per resource, what the sweep changed in ' +
      'the mirror: drift (changes an event should have announced and no delivery did: missed webhooks), changes the ' +
      'service sends no event for (expected: only sweeps bring them), and changes a delivery was already bringing.',
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
          for (const line of sweepReport(c.name, r, config.ALERT_DRIFT_THRESHOLD)) ctx.out(line);
        }
        return 0;
      } finally {
        await rt.stop();
      }
    },
  },
};

/**
 * What a sweep found, for a person: its changes split into drift, changes no event announces and changes a delivery
 * was bringing (src/sync/drift.ts), each named, so that the figures add up and only drift reads as a fault.
 */
export function sweepReport(name: string, r: SweepResult, threshold: number): string[] {
  const changed = (s: ResourceSweep) => s.applied + s.gone + (s.queued ?? 0);
  const head = `${name}: ${r.full ? 'full' : 'incremental'} sweep read ${r.records} records in ${(r.durationMs / 1000).toFixed(1)} s`;
  const rows = Object.entries(r.resources).filter(([, s]) => s.records || changed(s));
  const width = Math.max(22, ...rows.map(([res]) => res.length));
  if (r.initial)
    return [
      `${head}; initial load of the mirror; channel quantity changes ${r.channelChanges}`,
      ...rows.map(([res, s]) => `  ${res.padEnd(width)} records ${s.records}  loaded ${s.applied}`),
      ...unavailable(r),
    ];
  const lines = [
    `${head}; changed ${r.drift + r.unannounced + r.explained}: drift ${r.drift}, no event ${r.unannounced}, explained ${r.explained}; ` +
      `channel quantity changes ${r.channelChanges}`,
    `  drift:     changes an event should have announced and no delivery did: missed webhooks (the drift alert opens above ${threshold}, ALERT_DRIFT_THRESHOLD)`,
    "  no event:  changes the service sends no event for (an order voided or paid, a variant's price): only sweeps bring them, as expected",
    '  explained: changes a delivery or a queued read was already bringing',
  ];
  for (const [res, s] of rows) {
    // Line items and the resources kept whole are swept whole beside their parents, not judged on their own.
    const judged = s.explained !== undefined || s.unannounced !== undefined;
    const drift = changed(s) - (s.explained ?? 0) - (s.unannounced ?? 0);
    lines.push(
      `  ${res.padEnd(width)} records ${s.records}  changed ${changed(s)}` +
        (judged ? `: drift ${drift}, no event ${s.unannounced ?? 0}, explained ${s.explained ?? 0}` : ' (swept whole, not judged)') +
        (s.gone ? `; ${s.gone} of them gone` : ''),
    );
  }
  return [...lines, ...unavailable(r)];
}

const unavailable = (r: SweepResult) => (r.unavailable.length ? [`  not offered by the service: ${r.unavailable.join(', ')}`] : []);
