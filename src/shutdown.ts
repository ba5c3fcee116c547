// Ctrl-C and SIGTERM stop a long-running command cleanly: the steps registered run in reverse order.
// A second signal while stopping exits at once.
import type { Logger } from './log.ts';

export function onShutdown(log: Logger, steps: (() => Promise<void>)[]): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) { log.warn({ signal }, 'second signal: exiting now'); process.exit(130); }
      stopping = true;
      log.info({ signal }, 'shutting down');
      for (const step of [...steps].reverse()) {
        try { await step(); } catch (err) { log.error({ err }, 'error during shutdown'); }
      }
      resolve();
    };
    process.once('SIGINT', () => void stop('SIGINT'));
    process.once('SIGTERM', () => void stop('SIGTERM'));
  });
}
