// Summarises a V8 CPU profile (node --cpu-prof, e.g. bench/accounts/run.ts --cpu-prof DIR): self time per
// function and per file, and total (inclusive) time per function, optionally over the last N seconds only, or
// up to M seconds before the end (--last 200 --until 125: an idle minute followed by a two-minute active phase).
//
//   node_modules/.bin/node bench/accounts/profile.ts FILE.cpuprofile [--last SECONDS] [--until SECONDS] [--top 30]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { last: { type: 'string' }, until: { type: 'string' }, top: { type: 'string', default: '30' } },
});
interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const prof = JSON.parse(readFileSync(positionals[0]!, 'utf8')) as {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
};
const top = Number(args.top);
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// Sample times (µs from the start); keep those in the window.
const times: number[] = [];
let t = prof.startTime;
for (const d of prof.timeDeltas) times.push((t += d));
const from = args.last ? prof.endTime - Number(args.last) * 1e6 : prof.startTime;
const to = args.until ? prof.endTime - Number(args.until) * 1e6 : prof.endTime;
const short = (url: string) => url.replace(/^file:\/\/.*?\/(src|node_modules|bench|packages)\//, '$1/');
const label = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

const self = new Map<string, number>();
const total = new Map<string, number>();
const files = new Map<string, number>();
let counted = 0;
for (let i = 0; i < prof.samples.length; i++) {
  if (times[i]! < from || times[i]! > to) continue;
  const dt = (prof.timeDeltas[i + 1] ?? 0) / 1000; // ms until the next sample
  const leaf = byId.get(prof.samples[i]!)!;
  counted += dt;
  self.set(label(leaf), (self.get(label(leaf)) ?? 0) + dt);
  const file = short(leaf.callFrame.url) || leaf.callFrame.functionName;
  files.set(file, (files.get(file) ?? 0) + dt);
  const seen = new Set<string>();
  for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
    const l = label(byId.get(id)!);
    if (seen.has(l)) continue;
    seen.add(l);
    total.set(l, (total.get(l) ?? 0) + dt);
  }
}
const idle = self.get('(idle) :0') ?? 0;
console.log(
  `window ${(counted / 1000).toFixed(1)} s, busy ${((counted - idle) / 1000).toFixed(1)} s (${((100 * (counted - idle)) / counted).toFixed(1)} %)`,
);
const show = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${(v / 1000).toFixed(1).padStart(8)} s ${((100 * v) / counted).toFixed(1).padStart(5)} %  ${k}`);
};
show('self time by function', self);
show('self time by file', files);
show('total time by function', total);
