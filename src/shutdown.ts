// Ctrl-C and SIGTERM stop a long-running command cleanly: the steps registered so far run in reverse order.
// The handler is installed before anything starts, so a signal during start-up still stops what has
// started (the embedded PostgreSQL above all); a step added after the signal runs at once. A second
// signal while stopping exits at once.
// Two ends that are not signals stop it the same way (watchEnds, installed by src/cli.ts before a command runs):
// - Its output closed by the reader (`start 2>&1 | head -3`). Node's stdout and stderr stay open after a write
//   fails with EPIPE and fail again on every write, each failure an 'error' event: unheard, it ended a command
//   with a stack trace and its database running, and under the outage guard (src/guard.ts), which logged it to
//   the closed stream, spun a core for good. A stream that failed is written to no more (writerTo).
// - Started by npm (`npm start`, `npx commerce-sync ...`), its parent gone. npm runs a script in `sh -c`, which
//   does not exec the command, and forwards SIGTERM to that shell: the shell dies and npm exits, leaving us
//   running. (`exec` in the script would hand us the signal, but a terminal's Ctrl-C would then come twice, the
//   terminal's and npm's, and the second would end us at once.)
// A one-shot command (status, logs) is not stopped: it finishes what it began, its output dropped, and exits.
import type { Logger } from './log.ts';

type Step = () => Promise<void>;

/** Thrown by `check()` when a signal (or an end above) arrived during start-up: the caller stops starting things. */
export class Interrupted extends Error {}

export interface Shutdown {
  /** Registers a stop step (runs in reverse order of registration). */
  add(step: Step): void;
  /** Throws Interrupted when a signal arrived; call it between start-up phases. */
  check(): void;
  /** Whether the steps have begun to run (a signal, an end, stop()). */
  readonly stopping: boolean;
  /** Runs the steps now, as a signal would (used when start-up fails half-way). */
  stop(reason: string): Promise<void>;
  /** Resolves when every step has run. */
  done: Promise<void>;
}

const failed = new Set<NodeJS.WritableStream>();
let ended: string | undefined;
const onEnd = new Set<(reason: string) => void>();

function end(reason: string): void {
  if (ended) return;
  ended = reason;
  for (const fn of onEnd) fn(reason);
  onEnd.clear();
}

/** Watches for the ends above, once per process: stdout and stderr failing, and under npm the parent going. */
export function watchEnds(): void {
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', () => {
      failed.add(stream);
      end('output closed');
    });
  if (process.env.npm_lifecycle_event === undefined) return;
  // Only under npm: a process started with `nohup` or by a daemonising wrapper outlives its parent on purpose.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) end('parent process gone');
  }, 500).unref();
}

/** Writes to `stream` until a write to it has failed (the reader gone); then drops what is written. */
export function writerTo(stream: NodeJS.WritableStream): { write(text: string): boolean } {
  return { write: (text) => (failed.has(stream) ? true : stream.write(text)) };
}

/** Resolves with the reason when a command that runs until stopped should stop: SIGINT, SIGTERM or an end above. */
export function untilStopped(): Promise<string> {
  return new Promise((resolve) => {
    const stop = (reason: string) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      onEnd.delete(stop);
      resolve(reason);
    };
    if (ended) return stop(ended);
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    onEnd.add(stop);
  });
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
    // A signal while stopping; an end (the output closed, the parent gone) is no reason to hurry.
    const now = (signal: string) => {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    };
    process.once('SIGINT', now);
    process.once('SIGTERM', now);
    log.info({ reason }, 'shutting down');
    void runAll(steps.splice(0)).then(resolveDone);
  };
  void untilStopped().then((reason) => {
    if (!requested) begin(reason);
  });
  return {
    add(step) {
      if (requested) void runAll([step]);
      else steps.push(step);
    },
    check() {
      if (requested) throw new Interrupted('interrupted during start-up');
    },
    get stopping() {
      return requested;
    },
    stop(reason) {
      if (!requested) begin(reason);
      return done;
    },
    done,
  };
}
