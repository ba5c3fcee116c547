// The layering lint (`npm run lint`): every import in src/, type-only imports included, goes down the layers or
// sideways between features through a named function, never up, and the imports make no circle. The layers and the
// exceptions are in layers.json beside this file; docs/layers.md says why each is where it is.
//   node lint/layers.ts [--root DIR]   exit 1 and one line per violation; --counts prints the counts only
import { readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseCircular, parseDependencyTree } from 'dpdm';

interface Rules {
  /** Top to bottom: a file belongs to the first layer one of whose patterns it matches. */
  layers: { name: string; paths: string[] }[];
  /** Files a feature may not import from another feature (its routes, its command). */
  private: string[];
  /** Features: the folders whose files are the middle layer's rooms. */
  features: string[];
  /** Imports allowed upward anyway, each with why: "from -> to": "why". */
  exceptions: Record<string, string>;
}

/** A path pattern: `dir/` a folder and all below it, `*` one path segment's characters, otherwise the file. */
const matches = (file: string, pattern: string) =>
  pattern.endsWith('/')
    ? file.startsWith(pattern)
    : new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`).test(file);

export function layerOf(rules: Rules, file: string): number {
  return rules.layers.findIndex((l) => l.paths.some((p) => matches(file, p)));
}

const featureOf = (rules: Rules, file: string) => rules.features.find((f) => file.startsWith(f));

export interface Violation {
  from: string;
  to: string;
  why: string;
}

/** The violations of `rules` in the import graph `edges` (paths relative to the root). */
export function check(rules: Rules, edges: [string, string][]): Violation[] {
  const out: Violation[] = [];
  for (const [from, to] of edges) {
    if (rules.exceptions[`${from} -> ${to}`]) continue;
    const a = layerOf(rules, from);
    const b = layerOf(rules, to);
    if (a < 0) out.push({ from, to, why: `${from} is in no layer (lint/layers.json)` });
    else if (b < 0) out.push({ from, to, why: `${to} is in no layer (lint/layers.json)` });
    else if (b < a) out.push({ from, to, why: `imports up: ${rules.layers[a]!.name} -> ${rules.layers[b]!.name}` });
    const fa = featureOf(rules, from);
    const fb = featureOf(rules, to);
    if (fa && fb && fa !== fb && rules.private.some((p) => matches(to, p)))
      out.push({ from, to, why: `a feature imports another feature's ${to.slice(fb.length)}` });
  }
  return out;
}

/** The import graph of src/ (type-only imports included), as root-relative [from, to] pairs, and its circles. */
export async function graph(root: string): Promise<{ edges: [string, string][]; circles: string[][] }> {
  const cwd = process.cwd();
  process.chdir(root);
  try {
    const tree = await parseDependencyTree(['src/**/*.ts'], { context: root, transform: false, skipDynamicImports: false });
    const edges: [string, string][] = [];
    for (const [file, deps] of Object.entries(tree))
      for (const d of deps ?? []) if (d.id?.startsWith('src/')) edges.push([relative(root, resolve(root, file)), d.id]);
    return { edges, circles: parseCircular(tree) };
  } finally {
    process.chdir(cwd);
  }
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const root = resolve(args.includes('--root') ? args[args.indexOf('--root') + 1]! : '.');
  const rules = JSON.parse(readFileSync(join(import.meta.dirname, 'layers.json'), 'utf8')) as Rules;
  const { edges, circles } = await graph(root);
  const violations = check(rules, edges);
  if (args.includes('--counts')) {
    console.log(`${edges.length} imports, ${violations.length} against the layers, ${circles.length} circles`);
  } else {
    for (const v of violations) console.log(`${v.from} -> ${v.to}: ${v.why}`);
    for (const c of circles) console.log(`circle: ${c.join(' -> ')}`);
  }
  process.exit(violations.length || circles.length ? 1 : 0);
}
