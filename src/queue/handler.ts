// What a queue's handler is and what it gets. A handler lives with its feature (src/sync/handlers.ts,
// src/push/worker.ts, src/channels/dispatch.ts); src/worker/handlers.ts lists them for a worker process.
import type { JobResult, JobWithMetadata, WorkOptions } from 'pg-boss';
import type { ClientDeps } from '../api/index.ts';
import type { Config } from '../config.ts';
import type { Boss } from './boss.ts';
import type { Queue } from './queue.ts';

/** What every job's handler gets: the API layer's dependencies and pg-boss. A handler that needs more says so in `Deps`. */
export interface WorkerDeps extends ClientDeps {
  boss: Boss;
}

export interface Handler<Data, Deps extends WorkerDeps = WorkerDeps> {
  queue: Queue<Data>;
  /** pg-boss work options in a process with these settings; jobs always come with their metadata. */
  work(config: Config): Omit<WorkOptions, 'includeMetadata'>;
  /**
   * Work that is a trace of its own (a push operation, a sweep, maintenance): each batch is a root span, linked to
   * the span it was asked from (a request's, through pg-boss's context on the job). Without it a handler's spans
   * continue what its work is for (a drain: its deliveries' traces).
   */
  traceRoot?: boolean;
  /** Handles a batch; with `perJobResults` in its work options it answers each job's outcome. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a handler without per-job results answers nothing
  handle(deps: Deps, jobs: JobWithMetadata<Data>[]): Promise<void | JobResult[]>;
}

/** Types a handler by its queue's payload (and what it needs beyond WorkerDeps). */
export const defineHandler = <Data, Deps extends WorkerDeps = WorkerDeps>(handler: Handler<Data, Deps>): Handler<Data, Deps> => handler;
