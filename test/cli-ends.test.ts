// How a command ends when nobody is left to hear it, and where its data lives.
// A closed output: the reader of a command's stdout (and stderr) gone before the command writes, as after
// `| head -1` once head has its line, but without the race of head's own timing: status and logs end quietly with
// their embedded PostgreSQL stopped, start stops by itself. SIGTERM to `npm start` stops the node process too, not
// only npm. The default data folder is the project's wherever a command runs, and status on a database never set
// up says so and makes none.
import t from 'tap';
import { spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmbedded } from '../src/db/embedded.ts';
import { migrate } from '../src/db/migrate.ts';
import { startBoss, stopBoss } from '../src/queue/boss.ts';
import { emptyDatabase } from './support/db.ts';
import { captureLogger } from './support/log.ts';
import { until } from './support/processes.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const { log } = captureLogger('silent');
/** The child's settings and nothing of the test runner's (no DATABASE_URL, no DATA_DIR unless given). */
const baseEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NODE_NO_WARNINGS: '1', LOG_LEVEL: 'silent', PORT: '0' };

/** Gone, or a zombie nobody has reaped yet (an orphan's new parent may not). */
function gone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? true;
  } catch {
    return true;
  }
}

/** The embedded server of `dataDir` still running: its pid, or null (a clean stop removes postmaster.pid). */
function serverOf(dataDir: string): number | null {
  const file = join(dataDir, 'postgres', 'postmaster.pid');
  if (!existsSync(file)) return null;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  return gone(pid) ? null : pid;
}

/** Stops what a failed test left running on `dataDir`: the command that owns its server, and the server. */
function cleanUp(dataDir: string): void {
  const owner = join(dataDir, 'postgres.owner');
  const pid = existsSync(owner) ? Number(readFileSync(owner, 'utf8')) : 0;
  if (pid > 0 && !gone(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('cli.ts')) process.kill(pid, 'SIGKILL');
  const server = serverOf(dataDir);
  if (server) process.kill(server, 'SIGINT');
}

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/**
 * Runs `commerce-sync <args>` with its stdout, and with `closeStderr` its stderr too (`2>&1 | head`), a pipe whose
 * reader is gone: closed in the same tick as the spawn, long before the command has anything to write. Resolves
 * when it exits, or fails after `timeoutMs` (and kills it: the spin this guards against ignored SIGTERM).
 */
function withOutputClosed(args: string[], env: Record<string, string>, closeStderr: boolean, timeoutMs = 60_000): Promise<Ended> {
  const child = spawn(process.execPath, ['src/cli.ts', ...args], {
    cwd: root,
    env: { ...baseEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.destroy();
  if (closeStderr) child.stderr.destroy();
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`commerce-sync ${args.join(' ')} still running ${timeoutMs} ms after its output closed`));
    }, timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stderr });
    });
  });
}

t.test('a closed output ends a command quietly, its database stopped', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cs-closed-'));
  t.teardown(() => {
    cleanUp(dataDir);
    rmSync(dataDir, { recursive: true, force: true });
  });
  // A set-up database with sync log lines for `logs` to print.
  const server = await startEmbedded(dataDir, log);
  await migrate(server.url);
  await stopBoss(await startBoss(server.url, log, { supervise: false, schedule: false, max: 2 }), false);
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  await client.query(`INSERT INTO sync_log (action, resource, record_id) SELECT 'test', 'variant', n FROM generate_series(1, 20) n`);
  await client.end();
  await server.stop();
  const env = { DATA_DIR: dataDir };

  for (const args of [['status'], ['logs', '-n', '2000']]) {
    const r = await withOutputClosed(args, env, false);
    t.same([r.code, r.signal], [0, null], `${args[0]} exits 0`);
    t.notMatch(r.stderr, /EPIPE|\n\s+at /, `${args[0]}: no EPIPE, no stack trace`);
    t.equal(serverOf(dataDir), null, `${args[0]} left no PostgreSQL running`);
  }
  // The reader gone from the start (`start 2>&1 | head` while it starts), and once it listens (`start | head -1`).
  for (const [what, closeStderr, level] of [
    ['stdout and stderr closed while starting', true, 'info'],
    ['stdout closed when it prints where it listens', false, 'silent'],
  ] as const) {
    const r = await withOutputClosed(['start'], { ...env, LOG_LEVEL: level }, closeStderr);
    t.same([r.code, r.signal], [0, null], `start with ${what}: ends by itself, status 0`);
    t.equal(r.stderr, '', 'and says nothing');
    t.equal(serverOf(dataDir), null, 'no PostgreSQL left running');
  }
});

