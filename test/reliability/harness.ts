// The world of a reliability test: sandboxes over HTTP (this process), a fresh database, one connection per
// sandbox, a recording delivery proxy in front of the receivers, and real commerce-sync processes
// (`node src/cli.ts receiver|worker|...`) started and killed at will.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { addTokenConnection } from '../../src/api/connections.ts';
import type { Config } from '../../src/config.ts';
import type { Db } from '../../src/db/index.ts';
import type { Connection } from '../../src/db/schema.ts';
import { startSandbox, type Sandbox, type SandboxOptions } from '@commerce-sync/sandbox';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/db.ts';
import { ackedDigests, startDeliveryProxy, type DeliveryProxy } from '../support/delivery-proxy.ts';
import { captureLogger } from '../support/log.ts';
import { clean, describeDiff, mirrorDiff, MIRRORED, type Diff } from '../support/mirror.ts';
import { spawnCli, until, type CliProcess } from '../support/processes.ts';
import { sandboxAdmin } from '../support/sandbox.ts';
import { ClientState } from '../../src/api/client-state.ts';
import type { Teardown } from '../support/teardown.ts';

export const KEY = Buffer.alloc(32, 9).toString('base64');
const SECRET = 'reliability-client-secret';

export interface Shop {
  name: string;
  sandbox: Sandbox;
  connection: Connection;
  admin(method: 'GET' | 'POST', path: string, body?: unknown): Promise<any>;
  snapshot(resource: string): Promise<any[]>;
  /** Mirror vs sandbox for every mirrored resource. */
  diffs(): Promise<Diff[]>;
}

export interface World {
  db: Db;
  databaseUrl: string;
  config: Config;
  proxy: DeliveryProxy;
  shops: Shop[];
  /** Environment of a commerce-sync process of this world (on top of `extra`). */
  env(extra?: Record<string, string | number>): Record<string, string | number>;
  spawn(role: 'receiver' | 'worker' | 'console' | 'start', extra?: Record<string, string | number>): Promise<CliProcess>;
  /** Runs `commerce-sync reconcile --full` to completion; returns its output. */
  reconcile(extra?: Record<string, string | number>): Promise<string>;
  /** Receivers currently behind the proxy. */
  receivers: CliProcess[];
  setReceivers(list: CliProcess[]): void;
}

/** `database`: another PostgreSQL (migrated) instead of a fresh test database. */
export async function startWorld(
  t: Teardown,
  opts: { shops?: number; sandbox?: SandboxOptions; database?: { url: string; db: Db } } = {},
): Promise<World> {
  const { url: databaseUrl, db } = opts.database ?? (await testDatabase(t, { poolSize: 10 }));
  const dataDir = await mkdtemp(join(tmpdir(), 'cs-reliability-'));
  const { log } = captureLogger('warn');
  const config = testConfig({ DATABASE_URL: databaseUrl, DATA_DIR: dataDir, TOKEN_ENCRYPTION_KEY: KEY, COMMERCE_CLIENT_SECRET: SECRET });
  const proxy = await startDeliveryProxy(t);
  const shops: Shop[] = [];
  for (let i = 0; i < (opts.shops ?? 1); i++) {
    const name = `shop${i + 1}`;
    const sandbox = await startSandbox({
      variants: 40,
      locations: 2,
      timeScale: 100,
      seed: i + 1,
      clientSecret: SECRET,
      token: `token-${name}`,
      ...opts.sandbox,
    });
    t.teardown(() => sandbox.close());
    const connection = await addTokenConnection(
      { db, config, log, clients: new ClientState() },
      { baseUrl: sandbox.url, token: sandbox.token, name },
    );
    const admin = sandboxAdmin(sandbox);
    const snapshot = async (resource: string) => (await admin('GET', `snapshot?resource=${resource}`))[resource] as any[];
    shops.push({
      name,
      sandbox,
      connection,
      admin,
      snapshot,
      diffs: async () => Promise.all(MIRRORED.map(async (r) => mirrorDiff(db, connection.id, r, await snapshot(r)))),
    });
  }
  const env = (extra: Record<string, string | number> = {}) => ({
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    TOKEN_ENCRYPTION_KEY: KEY,
    COMMERCE_CLIENT_SECRET: SECRET,
    SANDBOX: 'off',
    HOST: '127.0.0.1',
    PORT: 0,
    WORKER_PORT: 0,
    PUBLIC_URL: proxy.url,
    LOG_LEVEL: 'warn',
    WORKER_CONCURRENCY: 4,
    // The shops' sandboxes run at time scale 100: their delivery timestamps run ahead of our clock.
    WEBHOOK_MAX_FUTURE_SECONDS: 0,
    ...extra,
  });
  const world: World = {
    db,
    databaseUrl,
    config,
    proxy,
    shops,
    env,
    receivers: [],
    spawn: (role, extra) => spawnCli(t, role, [role], env(extra)),
    async reconcile(extra) {
      const p = await spawnCli(t, 'reconcile', ['reconcile', '--full'], env(extra), { ready: null });
      const code = await p.exited;
      if (code !== 0) throw new Error(`reconcile --full exited with ${code}:\n${p.output()}`);
      return p.output();
    },
    setReceivers(list) {
      world.receivers = list;
      proxy.targets.splice(0, proxy.targets.length, ...list.map((r) => r.url));
    },
  };
  return world;
}

