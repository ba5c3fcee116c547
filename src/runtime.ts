// One runtime, built by one factory: what `start`, `receiver`, `worker` and every test harness run on. It holds
// the config, the logger, the database, pg-boss, the shared Koa app, what the API clients of this runtime share
// (src/api/client-state.ts) and the sync workers' memory (src/sync/state.ts): nothing of it lives at module level, so
// two runtimes in one process share nothing by accident. Roles mount onto it (src/process.ts lists them).
import { ClientState } from './api/index.ts';
import { publicUrl as publicUrlOf, type Config } from './config.ts';
import { openDatabase, type OpenDatabase } from './db/index.ts';
import type { Logger } from './log.ts';
import { startBoss, stopBoss } from './queue/boss.ts';
import { createApp, listen, type ProcessRuntime, type ReadinessCheck, type StartingServer } from './server.ts';
import { createSyncState, type SyncState } from './sync/state.ts';
import type { SyncDeps } from './sync/state.ts';

/** A process's runtime: what every role mounts onto (ProcessRuntime, src/server.ts), and the sync workers' memory. */
export interface Runtime extends ProcessRuntime {
  /** The sync workers' memory: pacing, connection statuses, the drains' and sweeps' clients. */
  sync: SyncState;
  /** What a queue's handler gets (src/queue/handler.ts), with what the sweeps need. */
  workerDeps(): SyncDeps;
  /** Stops what the runtime started, in reverse order: the server, the roles' steps, pg-boss, the database. */
  stop(): Promise<void>;
}

/** A role module (receiver/role.ts, worker/role.ts, console/role.ts, ...) exports `mount`. */
export type RoleModule = { mount(rt: Runtime): Promise<void> };

export interface RuntimeOptions {
  /** A database opened by the caller (tests, benchmarks): used as it is and not closed by stop(). */
  database?: OpenDatabase;
  /** Connections of the runtime's pool when it opens the database (DATABASE_POOL_SIZE by default). */
  poolSize?: number;
  /**
   * pg-boss: whether this runtime supervises queues and fires schedules (processes running workers do), its pool,
   * and its database when not the runtime's (a test whose receiver pool goes through a proxy).
   */
  boss?: { supervise?: boolean; schedule?: boolean; max?: number; url?: string };
  /**
   * Where stop steps go as each part starts (src/shutdown.ts: a signal during start-up stops what has started);
   * `check` is called between the parts. Without, stop() runs them.
   */
  shutdown?: { add(step: () => Promise<void>): void; check(): void };
  /** A server already listening while the process started (src/process.ts): listen() serves the app on it. */
  server?: StartingServer;
}

export async function createRuntime(config: Config, log: Logger, opts: RuntimeOptions = {}): Promise<Runtime> {
  const steps: (() => Promise<void>)[] = [];
  const onStop: Runtime['onStop'] = [];
  const add = (step: () => Promise<void>) => (opts.shutdown ? opts.shutdown.add(step) : steps.push(step));
  const check = () => opts.shutdown?.check();
  try {
    const database = opts.database ?? (await openDatabase(config, log, { poolSize: opts.poolSize ?? config.DATABASE_POOL_SIZE }));
    if (!opts.database) add(() => database.close());
    check();
    // After the workers, before the database: what the API clients hold of the budgets goes back (src/api/gate.ts).
    let settle = async () => {};
    add(() => settle());
    // Stop order (reverse of registration): stop accepting, let the workers finish their jobs (pg-boss), then
    // the roles' own stop steps (the demo sandbox among them), then the database.
    add(async () => {
      for (const step of onStop.splice(0).reverse()) await step();
    });
    const boss = await startBoss(opts.boss?.url ?? database.url, log, { max: config.QUEUE_POOL_SIZE, ...opts.boss });
    add(() => stopBoss(boss));
    check();
    // /readyz asks the roles' checks too; they push them onto rt.readiness while mounting.
    const readiness: ReadinessCheck[] = [];
    const { app, router } = createApp(database.pool, log, readiness);
    const clients = new ClientState();
    const sync = createSyncState({ db: database.db, config, log });
    settle = async () => {
      await Promise.all([clients.settle(), sync.settle()]);
    };
    const rt: Runtime = {
      config,
      log,
      database,
      boss,
      app,
      router,
      clients,
      sync,
      publicUrl: '',
      demo: false,
      readiness,
      afterListen: [],
      onStop,
      async listen(port) {
        const server = opts.server ?? (await listen(app, port, rt.config.HOST, { requestTimeoutMs: rt.config.HTTP_REQUEST_TIMEOUT_MS }));
        opts.server?.serve(app);
        add(() => server.close());
        rt.publicUrl = publicUrlOf(rt.config, server.port);
        return server;
      },
      workerDeps: () => ({
        db: database.db,
        config: rt.config,
        log: rt.log.child({ role: 'worker' }),
        clients,
        boss,
        sync: rt.sync,
      }),
      async stop() {
        for (const step of steps.splice(0).reverse()) await step();
      },
    };
    return rt;
  } catch (err) {
    // Undo what started before failing (the embedded PostgreSQL above all).
    for (const step of steps.splice(0).reverse()) await step().catch(() => undefined);
    throw err;
  }
}
