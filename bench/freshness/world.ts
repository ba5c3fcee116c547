// One benchmark world: a scratch PostgreSQL, sandbox accounts at real time and the real rate limit, one
// connection each, a delivery proxy, and a receiver and a worker as separate `commerce-sync` processes.
// Shared by the freshness benchmark (one account) and the accounts benchmark (hundreds).
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { addTokenConnection } from '../../src/api/connections.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createDb, createPool, type Db } from '../../src/db/index.ts';
import type { Logger } from '../../src/log.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { startSandbox, type Sandbox, type SandboxOptions } from '@commerce-sync/sandbox';
import { startDeliveryProxy, type DeliveryProxy } from '../../test/support/delivery-proxy.ts';
import { spawnCli, until, type CliProcess } from '../../test/support/processes.ts';
import { scratchDatabase, type ScratchDatabase } from '../support/database.ts';
import type { StockMove } from './lag.ts';
import { ClientState } from '../../src/api/client-state.ts';

export interface Account {
  sandbox: Sandbox;
  connectionId: number;
  admin(method: string, path: string, body?: unknown): Promise<any>;
}

export interface World {
  db: Db;
  /** The settings the receiver and worker share (e.g. the token encryption key, to set a channel destination). */
  config: Config;
  database: ScratchDatabase;
  accounts: Account[];
  receiver: CliProcess;
  worker: CliProcess;
  /** Workers started after the first (addWorker). */
  moreWorkers: CliProcess[];
  proxy: DeliveryProxy;
  /** Starts one more worker process with the same settings. */
  addWorker(): Promise<CliProcess>;
  close(): Promise<void>;
}

export interface WorldOptions {
  name: string;
  accounts: number;
  variants: number;
  profile?: string;
  /** More sandbox options (clockSkewSeconds, listOrder...). */
  sandbox?: SandboxOptions;
  /** Settings for the receiver and worker (e.g. RECONCILE_INTERVAL_MINUTES). */
  env?: Record<string, string>;
  /** Extra settings for the worker alone (e.g. NODE_OPTIONS=--cpu-prof to profile it). */
  workerEnv?: Record<string, string>;
  /** pg_stat_statements in the database (bench/support/database.ts). */
  statements?: boolean;
  /** auto_explain of statements slower than this (bench/support/database.ts). */
  explainMs?: number;
  log: Logger;
}

const SECRET = 'bench-client-secret';
const KEY = Buffer.alloc(32, 4).toString('base64');

