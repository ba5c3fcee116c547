// The OpenAPI document as a client generator reads it: Redocly's linter (`redocly lint`, its recommended rules)
// on the live GET /api/openapi.json finds no error. It runs offline: no telemetry, no update check, no remote
// config (the rules are the CLI's own), so a test run never reaches the network.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { consoleServer } from '../console/harness.ts';

const TOKEN = 'op-secret-token-for-the-openapi-lint';
const cli = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js');

interface Problem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer?: string }[];
}

/** Runs `redocly lint` (recommended rules) on a document; its problems. */
async function lint(doc: unknown): Promise<Problem[]> {
  const dir = await mkdtemp(join(tmpdir(), 'openapi-lint-'));
  try {
    const file = join(dir, 'openapi.json');
    await writeFile(file, JSON.stringify(doc));
    // The config names the rules and turns telemetry off (the environment says it twice, and stops the update check).
    await writeFile(join(dir, 'redocly.yaml'), 'extends:\n  - recommended\ntelemetry: off\n');
    const child = spawn(
      process.execPath,
      [cli, 'lint', file, '--config', join(dir, 'redocly.yaml'), '--format', 'json', '--max-problems', '1000'],
      {
        cwd: dir,
        env: {
          PATH: process.env.PATH,
          HOME: dir,
          REDOCLY_TELEMETRY: 'off',
          REDOCLY_SUPPRESS_NOTIFICATIONS: 'true',
          NODE_ENV: 'test',
          CI: 'true',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => (out += b));
    child.stderr.on('data', (b: Buffer) => (err += b));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    const start = out.indexOf('{');
    if (start < 0) throw new Error(`redocly lint gave no report (exit ${code}): ${err}`);
    return (JSON.parse(out.slice(start)) as { problems: Problem[] }).problems;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const line = (p: Problem) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`;

t.test('redocly lint (recommended) finds no error in GET /api/openapi.json', async (t) => {
  const { base } = await consoleServer(t, { token: TOKEN });
  const res = await fetch(`${base}/api/openapi.json`, { headers: { authorization: `Bearer ${TOKEN}` } });
  t.equal(res.status, 200);
  const problems = await lint(await res.json());
  t.comment(problems.map(line).join('\n') || 'no problems');
  t.same(problems.filter((p) => p.severity === 'error').map(line), [], 'no error');
});

t.test('and the test would see one', async (t) => {
  const problems = await lint({
    openapi: '3.1.0',
    info: { title: 'two identical paths', version: '1' },
    paths: {
      '/things/{kind}': { post: { operationId: 'a', responses: { 202: { description: 'queued' } } } },
      '/things/{id}': { get: { operationId: 'b', responses: { 200: { description: 'one' } } } },
    },
  });
  t.ok(
    problems.some((p) => p.severity === 'error' && p.ruleId === 'no-identical-paths'),
    'identical paths are an error',
  );
});