/** Deliveries acknowledged with a 2xx that are not in webhook_deliveries (nor a copy of their body), or not processed there. */
export async function unprocessedAcked(
  db: Db,
  acked: Set<string>,
): Promise<{ absent: string[]; notProcessed: { delivery_id: string; state: string }[] }> {
  const ids = [...acked];
  const rows = ids.length
    ? (
        await sql<{ delivery_id: string; state: string }>`
    SELECT delivery_id, state FROM webhook_deliveries WHERE delivery_id = ANY(${ids}::text[])`.execute(db)
      ).rows
    : [];
  const seen = new Set(rows.map((r) => r.delivery_id));
  // Acknowledged as a copy of a stored delivery (the same body under another id) is stored too.
  const missing = ids.filter((id) => !seen.has(id));
  const wanted = ackedDigests(acked);
  const copies = missing.length
    ? new Set(
        (
          await sql<{ digest: string }>`SELECT encode(body_sha256, 'hex') AS digest FROM webhook_deliveries
            WHERE body_sha256 = ANY(${missing.map((id) => Buffer.from(wanted.get(id) ?? '', 'hex'))}::bytea[])`.execute(db)
        ).rows.map((r) => r.digest),
      )
    : new Set<string>();
  return {
    absent: missing.filter((id) => !copies.has(wanted.get(id) ?? '')),
    notProcessed: rows.filter((r) => r.state !== 'processed' && r.state !== 'unhandled'),
  };
}

/** Waits until every delivery in `acked` (acknowledged with a 2xx) is stored and processed. */
export async function ackedProcessed(
  db: Db,
  acked: Set<string>,
  opts: { what?: string; timeoutMs?: number; everyMs?: number } = {},
): Promise<void> {
  await until(
    opts.what ?? 'every acknowledged delivery processed',
    async () => {
      const u = await unprocessedAcked(db, acked);
      return u.absent.length || u.notProcessed.length
        ? `${u.absent.length} absent (${u.absent.slice(0, 3)}), ${u.notProcessed.length} not processed (${JSON.stringify(u.notProcessed.slice(0, 3))})`
        : true;
    },
    opts.timeoutMs ?? 60_000,
    opts.everyMs ?? 500,
  );
}

/** Delivery ids stored more than once (per connection). */
export async function duplicateDeliveries(db: Db): Promise<number> {
  const r = await sql<{ n: number }>`SELECT count(*)::int AS n FROM (SELECT connection_id, delivery_id FROM webhook_deliveries
    GROUP BY 1, 2 HAVING count(*) > 1) d`.execute(db);
  return r.rows[0]!.n;
}

/** Waits until the mirror of every shop equals its sandbox (after a sweep). */
export async function converged(world: World, timeoutMs = 30_000): Promise<void> {
  await until(
    'the mirror to equal the sandbox',
    async () => {
      const diffs = (await Promise.all(world.shops.map((s) => s.diffs()))).flat();
      const bad = diffs.filter((d) => !clean(d));
      return bad.length ? bad.map(describeDiff).join('; ') : true;
    },
    timeoutMs,
    500,
  );
}

export { until };

/**
 * Steady merchant activity at the sandbox (operations per second, through the same code paths as the API,
 * so each fires webhooks). Returns a stop function that resolves once the last batch is done.
 */
export function steadyLoad(t: Teardown, shop: Shop, perSecond: number, kinds?: string[]): () => Promise<void> {
  let stopped = false;
  t.teardown(() => {
    stopped = true;
  });
  let due = 0;
  const loop = (async () => {
    while (!stopped) {
      due += perSecond / 10;
      const n = Math.floor(due);
      due -= n;
      if (n > 0) {
        try {
          await shop.admin('POST', 'activity', { operations: n, ...(kinds ? { kinds } : {}) });
        } catch {
          /* sandbox closing */
        }
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
  };
}

/** Delivers everything the sandbox still holds (retries included) until nothing is pending. */
export async function drainSandbox(shop: Shop, timeoutMs = 30_000): Promise<void> {
  await until(
    `${shop.name}: sandbox deliveries to drain`,
    async () => {
      await shop.admin('POST', 'deliveries/flush');
      const s = await shop.admin('GET', 'stats');
      return s.deliveries.pending === 0 ? true : `${s.deliveries.pending} pending`;
    },
    timeoutMs,
    300,
  );
}
