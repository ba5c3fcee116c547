// Every file that README.md, docs/ or a source comment names must exist: a path in the docs is a promise to a
// reader, and one left behind by a move sends them nowhere. README.md's Guarantees table is held to more: each
// promise names the tests that check it, and each is a test file npm test runs (or a benchmark run by hand).
//
// What counts as a reference:
// - a path from the repository root, `src/...`, `test/...`, `bench/...`, `docs/...`, `migrations/...`, `config/...`,
//   `deploy/...` or `packages/...`, ending in .ts, .md, .json, .sql, .yml or .yaml, not itself part of a longer path;
// - a bare path whose first folder is a folder of src/ (`db/channels.ts` means src/db/channels.ts), or one of the
//   folders src/ no longer has, so a reference into a folder that went away is caught too; in a source comment
//   also a path whose first folder sits next to the commented file (`pages/layout.ts` in src/console/), and in the
//   sandbox package a path from its src/ (`resources/orders-fields.ts`).
// Paths with a placeholder (an upper-case run such as NNNN or NAME: `migrations/NNNN_name.sql`) are patterns, not
// files. Other bare paths (a public repository's `locales/webhook.en.yml` cited as evidence) are not ours to check.
import t from 'tap';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const sandboxSrc = join(root, 'packages/sandbox/src');

const EXT = String.raw`\.(?:ts|md|json|sql|yml|yaml)\b`;
/** Not preceded by anything that would make it the tail of a longer path, a URL or a package name. */
const START = String.raw`(?<![\w./@-])`;
const ROOTED = new RegExp(`${START}(?:src|test|bench|docs|migrations|config|deploy|packages)/[\\w./-]+${EXT}`, 'g');
const BARE = new RegExp(`${START}([a-z][\\w-]*)/[\\w./-]*${EXT}`, 'g');
const ROOT_FOLDERS = new Set(['src', 'test', 'bench', 'docs', 'migrations', 'config', 'deploy', 'packages']);
/** Folders src/ had and no longer has: a bare reference into one of them names a file that moved. */
const FORMER_SRC_FOLDERS = ['jobs', 'notify'];
const PLACEHOLDER = /[A-Z]{2,}/;

const foldersOf = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
const srcFolders = new Set([...foldersOf(join(root, 'src')), ...FORMER_SRC_FOLDERS]);
const sandboxFolders = new Set(foldersOf(sandboxSrc));

function filesUnder(dir: string, test: (name: string) => boolean): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p, test));
    else if (test(e.name)) out.push(p);
  }
  return out;
}

interface Comment {
  text: string;
  /** 1-based line of the comment's first character. */
  line: number;
}

const REGEX_BEFORE = new Set([...'(,=:[!&|?{};+-*%<>~^']);
const REGEX_AFTER_WORD = new Set([
  'return',
  'typeof',
  'case',
  'do',
  'else',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'yield',
  'await',
]);

/**
 * The comments of a TypeScript source, skipping string, template and regular-expression literals (a `//` in a URL
 * string is not a comment). A small scanner, enough for this code base: a `/` starts a regular expression where an
 * expression may start (after an operator, an opening bracket, a keyword such as `return`, or at the start).
 */
