// One place that opens the database: the configured DATABASE_URL, or the embedded PostgreSQL.
import { randomBytes } from 'node:crypto';
import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { startEmbedded, type EmbeddedDatabase } from './embedded.ts';
import { migrate, pendingMigrations } from './migrate.ts';
import type { Database } from './schema.ts';

// Ids are bigint in PostgreSQL; the service's ids fit in a JS number, so read them as numbers.
// numeric stays a string: quantities are never floats.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Db = Kysely<Database>;
/** What a store function runs its statements on: the database, or a transaction a caller opened. */
export type Executor = Kysely<Database> | Transaction<Database>;

export interface OpenDatabase {
  url: string;
  pool: pg.Pool;
  db: Db;
  embedded?: EmbeddedDatabase;
  close(): Promise<void>;
}

export function createPool(url: string, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 5000 });
  // An idle client losing its server must not crash the process; the next query reports it.
  pool.on('error', () => {});
  // Nor a checked-out one: pg-pool takes its idle listener off while a client is lent out (a transaction
  // waiting between statements), and pg emits 'error' on it when the server goes; the queries fail instead.
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  return pool;
}

/**
 * `text` as a SQL string constant, for a statement sent without parameters (a multi-statement query, which
 * PostgreSQL runs as one transaction in one round trip). Dollar-quoted, so it is right whatever
 * standard_conforming_strings says, with a tag whose first appearance after the opening one is the closing
 * one: not inside the text, nor completed by the closing tag from the text's end (`...$cs` + `$cs$`).
 */
export function quoteLiteral(text: string): string {
  let tag = '$cs$';
  while (`${text}${tag}`.indexOf(tag) !== text.length) tag = `$cs${randomBytes(6).toString('hex')}$`;
  return `${tag}${text}${tag}`;
}

export function createDb(pool: pg.Pool): Db {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/** Opens (and for the embedded database, starts) PostgreSQL; applies migrations unless told not to. */
export async function openDatabase(
  config: Config,
  log: Logger,
  opts: { migrate?: boolean; poolSize?: number } = {},
): Promise<OpenDatabase> {
  let embedded: EmbeddedDatabase | undefined;
  let url = config.DATABASE_URL;
  if (!url) {
    embedded = await startEmbedded(config.DATA_DIR, log);
    url = embedded.url;
  }
  try {
    if (opts.migrate !== false) {
      const result = await migrate(url);
      if (result.applied.length) log.info({ applied: result.applied }, 'migrations applied');
    }
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
  const pool = createPool(url, opts.poolSize);
  const db = createDb(pool);
  return {
    url,
    pool,
    db,
    embedded,
    close: async () => {
      await db.destroy();
      await embedded?.stop();
    },
  };
}

/** Readiness: the database answers and every migration on disk is applied. Returns a reason when not ready. */
export async function databaseReadiness(pool: pg.Pool): Promise<string | null> {
  try {
    const pending = await pendingMigrations(pool);
    return pending.length ? `migrations not applied: ${pending.join(', ')}` : null;
  } catch (err) {
    return `database unreachable: ${(err as Error).message}`;
  }
}
