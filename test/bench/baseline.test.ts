// bench/accounts --baseline reads the figures of two runs from what each printed: the lines this tree prints parse
// back to the figures they were made of, an older commit's lines (13cff49's wording) parse too, and the comparison
// gives this tree's figures as ratios to the baseline's.
import t from 'tap';
import { compare, HEAD, parseRun, rowLine, statementsLine } from '../../bench/accounts/baseline.ts';

const cells = (over: Record<string, string>) => HEAD.map((h) => over[h] ?? '0');

t.test("this tree's lines parse back to their figures", async (t) => {
  const output = [
    'accounts: 200 connections, 0.05 operations/s each',
    statementsLine('200 connections, 1 worker, idle', 'connection-minute', { execMs: 0.5, planMs: 0.1, statements: 40, calls: 3.3 }),
    statementsLine('200 connections, 1 worker', 'operation', { execMs: 9.5, planMs: 1.25, statements: 120, calls: 30.5 }),
    '    12.000  0.500   1.20   5.100  WITH w0 AS (DELETE FROM pending_fetches p USING jsonb_to_recordset($1::jsonb)',
    rowLine(
      '200 connections, 1 worker',
      cells({ 'pg ms/op': '9.6', 'worker ms/op': '11.4', 'idle % per conn': '0.0210', 'p95 all s': '0.9' }),
    ),
  ].join('\n');
  const [m, ...more] = parseRun(output);
  t.equal(more.length, 0, 'one measure');
  t.equal(m!.key, '200 connections, 1 worker');
  t.equal(m!.statementsPerOp, 30.5);
  t.equal(m!.execMsPerOp, 9.5);
  t.equal(m!.planMsPerOp, 1.25);
  t.equal(m!.idleStatements, 3.3, 'the idle phase, per connection-minute, as printed (one decimal)');
  t.equal(m!.row.get('pg ms/op'), '9.6');
  t.equal(m!.row.get('idle % per conn'), '0.0210');
});

t.test("an older commit's wording, and the ratios", async (t) => {
  const old = [
    '  200 connections, 1 worker: PostgreSQL execution + planning time per operation 27.50 + 6.70 ms over 312 statements, 74.1 calls per operation; the largest (execution ms/op, planning ms/op, calls/op, mean execution ms, statement):',
    rowLine(
      '200 connections, 1 worker',
      cells({ 'pg ms/op': '28.6', 'worker ms/op': '23.1', 'idle % per conn': '0.0476', 'p95 all s': '0.9' }),
    ),
  ].join('\n');
  const now = [
    statementsLine('200 connections, 1 worker', 'operation', { execMs: 8, planMs: 1, statements: 100, calls: 37.1 }),
    rowLine(
      '200 connections, 1 worker',
      cells({ 'pg ms/op': '14.3', 'worker ms/op': '11.55', 'idle % per conn': '0.0095', 'p95 all s': '-' }),
    ),
  ].join('\n');
  const then = parseRun(old);
  t.equal(then[0]!.statementsPerOp, 74.1);
  t.equal(then[0]!.idleStatements, undefined, 'an older run printed no idle statements');
  const table = compare({ label: '13cff49', runs: then }, { label: 'abc1234 (this tree)', runs: parseRun(now) });
  const lineOf = (name: string) => table.split('\n').find((l) => l.trim().startsWith(name))!;
  t.match(lineOf('statements per operation'), /74\.1\s+37\.1\s+0\.50$/);
  t.match(lineOf('PostgreSQL CPU ms per operation'), /28\.6\s+14\.3\s+0\.50$/);
  t.match(lineOf('idle % of a core per connection'), /0\.0476\s+0\.0095\s+0\.20$/);
  t.match(lineOf('p95 over all moves'), /0\.9\s+-\s+-$/, 'a figure one run lacks has no ratio');
  t.match(table, /200 connections, 1 worker: 13cff49 \| abc1234 \(this tree\) \| ratio/);
});
