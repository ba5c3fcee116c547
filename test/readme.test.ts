// README.md is for newcomers; these checks keep its tables true as settings and commands change.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
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

t.test('npm install on an older Node ends by saying the project runs on the Node it brings', async (t) => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  // What npm runs after installing: its user agent names the Node that runs npm; `node` is the project's own.
  const postinstall = (npmNode: string) =>
    spawnSync('sh', ['-c', pkg.scripts.postinstall], {
      env: {
        ...process.env,
        PATH: `${dirname(process.execPath)}:${process.env.PATH}`,
        npm_config_user_agent: `npm/11.19.1 node/${npmNode} linux x64`,
      },
      encoding: 'utf8',
    });
  const old = postinstall('v20.20.2');
  t.equal(old.status, 0, old.stderr);
  t.match(old.stdout, new RegExp(`runs on Node ${process.versions.node} .*EBADENGINE warnings above .*node/v20\\.20\\.2`));
  const current = postinstall('v24.21.0');
  t.equal(current.stdout, '', 'nothing to explain when npm runs on Node 24');
  t.match(readme, /EBADENGINE/, 'README says why the warnings come');
});
