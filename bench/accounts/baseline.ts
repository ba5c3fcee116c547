// bench/accounts --baseline REF: the same benchmark run on another commit (a worktree of it, bench/support/worktree.ts)
// and on this tree, one after the other in the same sitting, each as a child process with the same arguments; prints
// both rows and this tree's figures as ratios to the baseline's. A ratio between two runs of one sitting is what
// compares: absolute milliseconds move from machine to machine (the same commit gave 12.8 and 28.6 ms of PostgreSQL
// per operation on two machines a week apart).
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { worktreeAt } from '../support/worktree.ts';

/** One measure's figures, as the run printed them (its table row, and its statements line with --pg-statements). */
export interface Measured {
  key: string;
  row: Map<string, string>;
  statementsPerOp?: number;
  planMsPerOp?: number;
  execMsPerOp?: number;
  /** Idle statements per connection and minute (a run that prints them). */
  idleStatements?: number;
}

// The run's table head, in the order of its row (bench/accounts/run.ts prints `  N connections, W worker(s): a | b | ...`).
export const HEAD = [
  'connections',
  'workers',
  'idle worker %',
  'idle pg %',
  'idle % per conn',
  'active worker %',
  'receiver %',
  'active pg %',
  'bench %',
  'ops/s',
  'pg ms/op',
  'worker ms/op',
  'moves',
  'p95 lag median s',
  'p95 lag worst s',
  'p95 all s',
  'open',
  '429',
  'db MB',
  'KB/op',
];

/** A measure's row as the run prints it (`label`: `N connections, W worker(s)`), cells in HEAD's order. */
export const rowLine = (label: string, cells: string[]) => `  ${label}: ${cells.join(' | ')}`;

/** The run's summary of pg_stat_statements over a phase, each figure per `unit`. */
export const statementsLine = (label: string, unit: string, f: { execMs: number; planMs: number; statements: number; calls: number }) =>
  `  ${label}: PostgreSQL execution + planning time per ${unit} ${f.execMs.toFixed(2)} + ${f.planMs.toFixed(2)} ms ` +
  `over ${f.statements} statements, ${f.calls.toFixed(1)} calls per ${unit}; the largest ` +
  `(execution ms, planning ms, calls, each per ${unit}; mean execution ms; statement):`;

/**
 * The measures in a run's output: its rows (rowLine) and statements lines (statementsLine), of this tree or of an
 * older commit, whose lines had the same shape (13cff49 on).
 */
export function parseRun(output: string): Measured[] {
  const out = new Map<string, Measured>();
  const of = (key: string) => out.get(key) ?? out.set(key, { key, row: new Map() }).get(key)!;
  for (const line of output.split('\n')) {
    const idle = /^ {2}(\d+ connections, \d+ workers?), idle: .* per connection-minute .* statements, ([\d.]+) calls/.exec(line);
    if (idle) of(idle[1]!).idleStatements = Number(idle[2]);
    const m = /^ {2}(\d+ connections, \d+ workers?): (.*)$/.exec(line);
    if (!m) continue;
    const [, key, rest] = m as unknown as [string, string, string];
    const cells = rest.split(' | ');
    if (cells.length === HEAD.length) of(key).row = new Map(HEAD.map((h, i) => [h, cells[i]!]));
    const s =
      /PostgreSQL execution \+ planning time per operation ([\d.]+) \+ ([\d.]+) ms over \d+ statements, ([\d.]+) calls per operation/.exec(
        rest,
      );
    if (s) Object.assign(of(key), { execMsPerOp: Number(s[1]), planMsPerOp: Number(s[2]), statementsPerOp: Number(s[3]) });
  }
  return [...out.values()].filter((x) => x.row.size);
}

/** The figures a ratio is taken of: lower is better for each. */
const FIGURES: [string, (m: Measured) => number | undefined][] = [
  ['statements per operation', (m) => m.statementsPerOp],
  ['PostgreSQL execution ms per operation', (m) => m.execMsPerOp],
  ['PostgreSQL planning ms per operation', (m) => m.planMsPerOp],
  ['PostgreSQL CPU ms per operation', (m) => num(m.row.get('pg ms/op'))],
  ['worker CPU ms per operation', (m) => num(m.row.get('worker ms/op'))],
  ['idle % of a core per connection', (m) => num(m.row.get('idle % per conn'))],
  ['idle statements per connection-minute', (m) => m.idleStatements],
  ['p95 over all moves, s', (m) => num(m.row.get('p95 all s'))],
  ["worst connection's p95, s", (m) => num(m.row.get('p95 lag worst s'))],
  ['429 answers', (m) => num(m.row.get('429'))],
];
const num = (s: string | undefined) => (s === undefined || s === '-' ? undefined : Number(s));

/** The comparison table: per measure, each figure of the baseline and of this tree, and their ratio. */
export function compare(baseline: { label: string; runs: Measured[] }, current: { label: string; runs: Measured[] }): string {
  const lines: string[] = [];
  for (const now of current.runs) {
    const then = baseline.runs.find((b) => b.key === now.key);
    lines.push('', `${now.key}: ${baseline.label} | ${current.label} | ratio`);
    for (const [name, get] of FIGURES) {
      const a = then ? get(then) : undefined,
        b = get(now);
      const ratio = a !== undefined && b !== undefined && a > 0 ? (b / a).toFixed(2) : '-';
      lines.push(`  ${name.padEnd(40)} ${String(a ?? '-').padStart(9)} ${String(b ?? '-').padStart(9)} ${ratio.padStart(6)}`);
    }
  }
  return lines.join('\n');
}

/** Runs bench/accounts/run.ts in `dir` with `args`, its output passed through with a prefix; answers the output. */
function runIn(dir: string, args: string[], prefix: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(dir, 'node_modules', '.bin', 'node'), ['bench/accounts/run.ts', ...args], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let text = '',
      partial = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const l of lines) console.log(`${prefix} ${l}`);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (partial) console.log(`${prefix} ${partial}`);
      if (code === 0) resolve(text);
      else reject(new Error(`${prefix} bench/accounts/run.ts exited with ${code}`));
    });
  });
}

/** --baseline: the baseline's run, then this tree's, then the comparison. */
export async function runWithBaseline(ref: string, args: string[]): Promise<void> {
  const { dir, commit } = worktreeAt(ref);
  const head = execFileSync('git', ['rev-parse', '--short=7', 'HEAD'], { encoding: 'utf8' }).trim();
  const baselineLabel = commit.slice(0, 7),
    currentLabel = `${head} (this tree)`;
  console.log(`baseline ${baselineLabel} in ${dir}, then this tree, the same arguments: ${args.join(' ')}`);
  const baseline = parseRun(await runIn(dir, args, `[${baselineLabel}]`));
  const current = parseRun(await runIn(process.cwd(), args, '[this tree]'));
  console.log(compare({ label: baselineLabel, runs: baseline }, { label: currentLabel, runs: current }));
}