export async function startWorld(o: WorldOptions): Promise<World> {
  const database = await scratchDatabase(o.name, o.log, { statements: o.statements, explainMs: o.explainMs });
  await stopBoss(await startBoss(database.url, o.log, { supervise: false, schedule: false, max: 2 }), false);
  const db = createDb(createPool(database.url, 4));
  const config = loadConfig({ DATABASE_URL: database.url, TOKEN_ENCRYPTION_KEY: KEY, COMMERCE_CLIENT_SECRET: SECRET, LOG_LEVEL: 'silent' });
  const proxy = await startDeliveryProxy(null);
  // Accounts start 25 at a time: 5,000 of them one by one took minutes before anything was measured.
  const accounts: Account[] = [];
  const startAccount = async (i: number): Promise<Account> => {
    // `profile` is passed through as given, so the same script measures a sandbox with or without profiles.
    const options = {
      variants: o.variants,
      locations: 3,
      timeScale: 1,
      rateLimit: 300,
      rateWindowSeconds: 300,
      clientSecret: SECRET,
      token: `bench-token-${i}`,
      seed: 7 + i,
      ...(o.profile ? { profile: o.profile } : {}),
      ...o.sandbox,
    } as SandboxOptions;
    const sandbox = await startSandbox(options);
    const connection = await addTokenConnection(
      { db, config, log: o.log, clients: new ClientState() },
      { baseUrl: sandbox.url, token: sandbox.token, name: `account-${i}` },
    );
    const admin = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${sandbox.url}/__sandbox/${path}`, {
        method,
        headers: { authorization: `Bearer ${sandbox.adminToken}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`sandbox admin ${method} ${path}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<any>;
    };
    return { sandbox, connectionId: Number(connection.id), admin };
  };
  for (let i = 0; i < o.accounts; i += 25)
    accounts.push(...(await Promise.all(Array.from({ length: Math.min(25, o.accounts - i) }, (_, k) => startAccount(i + k)))));
  const env = {
    DATABASE_URL: database.url,
    TOKEN_ENCRYPTION_KEY: KEY,
    COMMERCE_CLIENT_SECRET: SECRET,
    SANDBOX: 'off',
    HOST: '127.0.0.1',
    PORT: 0,
    PUBLIC_URL: proxy.url,
    LOG_LEVEL: 'warn',
    ...o.env,
  };
  // A worker is ready once it has applied the channel rules of every connection (src/worker/role.ts): with 5,000 of
  // them that took more than two minutes on a 2-core machine.
  const receiver = await spawnCli(null, 'receiver', ['receiver'], env, { readyTimeoutMs: 900_000 });
  proxy.targets.push(receiver.url);
  const startWorker = (name: string) =>
    spawnCli(null, name, ['worker'], { ...env, WORKER_PORT: 0, ...o.workerEnv }, { readyTimeoutMs: 900_000 });
  const worker = await startWorker('worker');
  const moreWorkers: CliProcess[] = [];
  return {
    db,
    config,
    database,
    accounts,
    receiver,
    worker,
    moreWorkers,
    proxy,
    async addWorker() {
      const w = await startWorker(`worker-${moreWorkers.length + 2}`);
      moreWorkers.push(w);
      return w;
    },
    async close() {
      for (const w of moreWorkers) await w.stop();
      await worker.stop();
      await receiver.stop();
      await proxy.close();
      for (const a of accounts) await a.sandbox.close();
      await db.destroy();
      await database.close();
    },
  };
}

/**
 * The stock moves an account made since the last call (GET /__sandbox/stock_moves, from the cursor kept in
 * `cursors` per connection). Merchant activity is performed inside the admin call that asks for it, so the moves
 * it made are all listed as soon as that call returns.
 */
export async function takeMoves(account: Account, cursors: Map<number, number>): Promise<StockMove[]> {
  const after = cursors.get(account.connectionId) ?? 0;
  const { stock_moves: moves } = (await account.admin('GET', `stock_moves?after=${after}`)) as {
    stock_moves: (StockMove & { seq: number })[];
  };
  if (moves.length) cursors.set(account.connectionId, moves[moves.length - 1]!.seq);
  return moves;
}

/** Waits until every account's first full sweep is done and nothing is pending: the start line of a measure. */
export async function settled(world: World, timeoutMs = 600_000): Promise<void> {
  const ids = world.accounts.map((a) => a.connectionId);
  await until(
    'first full sweeps and an empty queue',
    async () => {
      const r = (
        await sql<{ swept: number; pending: number; queued: number }>`
      SELECT (SELECT count(DISTINCT connection_id)::int FROM sync_log WHERE action = 'sweep.initial' AND connection_id = ANY(${ids}::bigint[])) AS swept,
             (SELECT count(*)::int FROM pending_fetches) AS pending,
             (SELECT count(*)::int FROM webhook_deliveries WHERE state = 'queued') AS queued`.execute(world.db)
      ).rows[0]!;
      return (
        (r.swept === ids.length && r.pending === 0 && r.queued === 0) ||
        `${r.swept}/${ids.length} swept, ${r.pending} pending fetches, ${r.queued} queued`
      );
    },
    timeoutMs,
    1000,
  );
}

const CLOCK_TICKS = 100; // USER_HZ on Linux

/**
 * CPU seconds (user + system) a process has used; `reaped` adds its exited children's (cutime + cstime),
 * which is where PostgreSQL's ended backends end up.
 */
export function cpuSeconds(pid: number, reaped = false): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name: utime and stime are the 12th and 13th, cutime and cstime the 14th and 15th.
    const f = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    return (f[11]! + f[12]! + (reaped ? f[13]! + f[14]! : 0)) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/** CPU seconds of the whole PostgreSQL server: postmaster, live backends and helpers, and the ones that exited. */
export function postgresCpuSeconds(postmaster: number | undefined): number | null {
  if (!postmaster) return null;
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    /* gone */
  }
  return cpuSeconds(postmaster, true) + children.reduce((s, pid) => s + cpuSeconds(pid), 0);
}

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
