// Shared by the sync and stock tests: a connection row, the recorded fixtures, a fake reader.
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from '../../src/db/index.ts';
import type { Reader } from '../../src/sync/reader.ts';

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

/**
 * A Reader over records in memory. Reads by id answer from `active` (or `archived` when status=archived is asked)
 * as they are at the call, 250 ids a request, each counted in `calls`. A list answers one page per path from
 * `list(path)` (none unless given), which may run whatever a test needs between the read and its answer.
 */
export function memoryReader(
  active: any[],
  archived: any[],
  asOf: number | null = null,
  list?: (path: string) => Promise<any[]>,
): Reader & { calls: { ids: number; status: unknown }[] } {
  const calls: { ids: number; status: unknown }[] = [];
  return {
    connection: { id: 0, name: 'mem' },
    traits: { singleStatusOnly: false },
    calls,
    async getByIds(_path: string, ids: number[], opts?: any) {
      let requests = 0;
      const records: any[] = [];
      for (let i = 0; i < ids.length; i += 250) {
        const part = new Set(ids.slice(i, i + 250));
        calls.push({ ids: part.size, status: opts?.query?.status });
        requests++;
        records.push(...(opts?.query?.status === 'archived' ? archived : active).filter((r) => part.has(r.id)));
      }
      return { records, sideloads: {}, requests, asOf };
    },
    async *paginate(path: string) {
      if (!list) throw new Error('no lists in this reader');
      const records = await list(path);
      yield { records, sideloads: {}, pagination: null, requestId: null, asOf };
    },
  } as Reader & { calls: { ids: number; status: unknown }[] };
}
