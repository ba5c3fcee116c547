// A migrated scratch database for a benchmark: on DATABASE_URL when set, else on an embedded PostgreSQL in a
// temporary folder. close() drops it and stops what it started.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded } from '../../src/db/embedded.ts';
import { migrate } from '../../src/db/migrate.ts';
import type { Logger } from '../../src/log.ts';

export interface ScratchDatabase {
  url: string;
  /** pid of the embedded server's postmaster (for CPU accounting), when we started one. */
  postmaster?: number;
  close(): Promise<void>;
}

export interface ScratchOptions {
  /** 'embedded' starts one even when DATABASE_URL is set. Default: DATABASE_URL's server when set. */
  server?: 'env' | 'embedded';
  /** 'off' for every session of the scratch database: a commit does not wait for its flush. */
  synchronousCommit?: 'on' | 'off';
  /**
   * pg_stat_statements in the scratch database (an embedded server starts with it loaded; a DATABASE_URL server
   * must have it in shared_preload_libraries already).
   */
  statements?: boolean;
  /**
   * auto_explain on an embedded server: every statement of the scratch database slower than this many ms is logged
   * with its plan (ANALYZE, BUFFERS, triggers, nested statements); close() keeps the server's log and names it.
   */
  explainMs?: number;
}

export async function scratchDatabase(name: string, log: Logger, opts: ScratchOptions = {}): Promise<ScratchDatabase> {
  let adminUrl = opts.server === 'embedded' ? '' : (process.env.DATABASE_URL ?? '');
  let stopDb = async () => {};
  let dataDir: string | undefined;
  let postmaster: number | undefined;
  if (!adminUrl) {
    dataDir = await mkdtemp(join(os.tmpdir(), `cs-bench-${name}-`));
    const preload = [...(opts.statements ? ['pg_stat_statements'] : []), ...(opts.explainMs !== undefined ? ['auto_explain'] : [])];
    const embedded = await startEmbedded(dataDir, log, 'postgres', { preload });
    adminUrl = embedded.adminUrl;
    stopDb = embedded.stop;
    postmaster = embedded.pid;
  }
  const dbName = `cs_bench_${name}_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  if (opts.synchronousCommit) await admin.query(`ALTER DATABASE ${dbName} SET synchronous_commit = ${opts.synchronousCommit}`);
  if (opts.statements) await admin.query(`ALTER DATABASE ${dbName} SET pg_stat_statements.track_planning = on`);
  if (opts.explainMs !== undefined) {
    if (!dataDir) throw new Error('explainMs: an embedded server only (unset DATABASE_URL)');
    for (const [k, v] of Object.entries({
      log_min_duration: opts.explainMs,
      log_analyze: 'on',
      log_buffers: 'on',
      log_triggers: 'on',
      log_nested_statements: 'on',
    }))
      await admin.query(`ALTER DATABASE ${dbName} SET auto_explain.${k} = ${typeof v === 'number' ? v : `'${v}'`}`);
  }
  const url = new URL(adminUrl);
  url.pathname = `/${dbName}`;
  if (opts.statements) {
    const c = new pg.Client({ connectionString: url.toString() });
    await c.connect();
    await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements').finally(() => c.end());
  }
  await migrate(url.toString());
  return {
    url: url.toString(),
    postmaster,
    close: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
      await admin.end();
      await stopDb();
      if (dataDir && opts.explainMs !== undefined) {
        const kept = join(os.tmpdir(), `cs-bench-${name}-${process.pid}-postgres.log`);
        await copyFile(join(dataDir, 'postgres.log'), kept);
        log.warn({ log: kept }, "the embedded server's log, with auto_explain plans, is kept");
      }
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
