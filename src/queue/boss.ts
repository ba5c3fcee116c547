// pg-boss on the same PostgreSQL: it creates and migrates its own schema (pgboss) on start.
import { tracing } from '../telemetry/spans.ts';
import { fromKysely, PgBoss, type Db as BossDatabase, type JobInsert } from 'pg-boss';
import { errorSummary, isConnectionError, type Executor } from '../db/index.ts';
import { PreparingClient } from '../db/prepared.ts';
import type pg from 'pg';
import type { Logger } from '../log.ts';

export type Boss = PgBoss;

/** pg-boss statements on our executor: a job sent with `{ db: bossDb(trx) }` commits or rolls back with trx. */
export function bossDb(executor: Executor): BossDatabase {
  return fromKysely(executor);
}

/**
 * The statement `boss.insert(queue, jobs)` would run and its one parameter (`$1`, text), so a caller can run
 * it with statements of its own in one multi-statement query: one round trip, one transaction (the receiver
 * prepares it once per connection and EXECUTEs it with the parameter inlined, as pg-boss itself inlines it for
 * flows). pg-boss still writes its own SQL; a version whose insert takes another shape fails here, loudly,
 * not in production.
 */
export async function insertStatement(boss: PgBoss, queue: string, jobs: JobInsert[]): Promise<{ statement: string; value: string }> {
  const calls: { text: string; values?: unknown[] }[] = [];
  const recorder: BossDatabase = {
    executeSql: async (text, values) => {
      calls.push({ text, values });
      return { rows: [] };
    },
  };
  await boss.insert(queue, jobs, { db: recorder });
  const [call] = calls;
  const value = call?.values?.[0];
  if (calls.length !== 1 || call!.values!.length !== 1 || typeof value !== 'string' || /\$(?!1\b)\d/.test(call!.text)) {
    throw new Error(`pg-boss's insert no longer runs one statement with one text parameter: the receiver's one-round-trip commit needs it`);
  }
  return { statement: call!.text, value };
}

export async function startBoss(
  url: string,
  log: Logger,
  opts: { supervise?: boolean; schedule?: boolean; max?: number } = {},
): Promise<PgBoss> {
  const boss = new PgBoss({
    connectionString: url,
    max: opts.max ?? 10,
    // Its fetch, insert and completion statements run many times a second: prepared once per connection
    // (src/db/prepared.ts). pg-boss hands its options on to pg's Pool (its own type does not list this one).
    // Their plans are kept generic: with plan_cache_mode auto PostgreSQL would plan the completion afresh on every
    // call, for plans that do not depend on the values: its parameters are job ids and outputs; everything that
    // picks rows (queue, state, limit) is in the text.
    ...({ Client: PreparingClient, options: '-c plan_cache_mode=force_generic_plan' } satisfies pg.PoolConfig),
    // Only processes that run workers maintain queues and fire schedules, and listen: a job put on a queue with
    // notify on (all but deliveries, src/queue/queues.ts) wakes their workers at once, so those poll only as a
    // backstop (notifyPollingIntervalSeconds: 5 s for sweeps, 2 s for pushes and maintenance, 1 s for channel
    // deliveries) for jobs that come due later (retries, delays) or came while every worker was busy. Polling every
    // queue's workers at their base intervals was ~18 fetches a second for an idle deployment, the largest share of
    // its statements (bench/accounts --pg-statements, idle). The listener has one connection of its own.
    supervise: opts.supervise ?? true,
    useListenNotify: opts.supervise ?? true,
    schedule: opts.schedule ?? true,
    migrate: true,
    // How often a supervising process fails jobs whose worker stopped heartbeating (see src/queue/queues.ts).
    superviseIntervalSeconds: 15,
    // How often a supervising process deletes each queue's finished jobs older than JOB_RETENTION_HOURS (and dead
    // letters past DEAD_LETTER_RETENTION_DAYS): every minute, so each of pg-boss's DELETEs takes a minute's worth of
    // jobs, not the day's worth its default (24 h) would pile up.
    maintenanceIntervalSeconds: 60,
    // Queue statistics (the ready count a worker's burst mode looks at) as fresh as supervision.
    monitorIntervalSeconds: 15,
    queueCacheIntervalSeconds: 15,
    // Its own spans (send, process, settle) are no-ops until an SDK is registered (src/telemetry/tracing.ts); traced,
    // a job keeps the trace it was sent in, so a push operation's root links back to the request that asked for it.
    openTelemetry: { propagateContext: tracing() },
  });
  // pg-boss handles a lost connection by itself (its pool opens new ones, its workers and supervisor poll
  // again); this listener is what keeps its 'error' events from ending the process. While the database is
  // away every poll fails: those are logged once per 10 s with the count left out, not once per poll. pg's
  // errors carry the whole Client (kilobytes per line): only what says what happened is logged.
  let quietUntil = 0;
  let suppressed = 0;
  boss.on('error', (err: unknown) => {
    if (!isConnectionError(err)) {
      log.error({ err: errorSummary(err) }, 'pg-boss error');
      return;
    }
    const now = Date.now();
    if (now < quietUntil) {
      suppressed++;
      return;
    }
    quietUntil = now + 10_000;
    log.warn({ err: errorSummary(err), suppressed }, 'pg-boss lost its database connection; it retries by itself');
    suppressed = 0;
  });
  try {
    await boss.start();
  } catch (err) {
    // What it opened before failing (its pool, its timers) goes with it: a process waiting for its database starts
    // a new one on its next try (src/db/wait.ts).
    await boss.stop({ graceful: false }).catch(() => {});
    throw err;
  }
  return boss;
}

/**
 * Stops pg-boss and waits until it has let go of its connections: running jobs get up to 8 s to finish
 * (a job cut short is retried, every handler is idempotent), so a Ctrl-C never waits long.
 */
export async function stopBoss(boss: PgBoss, graceful = true): Promise<void> {
  const stopped = new Promise<void>((resolve) => boss.once('stopped', () => resolve()));
  await boss.stop({ graceful, timeout: 8_000 });
  await Promise.race([stopped, new Promise((r) => setTimeout(r, 9_000).unref())]);
}
