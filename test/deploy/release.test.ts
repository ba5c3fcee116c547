// What a release promises before any image is built (docs/upgrades.md): `commerce-sync --version` says the release and
// its schema, CHANGELOG.md has the release's notes, and the migration rule holds (lint/migrations.ts): a migration not
// yet released may not drop, rename or tighten what the previous release's code uses, unless it says why.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';

const root = new URL('../../', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
const migrations = readdirSync(join(root, 'migrations'))
  .filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f))
  .sort();

t.test('--version prints the release and the schema version (the latest migration)', async (t) => {
  const r = spawnSync(process.execPath, ['src/cli.ts', '--version'], { cwd: root, encoding: 'utf8', env: { PATH: process.env.PATH } });
  t.equal(r.status, 0, r.stderr);
  t.equal(r.stdout.trim(), `commerce-sync ${pkg.version} (schema ${migrations.at(-1)!.replace(/\.sql$/, '')})`);
  t.match(pkg.version, /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/, 'a semantic version');
});

t.test('CHANGELOG.md has the notes of the current release, for someone upgrading', async (t) => {
  const changelog = readFileSync(join(root, 'CHANGELOG.md'), 'utf8');
  const released = JSON.parse(readFileSync(join(root, 'lint/migrations.json'), 'utf8')).released as Record<string, string>;
  // 0.1.0 is the version before releases were cut: it has no section.
  for (const v of Object.keys(released).filter((v) => v !== '0.1.0'))
    t.match(changelog, new RegExp(`^## ${v.replace(/\./g, '\\.')} `, 'm'), `a section for ${v}`);
});

const lint = (...args: string[]) => {
  const r = spawnSync(process.execPath, ['lint/migrations.ts', ...args], { cwd: root, encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
};

t.test("the project's migrations keep the migration rule", async (t) => {
  const r = lint();
  t.equal(r.code, 0, r.out);
  t.match(r.out, /unreleased migration\(s\) since \d+\.\d+\.\d+, 0 against the rule/);
});

t.test('a new migration that drops, renames or tightens is refused unless it says why', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cs-migrations-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const f of migrations) copyFileSync(join(root, 'migrations', f), join(dir, f));
  const released = join(dir, 'released.json');
  writeFileSync(released, JSON.stringify({ released: { '0.1.0': migrations.at(-1), '0.2.0': migrations.at(-1) } }));
  const run = () => lint('--dir', dir, '--released', released);
  const add = (name: string, sql: string) => writeFileSync(join(dir, name), sql);

  add(
    '9000_expand.sql',
    `-- A new column and a new table: the old code never sees them.
ALTER TABLE connections ADD COLUMN region text, ADD COLUMN weight integer NOT NULL DEFAULT 1;
CREATE TABLE things (id bigint PRIMARY KEY, name text NOT NULL);
CREATE INDEX things_name ON things (name);
DO $$ BEGIN PERFORM 1; END $$;`,
  );
  let r = run();
  t.equal(r.code, 0, `expanding passes: ${r.out}`);

  add(
    '9010_contract.sql',
    `ALTER TABLE connections DROP COLUMN region;
ALTER TABLE things RENAME COLUMN name TO title;
ALTER TABLE things ALTER COLUMN title TYPE varchar(20);
ALTER TABLE things ALTER COLUMN title SET NOT NULL;
ALTER TABLE things ADD COLUMN size integer NOT NULL;
DROP TABLE things;`,
  );
  r = run();
  t.equal(r.code, 1, 'contracting in the same release is refused');
  for (const [line, what] of [
    [1, 'drops a column'],
    [2, 'renames'],
    [3, "changes a column's type"],
    [4, 'makes a column NOT NULL'],
    [5, 'adds size NOT NULL without a DEFAULT'],
    [6, 'drops what its code'],
  ] as const)
    t.match(r.out, `migrations/9010_contract.sql:${line}: ${what}`, `line ${line}: ${what}`);
  t.match(r.out, /6 against the rule/);

  add(
    '9010_contract.sql',
    `-- contract since 0.2.0: region, unused since 0.2.0 read weight instead
ALTER TABLE connections DROP COLUMN region;
-- compatible: the previous release's code never writes an empty title
ALTER TABLE things ALTER COLUMN title SET NOT NULL;
-- contract since 0.3.0: not released yet
DROP TABLE things;
-- text that mentions DROP TABLE x; in a comment or 'DROP TABLE y' in a string is no statement
INSERT INTO things (id, title) VALUES (1, 'DROP TABLE y; RENAME');`,
  );
  r = run();
  t.equal(r.code, 1, r.out);
  t.match(r.out, /9010_contract\.sql:6: "contract since 0\.3\.0" names no release/);
  t.match(r.out, /1 against the rule/, 'the marked contract and the compatible change pass; comments and strings are not read as SQL');

  rmSync(join(dir, migrations.at(-1)!));
  t.match(run().out, /last migration is gone: a released migration is never renamed or removed/);
});
