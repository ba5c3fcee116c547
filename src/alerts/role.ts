// Alerts in a worker process: every ALERT_EVALUATE_SECONDS evaluate the conditions (one process at a time does,
// see evaluate.ts), then send the notices due. Rounds never overlap; a failing round is logged and the next one runs
// as usual. Mounted with the worker role (src/process.ts).
import type { ProcessRuntime } from '../server.ts';
import type { WorkerDeps } from '../queue/handler.ts';
import { hostOf } from '../channels/sender.ts';
import { evaluateAlerts, pruneAlertTables } from './evaluate.ts';
import { inSpan } from '../telemetry/spans.ts';
import { alertFormat, sendDueNotices, type NotifyDeps } from './notify.ts';

const PRUNE_EVERY_MS = 60 * 60_000;

export interface AlertLoop {
  /** One round now (evaluate, then notify); resolves when it is done. */
  round(): Promise<void>;
  stop(): Promise<void>;
}

export function startAlerts(
  deps: Pick<WorkerDeps, 'db' | 'config' | 'log'> & { policy?: NotifyDeps['policy']; everyMs?: number },
): AlertLoop {
  const { config } = deps;
  const log = deps.log.child({ role: 'alerts' });
  let lastPrune = 0;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  // Each round is a trace of its own (its queries, and the POST of any notice with its traceparent).
  const once = () => inSpan('alerts round', { root: true }, roundOnce);
  const roundOnce = async () => {
    try {
      await evaluateAlerts({ db: deps.db, config, log });
      await sendDueNotices({ db: deps.db, config, log, policy: deps.policy });
      if (Date.now() - lastPrune > PRUNE_EVERY_MS) {
        lastPrune = Date.now();
        await pruneAlertTables(deps.db);
      }
    } catch (err) {
      log.warn({ err: { message: (err as Error).message } }, 'alert round failed; the next one tries again');
    }
  };
  const round = () => {
    running = running.then(() => (stopped ? undefined : once()));
    return running;
  };
  const timer = setInterval(() => void round(), deps.everyMs ?? config.ALERT_EVALUATE_SECONDS * 1000);
  timer.unref();
  if (config.ALERT_WEBHOOK_URL)
    log.info({ to: hostOf(config.ALERT_WEBHOOK_URL), format: alertFormat(config) }, 'alert notices go to ALERT_WEBHOOK_URL');
  return {
    round,
    async stop() {
      clearInterval(timer);
      stopped = true;
      // A send may be waiting on a slow URL: shutdown does not wait for it (the notice is claimed, and sent again
      // with the same webhook-id once the claim expires).
      await Promise.race([running, new Promise((r) => setTimeout(r, 3000).unref())]);
    },
  };
}

export async function mount(rt: ProcessRuntime): Promise<void> {
  const loop = startAlerts({ db: rt.database.db, config: rt.config, log: rt.log });
  rt.onStop.push(() => loop.stop());
}
