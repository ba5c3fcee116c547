// Real commerce-sync processes for tests and benchmarks: `node src/cli.ts <command>` as a child process,
// started, waited for until it listens, killed with any signal, restarted with the same settings, and
// measured from the outside (/proc RSS). Their output is kept whole so a test can scan it.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Teardown } from './teardown.ts';

const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));

export interface CliProcess {
  readonly name: string;
  readonly pid: number;
  /** http://127.0.0.1:PORT once it listens (roles print the address they listen on). */
  readonly url: string;
  readonly child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Exit code (or 128+signal) once it exits. */
  readonly exited: Promise<number>;
  kill(signal?: NodeJS.Signals): void;
  /** SIGTERM, then the exit (SIGKILL after graceMs). */
  stop(graceMs?: number): Promise<number>;
  /** Resident set size in bytes, read from /proc (null once gone). */
  rss(): number | null;
}

export interface SpawnOptions {
  /** Resolve once this matches the output (default: the "listening on http://..." line). null: at once. */
  ready?: RegExp | null;
  readyTimeoutMs?: number;
  /** Extra node flags, e.g. --expose-gc. */
  nodeArgs?: string[];
}

const LISTENING = /listening on (http:\/\/[^\s)]+)/;

/**
 * Starts `commerce-sync <args>` with `env` over a minimal base environment (PATH, HOME; never the test
 * runner's own variables, so a child sees only the settings given; and, as in testConfig, every /api answer
 * checked against the OpenAPI document). Killed at teardown if still running.
 */
export async function spawnCli(
  t: Teardown | null,
  name: string,
  args: string[],
  env: Record<string, string | number>,
  opts: SpawnOptions = {},
): Promise<CliProcess> {
  const childEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_NO_WARNINGS: '1',
    OPENAPI_CHECK_ANSWERS: 'true',
  };
  for (const [k, v] of Object.entries(env)) childEnv[k] = String(v);
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), cli, ...args], {
    cwd: root,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (d: Buffer) => {
    out += d.toString('utf8');
    for (const l of listeners) l();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  let exitCode: number | null = null;
  const exited = new Promise<number>((resolve) =>
    child.on('exit', (code, signal) => {
      exitCode = code ?? 128 + (signal ? signalNumber(signal) : 0);
      for (const l of listeners) l();
      resolve(exitCode);
    }),
  );
  t?.teardown(async () => {
    if (exitCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  if (!t) {
    // Without a test to tear it down (a benchmark), the child goes with this process however it ends: a benchmark
    // that crashed left its worker running, and it took most of a core from the next benchmark.
    const reap = () => {
      if (exitCode === null) child.kill('SIGKILL');
    };
    process.on('exit', reap);
    void exited.then(() => process.off('exit', reap));
  }
  const ready = opts.ready === undefined ? LISTENING : opts.ready;
  let url = '';
  if (ready) {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`${name} not ready within ${opts.readyTimeoutMs ?? 30_000} ms:\n${out.slice(-3000)}`));
      }, opts.readyTimeoutMs ?? 30_000);
      const check = () => {
        const m = ready.exec(out);
        if (m) {
          clearTimeout(timer);
          listeners.delete(check);
          url = (LISTENING.exec(out)?.[1] ?? '').replace(/\/$/, '');
          resolve();
        } else if (exitCode !== null) {
          clearTimeout(timer);
          listeners.delete(check);
          reject(new Error(`${name} exited with ${exitCode} before it was ready:\n${out.slice(-3000)}`));
        }
      };
      listeners.add(check);
      check();
    });
  }
  return {
    name,
    pid: child.pid!,
    url,
    child,
    exited,
    output: () => out,
    kill: (signal = 'SIGKILL') => {
      if (exitCode === null) child.kill(signal);
    },
    async stop(graceMs = 15_000) {
      if (exitCode !== null) return exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
    rss: () => rssOf(child.pid!),
  };
}

/** A finished child: its exit code (null: ended by a signal), stdout, stderr, and both as they came. */
export interface Finished {
  code: number | null;
  out: string;
  err: string;
  both: string;
}

/**
 * Runs `node <args>` with exactly `env` (spread process.env into it to pass this process's own) until its
 * output is closed. `onOut` is given stdout so far at each chunk.
 */
export function runNode(args: string[], env: NodeJS.ProcessEnv, onOut?: (out: string) => void): Promise<Finished> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env });
    let out = '';
    let err = '';
    let both = '';
    child.stdout.on('data', (d) => {
      out += d;
      both += d;
      onOut?.(out);
    });
    child.stderr.on('data', (d) => {
      err += d;
      both += d;
    });
    child.on('close', (code) => resolve({ code, out, err, both }));
  });
}

/** Resident set size of a process in bytes, from /proc/PID/status (null when it is gone). */
export function rssOf(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

function signalNumber(signal: NodeJS.Signals): number {
  return ({ SIGINT: 2, SIGKILL: 9, SIGTERM: 15 } as Record<string, number>)[signal] ?? 0;
}

/** Polls until fn returns true; fails with `what` (and the last detail fn gave) instead of hanging. */
export async function until(
  what: string,
  fn: () => Promise<boolean | string> | boolean | string,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  let last: boolean | string = false;
  for (;;) {
    last = await fn();
    if (last === true) return;
    if (Date.now() > end)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${typeof last === 'string' ? `: ${last}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Node flags that make a child answer memoryOf(): garbage collection on demand and the probe preloaded. */
export const memoryProbe = ['--expose-gc', '--import', fileURLToPath(new URL('./memory-probe.ts', import.meta.url))];

/** process.memoryUsage() of a child started with `nodeArgs: memoryProbe`, after a full garbage collection. */
export async function memoryOf(p: CliProcess, timeoutMs = 5000): Promise<NodeJS.MemoryUsage> {
  const count = () => p.output().split('\nMEMORY ').length;
  const before = count();
  p.kill('SIGUSR2');
  await until(`${p.name} to report its memory`, () => count() > before, timeoutMs, 20);
  const last = p.output().split('\nMEMORY ').pop()!;
  return JSON.parse(last.slice(0, last.indexOf('\n')));
}
