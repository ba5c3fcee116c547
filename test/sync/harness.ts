// The whole loop for sync tests: a sandbox over HTTP, a fresh database, a token connection, the receiver
// mounted as `start` mounts it, webhook subscriptions, and the sync workers (one or more "processes",
// each with its own pg-boss). Changes are made in the sandbox; the mirror is compared with its snapshot.
// For the tests of the engine without a service: the recorded fixtures and a reader over records in memory.
import { createHmac } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { addTokenConnection, clientFor } from '../../src/api/connections.ts';
import type { ApiClient } from '../../src/api/types.ts';
import type { Config } from '../../src/config.ts';
import type { Connection } from '../../src/db/schema.ts';
import type { Boss } from '../../src/queue/boss.ts';
import type { Reader } from '../../src/api/live.ts';
import { mount as mountReceiver } from '../../src/receiver/role.ts';
import { syncWebhooks } from '../../src/receiver/subscriptions.ts';
import { startSandbox, type Sandbox, type SandboxOptions } from '@commerce-sync/sandbox';
import { requestSweep } from '../../src/queue/contracts.ts';
import { mount as mountWorker } from '../../src/worker/role.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase, type TestDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { testRuntime } from '../support/runtime.ts';
import { mirrorDiff } from '../support/mirror.ts';
import { until } from '../support/processes.ts';
import { sandboxAdmin, sandboxProfile, type Profile } from '../support/sandbox.ts';
import type { Teardown } from '../support/teardown.ts';

export interface Loop {
  sandbox: Sandbox;
  tdb: TestDatabase;
  config: Config;
  connection: Connection;
  client: ApiClient;
  logs: ReturnType<typeof captureLogger>;
  admin(method: 'GET' | 'POST', path: string, body?: unknown): Promise<any>;
  /** Starts one more worker "process" (its own pg-boss) on the same database. */
  startWorker(): Promise<Boss>;
  bosses: Boss[];
  /** Where the receiver listens (deliveries go to publicUrl/webhooks/NAME). */
  publicUrl: string;
  /** Polls until fn returns true (bounded; fails with a message instead of hanging). */
  until(what: string, fn: () => Promise<boolean>, timeoutMs?: number): Promise<void>;
  /** Posts a delivery signed as the service signs them (an event the sandbox does not send, or one it lost). */
  deliver(event: string, objectId: number): Promise<Response>;
  /** Mirror rows that differ from the sandbox snapshot (by raw), plus missing/extra ids. */
  variantDiff(): Promise<{ wrong: number[]; missing: number[]; extra: number[] }>;
}

export const TEST_KEY = Buffer.alloc(32, 7).toString('base64');

export interface LoopOptions {
  /** The service's behaviour: the spec's or the documented one (the sandbox's default when absent). */
  profile?: Profile;
  sandbox?: SandboxOptions;
  config?: Partial<Record<keyof Config, string | number | boolean>>;
  workers?: number;
  subscribe?: string[];
  /** Queue a full sweep once the connection exists (as a worker starting on a never-swept connection does). */
  firstSweep?: boolean;
}

export async function startLoop(t: Teardown, opts: LoopOptions = {}): Promise<Loop> {
  return startLoopOn(t, await testDatabase(t, { poolSize: 20 }), opts);
}

