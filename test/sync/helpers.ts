// Shared by the sync and stock tests: a connection row, the recorded fixtures, a fake reader.
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from '../../src/db/index.ts';

export const fixturesDir = fileURLToPath(new URL('../../../shared/fixtures/recorded/', import.meta.url));

export function fixture(plural: string): any[] {
  return JSON.parse(readFileSync(`${fixturesDir}${plural}.json`, 'utf8'))[plural];
}

export function fixtureNames(): string[] {
  return readdirSync(fixturesDir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.replace(/\.json$/, ''));
}

export async function addConnection(db: Db, name = 'shop', baseUrl = 'http://127.0.0.1:1'): Promise<{ id: number; name: string }> {
  const row = await db
    .insertInto('connections')
    .values({ name, base_url: baseUrl, auth_kind: 'token' })
    .returning(['id', 'name'])
    .executeTakeFirstOrThrow();
  return { id: Number(row.id), name: row.name };
}
