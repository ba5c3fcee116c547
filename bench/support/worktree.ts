// Another commit of this repository, checked out beside it with its own dependencies, so a benchmark can run that
// commit the same way in the same sitting (--baseline REF): figures from two machines, or two days, don't compare.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const run = (cmd: string, args: string[], cwd: string) => {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) failed: ${(r.stderr || r.stdout).trim().slice(-2000)}`);
  return r.stdout.trim();
};

/**
 * The folder of a detached worktree at `ref` (a commit, tag or branch) with its package-lock's dependencies
 * installed; made once per commit and kept in the temporary folder for the next run (`git worktree prune` after
 * deleting it).
 */
export function worktreeAt(ref: string, repo = process.cwd()): { dir: string; commit: string } {
  const commit = run('git', ['rev-parse', '--verify', `${ref}^{commit}`], repo);
  const dir = join(tmpdir(), `commerce-sync-at-${commit.slice(0, 12)}`);
  if (!existsSync(join(dir, '.git'))) {
    run('git', ['worktree', 'prune'], repo);
    run('git', ['worktree', 'add', '--detach', '--force', dir, commit], repo);
  }
  if (!existsSync(join(dir, 'node_modules', '.package-lock.json'))) run('npm', ['ci', '--no-audit', '--no-fund'], dir);
  return { dir, commit };
}