function commentsOf(src: string): Comment[] {
  const out: Comment[] = [];
  let line = 1;
  let last = ''; // the last significant character outside comments
  let word = ''; // the identifier that character ends, if any
  // Open template literals: the depth of `{` inside each `${ ... }` expression.
  const templates: number[] = [];
  let i = 0;
  const advance = (to: number) => {
    for (; i < to; i++) if (src[i] === '\n') line++;
  };
  const skipString = (quote: string) => {
    let j = i + 1;
    while (j < src.length && src[j] !== quote && src[j] !== '\n') j += src[j] === '\\' ? 2 : 1;
    advance(j + 1);
  };
  // Template text from i (just after ` or }) up to its end (`) or an expression (${).
  const skipTemplateText = () => {
    let j = i;
    while (j < src.length && src[j] !== '`' && !(src[j] === '$' && src[j + 1] === '{')) j += src[j] === '\\' ? 2 : 1;
    if (src[j] === '`') {
      templates.pop();
      advance(j + 1);
    } else advance(j + 2);
  };
  while (i < src.length) {
    const c = src[i]!;
    const next = src[i + 1];
    if (c === '/' && next === '/') {
      const end = src.indexOf('\n', i);
      const to = end === -1 ? src.length : end;
      out.push({ text: src.slice(i, to), line });
      advance(to);
      continue;
    }
    if (c === '/' && next === '*') {
      const end = src.indexOf('*/', i + 2);
      const to = end === -1 ? src.length : end + 2;
      out.push({ text: src.slice(i, to), line });
      advance(to);
      continue;
    }
    if (/\s/.test(c)) {
      advance(i + 1);
      continue;
    }
    if (c === '"' || c === "'") {
      skipString(c);
      last = c;
      word = '';
      continue;
    }
    if (c === '`') {
      templates.push(0);
      advance(i + 1);
      skipTemplateText();
      last = '`';
      word = '';
      continue;
    }
    if (templates.length && c === '{') templates[templates.length - 1]!++;
    if (templates.length && c === '}') {
      if (templates[templates.length - 1] === 0) {
        advance(i + 1);
        skipTemplateText();
        last = '`';
        word = '';
        continue;
      }
      templates[templates.length - 1]!--;
    }
    if (c === '/' && (last === '' || REGEX_BEFORE.has(last) || REGEX_AFTER_WORD.has(word))) {
      let j = i + 1;
      let inClass = false;
      while (j < src.length && src[j] !== '\n' && (inClass || src[j] !== '/')) {
        if (src[j] === '\\') j++;
        else if (src[j] === '[') inClass = true;
        else if (src[j] === ']') inClass = false;
        j++;
      }
      advance(j + 1);
      last = '/';
      word = '';
      continue;
    }
    word = /[\w$]/.test(c) ? (/[\w$]/.test(last) ? word + c : c) : '';
    last = c;
    advance(i + 1);
  }
  return out;
}

interface Reference {
  /** Where it is named: file (from the repository root) and line. */
  where: string;
  path: string;
  /** The files it may mean, from the repository root; it exists when any of them does. */
  candidates: string[];
}

/** The references in `text`, which starts at `line` of `file` (absolute); `inSource`: a comment of a .ts file. */
function referencesIn(text: string, file: string, line: number, inSource: boolean): Reference[] {
  const out: Reference[] = [];
  const at = (index: number) => `${relative(root, file)}:${line + (text.slice(0, index).match(/\n/g)?.length ?? 0)}`;
  const inSandbox = file.startsWith(sandboxSrc);
  for (const m of text.matchAll(ROOTED)) {
    if (PLACEHOLDER.test(m[0])) continue;
    // In the sandbox package, `src/main.ts` may be the package's own.
    const candidates = [m[0], ...(inSandbox && m[0].startsWith('src/') ? [join('packages/sandbox', m[0])] : [])];
    out.push({ where: at(m.index), path: m[0], candidates });
  }
  for (const m of text.matchAll(BARE)) {
    const [path, first] = [m[0], m[1]!];
    if (ROOT_FOLDERS.has(first) || PLACEHOLDER.test(path)) continue;
    const candidates: string[] = [];
    if (srcFolders.has(first)) candidates.push(join('src', path));
    if (inSandbox && sandboxFolders.has(first)) candidates.push(relative(root, join(sandboxSrc, path)));
    if (inSource && foldersOf(dirname(file)).includes(first)) candidates.push(relative(root, join(dirname(file), path)));
    if (candidates.length) out.push({ where: at(m.index), path, candidates });
  }
  return out;
}

function allReferences(): Reference[] {
  const refs: Reference[] = [];
  const docs = [join(root, 'README.md'), ...filesUnder(join(root, 'docs'), (n) => n.endsWith('.md'))];
  for (const file of docs) refs.push(...referencesIn(readFileSync(file, 'utf8'), file, 1, false));
  const sources = [...filesUnder(join(root, 'src'), (n) => n.endsWith('.ts')), ...filesUnder(sandboxSrc, (n) => n.endsWith('.ts'))];
  for (const file of sources) {
    for (const c of commentsOf(readFileSync(file, 'utf8'))) refs.push(...referencesIn(c.text, file, c.line, true));
  }
  return refs;
}

