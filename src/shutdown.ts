// Ctrl-C and SIGTERM stop a long-running command cleanly: the steps registered so far run in reverse order.
// The handler is installed before anything starts, so a signal during start-up still stops what has
// started (the embedded PostgreSQL above all); a step added after the signal runs at once. A second
// signal while stopping exits at once.
import type { Logger } from './log.ts';

type Step = () => Promise<void>;

/** Thrown by `check()` when a signal arrived during start-up: the caller stops starting things. */
export class Interrupted extends Error {}

export interface Shutdown {
  /** Registers a stop step (runs in reverse order of registration). */
  add(step: Step): void;
  /** Throws Interrupted when a signal arrived; call it between start-up phases. */
  check(): void;
  /** Runs the steps now, as a signal would (used when start-up fails half-way). */
  stop(reason: string): Promise<void>;
  /** Resolves when every step has run. */
  done: Promise<void>;
}

export function handleShutdown(log: Logger): Shutdown {
  const steps: Step[] = [];
  let requested = false;
  let chain = Promise.resolve();
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => {
    resolveDone = r;
  });
  const runAll = (list: Step[]) => {
    chain = chain.then(async () => {
      for (const step of list.reverse()) {
        const started = Date.now();
        try {
          await step();
        } catch (err) {
          log.error({ err }, 'error during shutdown');
        }
        log.debug({ step: step.name || 'step', ms: Date.now() - started }, 'shutdown step done');
      }
    });
    return chain;
  };
  const begin = (reason: string) => {
    requested = true;
    log.info({ reason }, 'shutting down');
    void runAll(steps.splice(0)).then(resolveDone);
  };
  const onSignal = (signal: string) => {
    if (requested) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    }
    begin(signal);
  };
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  return {
    add(step) {
      if (requested) void runAll([step]);
      else steps.push(step);
    },
    check() {
      if (requested) throw new Interrupted('interrupted during start-up');
    },
    stop(reason) {
      if (!requested) begin(reason);
      return done;
    },
    done,
  };
}
