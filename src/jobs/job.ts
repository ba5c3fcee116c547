// What a job is: one module under src/jobs/ gives its queue's name, retry policy, payload type, typed sends and
// handler; src/jobs/index.ts lists them, and that list creates the queues, mounts the workers and tells the
// console which dead letters it may replay. Each queue has a dead-letter queue (`<name>-dead`): a job that keeps
// failing lands there with its last error, and a replay sends its data back to `<name>`.
import type { JobInsert, JobResult, JobWithMetadata, SendOptions, WorkOptions } from 'pg-boss';
import type { Config } from '../config.ts';
import type { Executor } from '../db/index.ts';
import { bossDb, type Boss } from '../queue/boss.ts';
import type { WorkerDeps } from '../runtime.ts';

/** Retries and expiry of a queue (pg-boss queue options). */
export interface QueuePolicy {
  retryLimit: number;
  retryDelay: number;
  retryBackoff: boolean;
  expireInSeconds?: number;
  /** How long a job nobody takes waits (pg-boss's default 14 days; JOB_RETENTION_HOURS where set, see index.ts). */
  retentionSeconds?: number;
}

export interface JobSpec<Data> {
  name: string;
  policy: QueuePolicy;
  /** Whether a worker process takes this queue's jobs (absent: always). */
  runs?(config: Config): boolean;
  /** pg-boss work options in a process with these settings; jobs always come with their metadata. */
  work(config: Config): Omit<WorkOptions, 'includeMetadata'>;
  /** Handles a batch; with `perJobResults` in its work options it answers each job's outcome. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a handler without per-job results answers nothing
  handle(deps: WorkerDeps, jobs: JobWithMetadata<Data>[]): Promise<void | JobResult[]>;
}

/** Send options, with `tx` for a job that must commit (or roll back) with the caller's transaction. */
export type JobSendOptions = Omit<SendOptions, 'db'> & { tx?: Executor };

export interface Job<Data> extends JobSpec<Data> {
  send(boss: Boss, data: Data, options?: JobSendOptions): Promise<string | null>;
  /** Many jobs in one statement (each with its own options: group, priority...). */
  insert(boss: Boss, items: (Omit<JobInsert<Data>, 'data'> & { data: Data })[], options?: { tx?: Executor }): Promise<void>;
}

export function defineJob<Data>(spec: JobSpec<Data>): Job<Data> {
  return {
    ...spec,
    send: (boss, data, options = {}) => {
      const { tx, ...rest } = options;
      return boss.send(spec.name, data as object, tx ? { ...rest, db: bossDb(tx) } : rest);
    },
    insert: async (boss, items, options = {}) => {
      await boss.insert(spec.name, items as JobInsert[], options.tx ? { db: bossDb(options.tx) } : undefined);
    },
  };
}

export const deadLetterOf = (name: string) => `${name}-dead`;
export const isDeadLetter = (name: string) => name.endsWith('-dead');
export const liveQueueOf = (dead: string) => dead.replace(/-dead$/, '');