const exists = (path: string) => existsSync(join(root, path)) && statSync(join(root, path)).isFile();

t.test('the scanner finds comments, not strings, templates or regular expressions', async (t) => {
  const src = [
    "const url = 'http://example.com/src/nowhere.ts'; // names src/db/index.ts",
    'const re = /\\/\\/ not a comment/g; const half = a / b; // after a division',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal, scanned as such
    'const s = `a ${`nested ${x}`} // in a template`;',
    '/** A block',
    ' * naming db/channels.ts */',
    'return /["/]/.test(x); // after a regex with a quote',
  ].join('\n');
  t.same(
    commentsOf(src).map((c) => [c.line, c.text]),
    [
      [1, '// names src/db/index.ts'],
      [2, '// after a division'],
      [4, '/** A block\n * naming db/channels.ts */'],
      [6, '// after a regex with a quote'],
    ],
  );
});

t.test('what counts as a reference, and what it means', async (t) => {
  const file = join(root, 'src/console/routes.ts');
  const refs = referencesIn(
    'src/db/index.ts, db/channels.ts, jobs/fetch.ts, pages/layout.ts, packages/sandbox/src/api.ts, ' +
      'migrations/NNNN_name.sql, locales/webhook.en.yml, https://example.com/src/x.ts, @scope/src/y.ts, src/db/ (a folder)',
    file,
    7,
    true,
  );
  t.same(
    refs.map((r) => [r.path, r.candidates]),
    [
      ['src/db/index.ts', ['src/db/index.ts']],
      ['packages/sandbox/src/api.ts', ['packages/sandbox/src/api.ts']],
      ['db/channels.ts', ['src/db/channels.ts']],
      ['jobs/fetch.ts', ['src/jobs/fetch.ts']],
      ['pages/layout.ts', ['src/console/pages/layout.ts']],
    ],
  );
  t.equal(refs[0]!.where, 'src/console/routes.ts:7');
});

t.test('every path README.md, docs/ and source comments name exists', async (t) => {
  const refs = allReferences();
  t.ok(refs.length > 200, `found ${refs.length} references`);
  const missing = refs.filter((r) => !r.candidates.some(exists)).map((r) => `${r.where} ${r.path}`);
  t.same(missing, [], 'references to files that do not exist');
});

/** README.md's Guarantees table: each promise (bold, first column) and the files its last column names in backticks. */
function guaranteesTable(): { promise: string; checkedBy: string[] }[] {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.split(/^## /m).find((s) => s.startsWith('Guarantees\n')) ?? '';
  return section
    .split('\n')
    .filter((l) => l.startsWith('| **'))
    .map((row) => {
      const cells = row.replace(/^\|\s*|\s*\|\s*$/g, '').split(' | ');
      return {
        promise: /\*\*(.+?)\*\*/.exec(cells[0]!)?.[1] ?? cells[0]!,
        checkedBy: [...(cells[cells.length - 1] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!),
      };
    });
}

t.test("every promise of README's Guarantees table names the tests that check it, and each is a file that runs", async (t) => {
  const rows = guaranteesTable();
  t.ok(rows.length >= 10, `found ${rows.length} promises`);
  const problems: string[] = [];
  for (const { promise, checkedBy } of rows) {
    if (!checkedBy.length) problems.push(`${promise}: names no test`);
    for (const path of checkedBy) {
      // A test npm test runs (test/**/*.test.ts), or a benchmark run by hand (bench/).
      if (!/^test\/.+\.test\.ts$/.test(path) && !/^bench\/.+\.ts$/.test(path)) problems.push(`${promise}: ${path} is no test file`);
      else if (!exists(path)) problems.push(`${promise}: ${path} does not exist`);
    }
  }
  t.same(problems, [], 'Guarantees rows whose tests are missing');
});
