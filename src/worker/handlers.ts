// The registry: every queue's handler, given to a worker process. Senders never import this module (they use
// src/queue/contracts.ts); it is the one place that knows every handler.
import type { JobWithMetadata } from 'pg-boss';
import { channelDeliveryHandler } from '../channels/dispatch.ts';
import { pushHandler } from '../push/worker.ts';
import { deliveriesHandler, maintenanceHandler, reconcileHandler } from '../sync/handlers.ts';
import type { Handler } from '../queue/handler.ts';
import type { SyncDeps } from '../sync/state.ts';
import { inSpan } from '../telemetry/spans.ts';

export const handlers: readonly Handler<unknown, SyncDeps>[] = [
  deliveriesHandler,
  reconcileHandler,
  channelDeliveryHandler,
  pushHandler,
  maintenanceHandler,
];

/**
 * Mounts the workers of `which` handlers; they stop with the function it answers, at shutdown.
 * `pollingIntervalSeconds` caps every queue's polling intervals, the backstop beside notifications too (tests poll
 * faster).
 */
export async function workQueues(
  deps: SyncDeps,
  which: readonly Handler<unknown, SyncDeps>[] = handlers,
  opts: { pollingIntervalSeconds?: number } = {},
): Promise<() => Promise<void>> {
  const mounted: string[] = [];
  for (const handler of which) {
    const options = { ...handler.work(deps.config), includeMetadata: true as const };
    if (opts.pollingIntervalSeconds !== undefined) {
      options.pollingIntervalSeconds = Math.min(options.pollingIntervalSeconds ?? 2, opts.pollingIntervalSeconds);
      options.notifyPollingIntervalSeconds = Math.min(options.notifyPollingIntervalSeconds ?? 30, opts.pollingIntervalSeconds);
    }
    // pg-boss types a handler by its options; every handler takes its batch with metadata (handler.ts).
    const name = handler.queue.name;
    const handle = handler.traceRoot
      ? (batch: JobWithMetadata<unknown>[]) =>
          inSpan(
            `${name} job`,
            { root: true, attributes: { 'messaging.destination.name': name, 'messaging.batch.message_count': batch.length } },
            () => handler.handle(deps, batch),
          )
      : (batch: JobWithMetadata<unknown>[]) => handler.handle(deps, batch);
    await deps.boss.work(name, options, handle as never);
    mounted.push(name);
  }
  return async () => {
    for (const name of mounted) await deps.boss.offWork(name);
  };
}
