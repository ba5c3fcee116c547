// The migration rule (docs/upgrades.md): expand, then contract one release later. A release's code runs on the schema
// of the release before it and of the one after it, so during an upgrade the previous release's processes keep
// working on the new schema until they are stopped. This check holds every migration not yet released to it:
//   node lint/migrations.ts [--dir migrations] [--released lint/migrations.json]   exit 1, one line per statement
//   node lint/migrations.ts --record VERSION    records the newest migration as VERSION's last (the release script)
// A migration is released once a release's last migration (lint/migrations.json) sorts at or after it. In an
// unreleased one, a statement that the previous release's code could trip on is refused unless a comment line right
// above it says why it may stand:
//   -- contract since X.Y.Z: <what>   the code that used the object stopped in release X.Y.Z, already released
//   -- compatible: <why>              a change the check flags that the previous release's code is not hurt by
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Released {
  /** Version -> the last migration that release shipped. */
  released: Record<string, string>;
}

export interface Statement {
  /** 1-based line of the statement's first word. */
  line: number;
  /** The statement, comments left out and quoted text blanked, on one line. */
  text: string;
  /** The comment lines right above it (`--` and the text after). */
  comments: string[];
}

/** Splits SQL into statements at top-level semicolons; quoted text, dollar-quoted bodies and comments are not split. */
export function statements(sql: string): Statement[] {
  const out: Statement[] = [];
  let text = '';
  let comments: string[] = [];
  let start = -1;
  let line = 1;
  let i = 0;
  const flush = () => {
    const t = text.replace(/\s+/g, ' ').trim();
    if (t) out.push({ line: start, text: t, comments });
    text = '';
    comments = [];
    start = -1;
  };
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === '\n') line++;
    if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      const comment = sql.slice(i + 2, end < 0 ? sql.length : end).trim();
      // A comment inside a statement belongs to it too (a marker above an ALTER TABLE's second clause).
      comments.push(comment);
      i = end < 0 ? sql.length : end;
      continue;
    }
    if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      const body = sql.slice(i, end < 0 ? sql.length : end + 2);
      line += body.split('\n').length - 1;
      i += body.length;
      text += ' ';
      continue;
    }
    if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < sql.length && !(sql[j] === c && sql[j + 1] !== c)) j += sql[j] === c ? 2 : 1;
      const body = sql.slice(i, j + 1);
      line += body.split('\n').length - 1;
      if (start < 0) start = line;
      // Identifiers stay (a quoted column name), strings are blanked.
      text += c === '"' ? body : "''";
      i = j + 1;
      continue;
    }
    const dollar = c === '$' ? /^\$[A-Za-z_]*\$/.exec(sql.slice(i)) : null;
    if (dollar) {
      const end = sql.indexOf(dollar[0], i + dollar[0].length);
      const body = sql.slice(i, end < 0 ? sql.length : end + dollar[0].length);
      line += body.split('\n').length - 1;
      text += ' $$ ';
      i += body.length;
      continue;
    }
    if (c === ';') {
      flush();
      i++;
      continue;
    }
    if (start < 0 && !/\s/.test(c)) start = line;
    text += c;
    i++;
  }
  flush();
  return out;
}

