// Processes started at the same moment on one DATA_DIR (the roles a process manager starts together, `start` and
// `worker`): one starts the embedded PostgreSQL, the other waits for it and uses it; neither takes the server being
// started for one left behind. A server left running by a killed process is still taken over.
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startEmbedded } from '../../src/db/embedded.ts';
import { captureLogger } from '../support/log.ts';
import type { Teardown } from '../support/teardown.ts';

const script = fileURLToPath(new URL('./fixtures/embedded-child.ts', import.meta.url));
const TIMEOUT_MS = 120_000;

interface Child {
  name: string;
  proc: ChildProcess;
  /** stdout so far (WAITING, READY PORT, FAILED REASON, STOPPED). */
  out(): string;
  /** Its log, one JSON line each. */
  log(): string;
  /** The first match of `re` in stdout; rejects when the process exits (or times out) first. */
  waitFor(re: RegExp): Promise<RegExpExecArray>;
  send(line: string): void;
}

function child(t: Teardown, name: string, dir: string): Child {
  const proc = spawn(process.execPath, [script, dir], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_NO_WARNINGS: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let exit: number | null = null;
  const listeners = new Set<() => void>();
  const changed = () => {
    for (const l of listeners) l();
  };
  proc.stdout!.on('data', (d) => {
    out += d;
    changed();
  });
  proc.stderr!.on('data', (d) => {
    err += d;
    changed();
  });
  proc.on('exit', (code, signal) => {
    exit = code ?? (signal ? 128 : 0);
    changed();
  });
  t.teardown(() => {
    if (exit === null) proc.kill('SIGKILL');
  });
  return {
    name,
    proc,
    out: () => out,
    log: () => err,
    send: (line) => proc.stdin!.write(`${line}\n`),
    waitFor: (re) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`no ${re} within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
        const done = (e: Error | null, m?: RegExpExecArray) => {
          clearTimeout(timer);
          listeners.delete(check);
          if (e) reject(new Error(`${name}: ${e.message}; stdout: ${out.trim()}; log: ${err.trim().slice(-2000)}`));
          else resolve(m!);
        };
        const check = () => {
          const m = re.exec(out);
          if (m) done(null, m);
          else if (exit !== null) done(new Error(`exited with ${exit} before ${re}`));
        };
        listeners.add(check);
        check();
      }),
  };
}

const messages = (c: Child) =>
  c
    .log()
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { msg: string }).msg);

async function answers(dir: string, port: number): Promise<boolean> {
  const password = readFileSync(join(dir, 'postgres.password'), 'utf8').trim();
  const client = new pg.Client({ connectionString: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres` });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Whatever a failed run left running in `dir` is stopped, then the folder removed. */
async function cleanUp(dir: string): Promise<void> {
  const pidFile = join(dir, 'postgres', 'postmaster.pid');
  const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : 0;
  if (pid) {
    try {
      process.kill(pid, 'SIGINT');
      for (let i = 0; i < 300; i++) {
        process.kill(pid, 0);
        await new Promise((r) => setTimeout(r, 100));
      }
    } catch {
      /* gone */
    }
  }
  await rm(dir, { recursive: true, force: true });
}

for (const used of [false, true]) {
  const where = used ? 'a DATA_DIR used before' : 'a fresh DATA_DIR';
  t.test(`two processes started at the same moment on ${where} both come up on one server`, async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'cs-embedded-together-'));
    t.teardown(() => cleanUp(dir));
    if (used) {
      const earlier = await startEmbedded(dir, captureLogger().log);
      await earlier.stop();
    }
    const pair = [child(t, 'start', dir), child(t, 'worker', dir)];
    await Promise.all(pair.map((c) => c.waitFor(/^WAITING$/m)));
    for (const c of pair) c.send('go'); // at the same moment
    const ports = await Promise.all(
      pair.map((c) =>
        c.waitFor(/^READY (\d+)$/m).then(
          (m) => Number(m[1]),
          (err: Error) => {
            t.fail(err.message);
            return 0;
          },
        ),
      ),
    );
    t.ok(ports[0] && ports[1], 'both came up');
    t.equal(ports[0], ports[1], 'on one server');
    for (const c of pair)
      t.notOk(messages(c).includes('stopping a PostgreSQL left running by an earlier process'), `${c.name} stopped no server`);
    const owners = pair.filter((c) => messages(c).includes('embedded PostgreSQL ready'));
    const guests = pair.filter((c) => messages(c).includes('using the embedded PostgreSQL of a running process'));
    t.equal(owners.length, 1, 'one started it');
    t.equal(guests.length, 1, 'the other used it');
    t.notOk(existsSync(join(dir, 'postgres.lock')), 'no lock is left once both are up');
    if (owners.length !== 1 || guests.length !== 1 || !ports[0]) return;
    const [owner, guest] = [owners[0]!, guests[0]!];
    t.ok(await answers(dir, ports[0]), 'the server answers');

    // The owner is killed (kill -9): its server stays, the guest goes on using it and leaves it running.
    owner.proc.kill('SIGKILL');
    await new Promise((r) => owner.proc.once('exit', r));
    guest.send('stop');
    await guest.waitFor(/^STOPPED$/m);
    t.ok(await answers(dir, ports[0]), 'the killed owner left its server running');

    // The next process takes the left server over, as before: stops it and starts its own on the same data.
    const { log, text } = captureLogger();
    const next = await startEmbedded(dir, log);
    t.match(text(), /left running by an earlier process/, 'the server left behind was recognised');
    // pino writes each process's own pid on its lines: another process's pid goes under another name.
    for (const line of [...pair.map((c) => c.log()), text()].join('\n').split('\n').filter(Boolean))
      t.equal(line.match(/"pid":/g)?.length, 1, `one pid in ${line.slice(0, 160)}`);
    t.not(next.port, ports[0], 'and replaced');
    t.notOk(await answers(dir, ports[0]), 'the left one is gone');
    t.ok(await answers(dir, next.port), 'the new one answers');
    await next.stop();
  });
}