/** A copy of the project (its code, settings and migrations; node_modules linked): a folder of its own to run in. */
function projectCopy(): string {
  const copy = mkdtempSync(join(tmpdir(), 'cs-project-'));
  chmodSync(copy, 0o755); // as root, the embedded PostgreSQL runs as the postgres user, who must reach copy/data
  for (const f of ['src', 'config', 'migrations', 'package.json']) cpSync(join(root, f), join(copy, f), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
  mkdirSync(join(copy, 'docs'));
  return copy;
}

t.test("the default data folder is the project's wherever a command runs; status on nothing says so", async (t) => {
  const copy = projectCopy();
  const data = join(copy, 'data');
  t.teardown(() => {
    cleanUp(data);
    rmSync(copy, { recursive: true, force: true });
  });
  const run = (args: string[], cwd: string, env: Record<string, string> = {}) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, [join(copy, 'src', 'cli.ts'), ...args], { cwd, env: { ...baseEnv, ...env } });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.stderr.on('data', (d) => {
        err += d;
      });
      child.on('close', (code) => resolve({ code, out, err }));
    });
  const docs = join(copy, 'docs');

  const before = await run(['status'], docs);
  t.equal(before.code, 1, 'status on nothing exits 1');
  t.match(before.err, `nothing here yet: no database in ${data} (DATA_DIR)`);
  t.notOk(existsSync(data) || existsSync(join(docs, 'data')), 'and makes no database, here or there');

  const migrated = await run(['migrate'], docs);
  t.equal(migrated.code, 0, migrated.err);
  const after = await run(['status'], docs);
  t.equal(after.code, 0, after.err);
  t.match(after.out, /^alerts: none open\nNo connections\./, "status from docs/ reads the project's database");
  t.ok(existsSync(join(data, 'postgres', 'PG_VERSION')), 'which is in the data folder of the project');
  t.notOk(existsSync(join(docs, 'data')), 'none under docs/');

  // A DATA_DIR the user sets stays theirs: relative to where the command runs.
  const own = await run(['status'], docs, { DATA_DIR: 'mine' });
  t.match(own.err, `nothing here yet: no database in mine (DATA_DIR)`);

  // An external database with no schema: status says so and leaves it as it was.
  const empty = await emptyDatabase(t);
  const bare = await run(['status'], docs, { DATABASE_URL: empty.url });
  t.equal(bare.code, 1);
  t.match(bare.err, 'nothing here yet: the database has no schema');
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: empty.url });
  await client.connect();
  const { rows } = await client.query(`SELECT to_regclass('schema_migrations') AS t`);
  await client.end();
  t.equal(rows[0].t, null, 'no schema made');

  await t.test('one SIGTERM to `npm start` stops npm, the node process and its database', async (t) => {
    const npm = spawn('npm', ['start'], { cwd: copy, env: baseEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    npm.stdout.on('data', (d) => {
      out += d;
    });
    npm.stderr.on('data', (d) => {
      out += d;
    });
    let exited = false;
    const npmExit = new Promise<void>((resolve) =>
      npm.on('exit', () => {
        exited = true;
        resolve();
      }),
    );
    t.teardown(() => npm.kill('SIGKILL'));
    await until(
      'npm start to listen',
      () => {
        if (exited) throw new Error(`npm start ended before it listened:\n${out}`);
        return /listening on http:\/\/[\d.:]+/.test(out) || out.slice(-500);
      },
      60_000,
    );
    const url = /listening on (http:\/\/[\d.:]+)/.exec(out)![1]!;
    // The node process npm's shell started is the one that started the embedded PostgreSQL.
    const node = Number(readFileSync(join(data, 'postgres.owner'), 'utf8'));
    t.not(node, npm.pid, 'npm runs node through a shell');
    t.equal((await fetch(`${url}/healthz`)).status, 200);

    npm.kill('SIGTERM');
    await npmExit;
    await until('the node process to stop', () => gone(node) || `node ${node} still running`, 30_000);
    t.equal(serverOf(data), null, 'no PostgreSQL left running');
    await t.rejects(fetch(`${url}/healthz`), 'nothing serves');
  });
});