/** The loop on a given (migrated) database; the benchmarks bring their own. */
export async function startLoopOn(t: Teardown, tdb: TestDatabase, opts: LoopOptions = {}): Promise<Loop> {
  const sandbox = await startSandbox({ variants: 30, timeScale: 100, ...sandboxProfile(opts.profile), ...opts.sandbox });
  t.teardown(() => sandbox.close());
  const dataDir = await mkdtemp(join(tmpdir(), 'cs-sync-'));
  const logs = captureLogger('warn');
  const config = testConfig({
    DATA_DIR: dataDir,
    TOKEN_ENCRYPTION_KEY: TEST_KEY,
    DATABASE_URL: tdb.url,
    COMMERCE_CLIENT_SECRET: sandbox.clientSecret,
    WORKER_CONCURRENCY: 4,
    ...opts.config,
  });
  // Workers start before the connection exists, so no first sweep is queued behind the test's back
  // (`firstSweep` asks for one explicitly). Each is a runtime of its own: a worker "process".
  const bosses: Boss[] = [];
  const startWorker = async () => {
    const worker = await testRuntime(t, tdb, config, logs.log, { boss: { supervise: true, schedule: false, max: 4 } });
    bosses.push(worker.boss);
    await mountWorker(worker);
    return worker.boss;
  };
  for (let i = 0; i < (opts.workers ?? 1); i++) await startWorker();

  // The receiver, mounted the way `start` does, on a runtime of its own (a "receiver process").
  const rt = await testRuntime(t, tdb, config, logs.log);
  const deps = rt.workerDeps();
  const connection = await addTokenConnection(deps, { baseUrl: sandbox.url, token: sandbox.token, name: 'shop' });
  const client = await clientFor(deps, connection);
  await mountReceiver(rt);
  await rt.listen(0);
  await syncWebhooks(deps, connection, rt.publicUrl);
  for (const event of opts.subscribe ?? []) await client.createWebhook({ address: `${rt.publicUrl}/webhooks/shop`, event });

  if (opts.firstSweep) await requestSweep(bosses[0]!, connection.id, true);

  const admin = sandboxAdmin(sandbox);
  const variantDiff = async () =>
    mirrorDiff(tdb.db, connection.id, 'variants', (await admin('GET', 'snapshot?resource=variants')).variants);
  let delivered = 0;
  const deliver = (event: string, objectId: number) => {
    const body = JSON.stringify({ event, object_id: objectId, timestamp: Math.floor(Date.now() / 1000) });
    return fetch(`${rt.publicUrl}/webhooks/shop`, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'x-service-delivery': `test-${++delivered}-${event}-${objectId}`,
        'x-service-signature': createHmac('sha256', sandbox.clientSecret).update(body).digest('base64'),
      },
    });
  };
  return {
    sandbox,
    tdb,
    config,
    connection,
    client,
    logs,
    admin,
    startWorker,
    bosses,
    until,
    variantDiff,
    deliver,
    publicUrl: rt.publicUrl,
  };
}

export const fixturesDir = fileURLToPath(new URL('../../../shared/fixtures/recorded/', import.meta.url));

export function fixture(plural: string): any[] {
  return JSON.parse(readFileSync(`${fixturesDir}${plural}.json`, 'utf8'))[plural];
}

export function fixtureNames(): string[] {
  return readdirSync(fixturesDir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.replace(/\.json$/, ''));
}

/**
 * A Reader over records in memory. Reads by id answer from `active` (or `archived` when status=archived is asked)
 * as they are at the call, 250 ids a request, each counted in `calls`. A list answers one page per path from
 * `list(path)` (none unless given), which may run whatever a test needs between the read and its answer. Each
 * answer's asOf and readBy are `clock` (or what it returns when the read starts: a time, or the two bounds).
 */
export function memoryReader(
  active: any[],
  archived: any[],
  clock: number | null | (() => number | { asOf: number; readBy: number }) = null,
  list?: (path: string) => Promise<any[]>,
): Reader & { calls: { ids: number; status: unknown }[] } {
  const calls: { ids: number; status: unknown }[] = [];
  const now = () => {
    const c = typeof clock === 'function' ? clock() : clock;
    return c === null || typeof c === 'number' ? { asOf: c, readBy: c } : c;
  };
  return {
    connection: { id: 0, name: 'mem' },
    traits: { singleStatusOnly: false },
    calls,
    async getByIds(_path: string, ids: number[], opts?: any) {
      const { asOf, readBy } = now();
      let requests = 0;
      const records: any[] = [];
      for (let i = 0; i < ids.length; i += 250) {
        const part = new Set(ids.slice(i, i + 250));
        calls.push({ ids: part.size, status: opts?.query?.status });
        requests++;
        records.push(...(opts?.query?.status === 'archived' ? archived : active).filter((r) => part.has(r.id)));
      }
      return { records, sideloads: {}, requests, asOf, readBy };
    },
    async *paginate(path: string) {
      if (!list) throw new Error('no lists in this reader');
      const { asOf, readBy } = now();
      const records = await list(path);
      yield { records, sideloads: {}, pagination: null, requestId: null, asOf, readBy };
    },
  } as Reader & { calls: { ids: number; status: unknown }[] };
}
