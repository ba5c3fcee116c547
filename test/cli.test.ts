import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  spawnSync(process.execPath, ['src/cli.ts', ...args], { encoding: 'utf8', env: { ...process.env, LOG_LEVEL: 'silent', ...env } });

t.test('--help lists the commands, one line each', async (t) => {
  const r = cli(['--help']);
  t.equal(r.status, 0);
  t.match(r.stdout, /Usage: commerce-sync <command>/);
  t.match(r.stdout, /\n {2}start +run receiver/);
  t.match(r.stdout, /\n {2}migrate +apply database migrations/);
});

t.test("a command's --help shows its options", async (t) => {
  const r = cli(['migrate', '--help']);
  t.equal(r.status, 0);
  t.match(r.stdout, /Usage: commerce-sync migrate/);
  t.match(r.stdout, /-h, --help/);
});

t.test('unknown command or option: help and exit 2', async (t) => {
  const a = cli(['frobnicate']);
  t.equal(a.status, 2);
  t.match(a.stderr, /unknown command "frobnicate"/);
  t.match(a.stderr, /Commands:/);
  const b = cli(['migrate', '--bogus']);
  t.equal(b.status, 2);
  t.match(b.stderr, /Unknown option '--bogus'/);
  t.match(b.stderr, /Usage: commerce-sync migrate/);
  const c = cli([]);
  t.equal(c.status, 2);
});

t.test('a bad config value stops with one line per problem and exit 2', async (t) => {
  const r = cli(['migrate'], { PORT: 'eighty', LOG_LEVEL: 'chatty' });
  t.equal(r.status, 2);
  const lines = r.stderr.trim().split('\n');
  t.same(
    lines,
    [
      'config: LOG_LEVEL = "chatty" is not valid: expected one of fatal, error, warn, info, debug, trace, silent',
      'config: PORT = "eighty" is not valid: expected an integer from 0 to 65535',
    ].sort((a, b) => lines.indexOf(a) - lines.indexOf(b)),
  );
});

t.test('migrate against DATABASE_URL applies the schema', async (t) => {
  const { testDatabase } = await import('./support/db.ts');
  const { url } = await testDatabase(t);
  const r = cli(['migrate'], { DATABASE_URL: url });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /schema is up to date/);
});

t.test('migrate waits for a database that is away, then applies the schema', async (t) => {
  const { testDatabase } = await import('./support/db.ts');
  const { startTcpProxy } = await import('./support/tcp-proxy.ts');
  const { until } = await import('./support/processes.ts');
  const { url } = await testDatabase(t);
  const tcp = await startTcpProxy(t, { host: new URL(url).hostname, port: Number(new URL(url).port) });
  await tcp.close();
  const child = spawn(process.execPath, ['src/cli.ts', 'migrate'], {
    env: { ...process.env, LOG_LEVEL: 'warn', DATABASE_URL: tcp.wrap(url) },
  });
  let output = '';
  for (const s of [child.stdout, child.stderr]) s.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  await until('migrate waiting', () => /waiting for PostgreSQL at 127\.0\.0\.1:\d+/.test(output) || output, 10_000);
  await tcp.reopen();
  t.equal(await exited, 0, output);
  t.match(output, /schema is up to date/);
});

t.test('a port another program holds: one line naming the setting that moves it', async (t) => {
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => taken.close(() => r())));
  const port = (taken.address() as { port: number }).port;
  const dataDir = mkdtempSync(join(tmpdir(), 'cs-port-'));
  const r = cli(['start'], { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir });
  t.equal(r.status, 1);
  t.match(
    r.stderr,
    new RegExp(
      `PORT ${port} on 127\\.0\\.0\\.1: another program listens there; stop it, or set PORT to another port \\(PORT=0 picks a free one\\)`,
    ),
  );
  t.notMatch(r.stderr, /EADDRINUSE|\n\s+at /, 'no stack trace');
});
