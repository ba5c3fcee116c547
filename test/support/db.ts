// Each test file gets its own database, cloned from the run's migrated template (see run.ts).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDb, createPool, type Db } from '../../src/db/index.ts';
import type { Teardown } from './teardown.ts';

export interface TestDatabase {
  url: string;
  pool: pg.Pool;
  db: Db;
  name: string;
}

export function adminUrl(): string {
  const url = process.env.TEST_ADMIN_URL;
  if (!url) throw new Error('run tests with `npm test` (test/support/run.ts prepares the database)');
  return url;
}

export function databaseUrl(name: string): string {
  const u = new URL(adminUrl());
  u.pathname = `/${name}`;
  return u.toString();
}

/** A fresh, migrated database for this test (pg-boss schema included), dropped at teardown. */
export async function testDatabase(t: Teardown, opts: { poolSize?: number } = {}): Promise<TestDatabase> {
  const name = `cs_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${process.env.TEST_TEMPLATE_DB}`);
  } finally {
    await admin.end();
  }
  const url = databaseUrl(name);
  const pool = createPool(url, opts.poolSize ?? 10);
  const db = createDb(pool);
  t.teardown(async () => {
    await db.destroy().catch(() => {});
    await dropDatabase(name);
  });
  return { url, pool, db, name };
}

/** An empty database (no migrations), for tests of the migrator itself. */
export async function emptyDatabase(t: Teardown): Promise<{ url: string; name: string }> {
  const name = `cs_empty_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  t.teardown(() => dropDatabase(name));
  return { url: databaseUrl(name), name };
}

async function dropDatabase(name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/** A token connection row (no service behind it unless `baseUrl` says so). */
export async function addConnection(db: Db, name = 'shop', baseUrl = 'http://127.0.0.1:1'): Promise<{ id: number; name: string }> {
  const row = await db
    .insertInto('connections')
    .values({ name, base_url: baseUrl, auth_kind: 'token' })
    .returning(['id', 'name'])
    .executeTakeFirstOrThrow();
  return { id: Number(row.id), name: row.name };
}