/** What in a statement the previous release's code could trip on, one reason per finding. */
export function breaking(text: string): string[] {
  const s = text.toUpperCase();
  const found: string[] = [];
  const m = (re: RegExp, why: string) => {
    if (re.test(s)) found.push(why);
  };
  m(/^DROP (TABLE|VIEW|MATERIALIZED VIEW|TYPE|FUNCTION|PROCEDURE|SEQUENCE|SCHEMA)\b/, 'drops what its code may still read or write');
  m(/^ALTER TABLE .*\bDROP (COLUMN\b|(?!CONSTRAINT\b|DEFAULT\b|NOT NULL\b|IDENTITY\b|EXPRESSION\b)\w+)/, 'drops a column its code may still read or write');
  m(/\bRENAME\b/, 'renames what its code names');
  m(/\bALTER COLUMN \S+ (SET DATA )?TYPE\b/, "changes a column's type under its code");
  m(/\bALTER COLUMN \S+ SET NOT NULL\b/, 'makes a column NOT NULL that its code may leave empty');
  for (const add of s.matchAll(/\bADD (COLUMN )?(?!CONSTRAINT\b)("[^"]+"|\w+) ([^,]*)/g)) {
    const rest = add[3]!;
    if (/\bNOT NULL\b/.test(rest) && !/\bDEFAULT\b/.test(rest) && !/\bGENERATED\b/.test(rest))
      found.push(`adds ${add[2]!.toLowerCase()} NOT NULL without a DEFAULT: its code's inserts leave it out`);
  }
  m(/\bADD CONSTRAINT\b|\bADD (PRIMARY KEY|UNIQUE|CHECK|FOREIGN KEY)\b/, 'adds a constraint its code may write against');
  m(/^CREATE UNIQUE INDEX\b/, 'adds a unique index its code may write against');
  return found;
}

export interface Finding {
  file: string;
  line: number;
  message: string;
}

const semver = (v: string) => v.split('.').map(Number);
const before = (a: string, b: string) => {
  const [x, y] = [semver(a), semver(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! < y[i]!;
  return false;
};

/** The findings of every unreleased migration in `dir` against the releases in `released`. */
export function check(dir: string, released: Released): Finding[] {
  const files = readdirSync(dir)
    .filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f))
    .sort();
  const versions = Object.keys(released.released);
  const findings: Finding[] = [];
  for (const [version, last] of Object.entries(released.released))
    if (!files.includes(last))
      findings.push({ file: last, line: 0, message: `release ${version}'s last migration is gone: a released migration is never renamed or removed` });
  const newest = Object.values(released.released).sort().at(-1) ?? '';
  for (const file of files.filter((f) => f > newest)) {
    for (const st of statements(readFileSync(join(dir, file), 'utf8'))) {
      const reasons = breaking(st.text);
      if (!reasons.length) continue;
      const contract = st.comments.map((c) => /^contract since (\d+\.\d+\.\d+):\s*\S/.exec(c)).find(Boolean);
      if (contract) {
        const v = contract[1]!;
        if (!versions.includes(v))
          findings.push({
            file,
            line: st.line,
            message: `"contract since ${v}" names no release (released: ${versions.join(', ') || 'none'}): contract only what a released version stopped using`,
          });
        continue;
      }
      if (st.comments.some((c) => /^compatible:\s*\S/.test(c))) continue;
      findings.push({
        file,
        line: st.line,
        message: `${reasons.join('; ')} (${st.text.slice(0, 80)}${st.text.length > 80 ? '...' : ''}). The previous release's code still runs on this schema during an upgrade: expand now, contract one release later with "-- contract since X.Y.Z: what" above it, or say why it cannot hurt with "-- compatible: why" (docs/upgrades.md)`,
      });
    }
  }
  return findings;
}

export function latestRelease(released: Released): string | undefined {
  return Object.keys(released.released).sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0)).at(-1);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (name: string, fallback: string) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1]! : fallback;
  };
  const root = fileURLToPath(new URL('../', import.meta.url));
  const dir = arg('--dir', join(root, 'migrations'));
  const file = arg('--released', join(root, 'lint', 'migrations.json'));
  const released = JSON.parse(readFileSync(file, 'utf8')) as Released;
  const record = process.argv.indexOf('--record');
  if (record > 0) {
    const version = process.argv[record + 1] ?? '';
    if (!/^\d+\.\d+\.\d+$/.test(version)) {
      console.error('usage: node lint/migrations.ts --record X.Y.Z');
      process.exit(2);
    }
    const last = readdirSync(dir)
      .filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f))
      .sort()
      .at(-1)!;
    released.released[version] = last;
    writeFileSync(file, `${JSON.stringify(released, null, 2)}\n`);
    console.log(`release ${version} ships migrations up to ${last}`);
    process.exit(0);
  }
  const findings = check(dir, released);
  for (const f of findings) console.log(`migrations/${f.file}:${f.line}: ${f.message}`);
  const newest = Object.values(released.released).sort().at(-1) ?? '';
  const unreleased = readdirSync(dir).filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f) && f > newest).length;
  console.log(`${unreleased} unreleased migration(s) since ${latestRelease(released) ?? 'none'}, ${findings.length} against the rule`);
  process.exit(findings.length ? 1 : 0);
}
