// Applies migrations/NNNN_name.sql in order, each in its own transaction, each at most once.
// A session advisory lock keeps two processes starting together from racing.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export const migrationsDir = fileURLToPath(new URL('../../migrations/', import.meta.url));
const LOCK_KEY = 727_001;

export interface MigrationResult {
  applied: string[];
  skipped: string[];
}

export class MigrationError extends Error {
  readonly migration: string;
  constructor(migration: string, cause: unknown) {
    super(`migration ${migration} failed and was rolled back: ${(cause as Error).message}`, { cause });
    this.migration = migration;
  }
}

export async function listMigrations(dir = migrationsDir): Promise<string[]> {
  return (await readdir(dir)).filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f)).sort();
}

export async function migrate(databaseUrl: string, dir = migrationsDir): Promise<MigrationResult> {
  // A server that drops packets instead of refusing fails the connect after 10 s (as pg-boss's pool does), so a
  // process waiting for its database at start tries again and says so (src/db/wait.ts), not after minutes.
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 10_000 });
  // A server lost mid-migration fails the statement awaited below (start-up then fails with its message);
  // unlistened, pg's 'error' event would end the process with a stack trace instead.
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name));
    const result: MigrationResult = { applied: [], skipped: [] };
    for (const name of await listMigrations(dir)) {
      if (done.has(name)) {
        result.skipped.push(name);
        continue;
      }
      const sql = await readFile(join(dir, name), 'utf8');
      try {
        await client.query('BEGIN');
        await client.query(sql);
        await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [name]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new MigrationError(name, err);
      }
      result.applied.push(name);
    }
    return result;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
    await client.end();
  }
}

/** Names of migrations on disk that the database has not applied yet. */
export async function pendingMigrations(pool: pg.Pool, dir = migrationsDir): Promise<string[]> {
  const exists = await pool.query(`SELECT to_regclass('schema_migrations') AS t`);
  const done = exists.rows[0].t
    ? new Set((await pool.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name))
    : new Set<string>();
  return (await listMigrations(dir)).filter((n) => !done.has(n));
}
