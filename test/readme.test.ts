// README.md is for newcomers; these checks keep its tables true as settings and commands change.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { settings, readDefaults } from '../src/config.ts';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

t.test('README documents every setting with its default', async (t) => {
  const defaults = readDefaults();
  for (const key of Object.keys(settings)) {
    const row = readme.split('\n').find((l) => l.startsWith(`| \`${key}\` |`));
    t.ok(row, `${key} has a row in the configuration table`);
    if (row) t.ok(row.includes(`\`${JSON.stringify(defaults[key])}\``), `${key} row shows its default ${JSON.stringify(defaults[key])}`);
  }
});

t.test('README shows the two commands and the test command CI runs', async (t) => {
  t.match(readme, /npm install && npm start/);
  t.match(readme, /npm test/);
  t.match(readFileSync(new URL('../.ci/run', import.meta.url), 'utf8'), /\nnpm test\n/);
});

t.test('README lists every CLI command', async (t) => {
  const cli = readFileSync(new URL('../src/cli.ts', import.meta.url), 'utf8');
  const names = [...cli.matchAll(/^\s+\['([a-z-]+)', [a-z]+, '/gm)].map((m) => m[1]);
  t.ok(names.length >= 10, 'found the registry');
  for (const n of names) t.match(readme, new RegExp(`commerce-sync ${n}\\b`), `README mentions commerce-sync ${n}`);
});
