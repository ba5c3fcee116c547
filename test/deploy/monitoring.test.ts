// deploy/prometheus/alerts.yml and deploy/grafana/commerce-sync.json name only metrics commerce-sync exports: every
// metric in every expression is served by /metrics (the console's, with the gauges refreshed), and the rules cover
// every condition the evaluator alerts on.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { checks } from '../../src/alerts/conditions.ts';
import { consoleServer } from '../console/harness.ts';

const root = new URL('../../', import.meta.url);
const rules = parse(readFileSync(new URL('deploy/prometheus/alerts.yml', root), 'utf8')) as {
  groups: {
    name: string;
    rules: { alert: string; expr: string; labels?: Record<string, string>; annotations?: Record<string, string> }[];
  }[];
};
const dashboard = JSON.parse(readFileSync(new URL('deploy/grafana/commerce-sync.json', root), 'utf8')) as {
  panels: { title: string; targets: { expr: string }[] }[];
};

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'inf',
  'nan',
]);

/** The metric names a PromQL expression reads: identifiers that are neither functions, keywords nor label names. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""') // strings
    .replace(/\{[^}]*\}/g, '{}') // label matchers
    .replace(/\[[^\]]*\]/g, '[]') // ranges
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ''); // grouping label lists
  const names: string[] = [];
  for (const m of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const after = bare.slice(m.index! + m[0].length).trimStart();
    if (after.startsWith('(')) continue; // a function
    if (KEYWORDS.has(m[0].toLowerCase())) continue;
    names.push(m[0]);
  }
  return names;
}

t.test('the PromQL reader finds metric names and nothing else', async (t) => {
  t.same(metricNames('sum by (connection) (increase(a_total{reason="x y", q=~"b|c"}[5m])) > 3'), ['a_total']);
  t.same(metricNames('x > 120 and on (connection) (y > 0 or z < 30)'), ['x', 'y', 'z']);
  t.same(metricNames('rate(h_bucket[1m]) * 300'), ['h_bucket']);
});

t.test('every metric the alerting rules and the dashboard name is exported at /metrics', async (t) => {
  const exprs = [
    ...rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `alerts.yml ${r.alert}`, expr: r.expr }))),
    ...dashboard.panels.flatMap((p) => p.targets.map((x) => ({ where: `dashboard "${p.title}"`, expr: x.expr }))),
  ];
  t.ok(exprs.length >= 20, `${exprs.length} expressions`);
  const { base } = await consoleServer(t, { token: 'monitoring-test-operator-token-0123' });
  const res = await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer monitoring-test-operator-token-0123' } });
  t.equal(res.status, 200);
  const text = await res.text();
  const exported = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    exported.add(m[1]!);
    if (m[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) exported.add(`${m[1]}${s}`);
    if (m[2] === 'summary') for (const s of ['_sum', '_count']) exported.add(`${m[1]}${s}`);
  }
  const named = new Set<string>();
  for (const { where, expr } of exprs) {
    const names = metricNames(expr);
    t.ok(names.length > 0, `${where} reads a metric`);
    for (const n of names) {
      named.add(n);
      t.ok(exported.has(n), `${where}: ${n} is exported`);
    }
  }
  t.ok(named.size >= 12, `${named.size} metrics named: ${[...named].sort().join(', ')}`);
});

t.test('the rules cover every condition commerce-sync alerts on, each with a severity and a description', async (t) => {
  const covered = new Set(rules.groups.flatMap((g) => g.rules.map((r) => r.labels?.condition)));
  for (const condition of checks.flatMap((c) => c.conditions)) t.ok(covered.has(condition), `a rule for ${condition}`);
  for (const r of rules.groups.flatMap((g) => g.rules)) {
    t.ok(r.annotations?.summary && r.annotations.description, `${r.alert} says what and what to do`);
    if (r.labels?.condition !== 'any') t.match(r.labels?.severity, /^(critical|warning)$/, `${r.alert} has a severity`);
  }
});
