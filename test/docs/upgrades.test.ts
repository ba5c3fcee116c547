// docs/upgrades.md quotes what `commerce-sync --version` prints; each release or migration changes it, so the quote
// is checked against the command itself rather than left to go stale.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { runNode } from '../support/processes.ts';

t.test('docs/upgrades.md quotes what --version prints today', async (t) => {
  const run = await runNode(['src/cli.ts', '--version'], { ...process.env, LOG_LEVEL: 'silent' });
  t.equal(run.code, 0, run.err);
  const printed = run.out.trim();
  t.match(printed, /^commerce-sync \d+\.\d+\.\d+ \(schema \d{4}_\w+\)$/);
  const doc = readFileSync(new URL('../../docs/upgrades.md', import.meta.url), 'utf8');
  t.ok(doc.includes(`\`${printed}\``), `docs/upgrades.md quotes \`${printed}\``);
});
