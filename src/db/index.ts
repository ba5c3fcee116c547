// One place that opens the database: the configured DATABASE_URL, or the embedded PostgreSQL.
import { randomBytes } from 'node:crypto';
import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { embeddedExists, startEmbedded, type EmbeddedDatabase } from './embedded.ts';
import { migrate, pendingMigrations } from './migrate.ts';
import { PreparingClient } from './prepared.ts';
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

/**
 * A pool that outlives its server. Every way a pooled connection can fail is handled, so no database outage
 * ends the process: an idle client whose server goes is dropped by pg-pool and reported here (logged); a
 * checked-out client (a transaction, a held lock, a receiver commit) gets a listener of its own, since pg-pool
 * takes its idle listener off while a client is lent out and pg emits 'error' on it when the server goes:
 * its holder's queries fail instead, and pg-pool drops the client when it comes back (it is no longer
 * queryable, or is released with the error). New connections are opened on demand once the server is back.
 */
export function createPool(url: string, max = 10, log?: Logger): pg.Pool {
  // Named statements (src/db/prepared.ts) keep one generic plan: with plan_cache_mode auto PostgreSQL plans many of
  // ours afresh on every call (a custom plan it estimates cheaper by a hair), which was 5.8 ms of PostgreSQL's
  // ~22 ms per merchant operation (bench/accounts --pg-statements). Our repeated statements pick rows by keys and
  // small id lists, where a plan does not depend on the values.
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: 5000,
    Client: PreparingClient,
    options: '-c plan_cache_mode=force_generic_plan',
  });
  pool.on('error', (err) => {
    log?.warn({ err: errorSummary(err) }, 'an idle database connection was lost; the pool opens a new one when next needed');
  });
  pool.on('connect', (client) => {
    client.on('error', (err) => {
      log?.debug({ err: errorSummary(err) }, 'a database connection in use was lost; its statement fails and the pool drops it');
    });
  });
  return pool;
}

/**
 * What to log of a database error: its message and code. pg's errors can carry the whole Client (pg-pool
 * attaches it to an idle client's error), connection parameters and password included.
 */
export function errorSummary(err: unknown): { message: string; code?: string } {
  const e = err as { message?: unknown; code?: unknown } | null;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  return typeof e?.code === 'string' ? { message, code: e.code } : { message };
}

// Socket errors, SQLSTATE class 08 (connection exception), 57P01-57P03 (shutdown, crash, starting up),
// 53300 (too many connections), and the messages of pg and pg-pool for a connection that went or never came.
const CONNECTION_CODES = /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|08\w{3}|57P0[123]|53300)$/;
const CONNECTION_MESSAGES =
  /Connection terminated|not queryable|Client was closed|connection timeout|timeout exceeded when trying to connect|the database system is|terminating connection|server closed the connection|Query read timeout/i;

/**
 * Whether `err` says the database connection failed (the server went, restarts, refuses or cannot be reached),
 * as opposed to a statement that failed on a working connection.
 */
export function isConnectionError(err: unknown): boolean {
  const { message, code } = errorSummary(err);
  return (code !== undefined && CONNECTION_CODES.test(code)) || CONNECTION_MESSAGES.test(message);
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

/** Runs `fn` on a database opened for it (a CLI command's), closed however `fn` ends. */
export async function withDatabase<T>(ctx: { config: Config; log: Logger }, fn: (database: OpenDatabase) => Promise<T>): Promise<T> {
  const database = await openDatabase(ctx.config, ctx.log);
  try {
    return await fn(database);
  } finally {
    await database.close();
  }
}

/**
 * Opens (and for the embedded database, starts) PostgreSQL; applies migrations unless told not to. `existing`: for a
 * command that only reads (status, logs), a database never set up is not made (a cluster of 49 MB in whatever
 * DATA_DIR, our schema without pg-boss's, then a failure on a missing relation): it says there is nothing yet.
 */
export async function openDatabase(
  config: Config,
  log: Logger,
  opts: { migrate?: boolean; poolSize?: number; existing?: boolean } = {},
): Promise<OpenDatabase> {
  const nothing = (what: string) =>
    new Error(`nothing here yet: ${what}; \`commerce-sync start\` sets one up (the demo), \`commerce-sync migrate\` an empty one`);
  let embedded: EmbeddedDatabase | undefined;
  let url = config.DATABASE_URL;
  if (!url) {
    if (opts.existing && !embeddedExists(config.DATA_DIR)) throw nothing(`no database in ${config.DATA_DIR} (DATA_DIR)`);
    embedded = await startEmbedded(config.DATA_DIR, log);
    url = embedded.url;
  }
  try {
    if (opts.existing && !(await hasSchema(url))) throw nothing('the database has no schema');
    if (opts.migrate !== false) {
      const result = await migrate(url);
      if (result.applied.length) log.info({ applied: result.applied }, 'migrations applied');
    }
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
  const pool = createPool(url, opts.poolSize, log);
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

/** Whether our schema and pg-boss's are there (`migrate`, or a start, made them). */
async function hasSchema(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {}); // a lost connection fails the query awaited below
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT to_regclass('schema_migrations') IS NOT NULL AND to_regclass('pgboss.job') IS NOT NULL AS ready`,
    );
    return rows[0].ready === true;
  } finally {
    await client.end();
  }
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
