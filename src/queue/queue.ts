// What a queue is: a contract (name, retry policy, payload type, typed send and insert) that a sender imports
// without its handler. Every contract is in contracts.ts and listed in queues.ts; the handlers live with their
// features and src/worker/handlers.ts gives them to a worker process. Each queue has a dead-letter queue
// (`<name>-dead`): a job that keeps failing lands there with its last error, and a replay sends its data back.
import type { JobInsert, SendOptions } from 'pg-boss';
import type { Executor } from '../db/index.ts';
import { bossDb, type Boss } from './boss.ts';

/** Retries and expiry of a queue (pg-boss queue options). */
export interface QueuePolicy {
  retryLimit: number;
  retryDelay: number;
  retryBackoff: boolean;
  expireInSeconds?: number;
  /** How long a job nobody takes waits (pg-boss's default 14 days; JOB_RETENTION_HOURS where set, see queues.ts). */
  retentionSeconds?: number;
  /**
   * Whether a job put on the queue wakes the listening workers (pg-boss notify; default on, src/queue/queues.ts).
   * Off where the insert must be a part of a statement of ours, which a notifying insert (a WITH of its own) cannot.
   */
  notify?: boolean;
}

/** Send options, with `tx` for a job that must commit (or roll back) with the caller's transaction. */
export type JobSendOptions = Omit<SendOptions, 'db'> & { tx?: Executor };

export interface Queue<Data> {
  name: string;
  policy: QueuePolicy;
  send(boss: Boss, data: Data, options?: JobSendOptions): Promise<string | null>;
  /** Many jobs in one statement (each with its own options: group, priority...). */
  insert(boss: Boss, items: (Omit<JobInsert<Data>, 'data'> & { data: Data })[], options?: { tx?: Executor }): Promise<void>;
}

export function defineQueue<Data>(name: string, policy: QueuePolicy): Queue<Data> {
  return {
    name,
    policy,
    send: (boss, data, options = {}) => {
      const { tx, ...rest } = options;
      return boss.send(name, data as object, tx ? { ...rest, db: bossDb(tx) } : rest);
    },
    insert: async (boss, items, options = {}) => {
      await boss.insert(name, items as JobInsert[], options.tx ? { db: bossDb(options.tx) } : undefined);
    },
  };
}

export const deadLetterOf = (name: string) => `${name}-dead`;
export const isDeadLetter = (name: string) => name.endsWith('-dead');
export const liveQueueOf = (dead: string) => dead.replace(/-dead$/, '');
