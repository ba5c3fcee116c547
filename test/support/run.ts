// `npm test`: one PostgreSQL for the whole run (embedded, or DATABASE_URL when set), a template database
// migrated once (our migrations and pg-boss's schema), then tap. Each test file clones the template
// (test/support/db.ts). Prints a closing `N passed, N failed` line counted from tap's results.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, statSync, utimesSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Parser } from 'tap-parser';
import { startEmbedded } from '../../src/db/embedded.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/log.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';

const log = createLogger(process.env.TEST_LOG_LEVEL ?? 'warn', { destination: process.stderr, pretty: false });
const args = process.argv.slice(2);

let adminUrl: string;
let stopDb = async () => {};
let dataDir: string | undefined;
if (process.env.DATABASE_URL) {
  adminUrl = process.env.DATABASE_URL;
} else {
  dataDir = await mkdtemp(join(tmpdir(), 'commerce-sync-test-'));
  const embedded = await startEmbedded(dataDir, log, 'postgres');
  adminUrl = embedded.adminUrl;
  stopDb = embedded.stop;
}

const template = `cs_template_${process.pid}`;
const withDb = (name: string) => {
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
};
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`DROP DATABASE IF EXISTS ${template}`);
await admin.query(`CREATE DATABASE ${template}`);
await migrate(withDb(template));
const boss = await startBoss(withDb(template), log, { supervise: false, schedule: false, max: 2 });
await stopBoss(boss, false);

// Raw TAP per test file goes to a folder of this run's own, counted at the end.
const resultsDir = join(dataDir ?? tmpdir(), `tap-results-${process.pid}`);
const tapBin = join('node_modules', 'tap', 'dist', 'esm', 'run.mjs');
// tap generates its plugin set (ours drops @tapjs/typescript: Node runs .ts itself) on the run AFTER a
// config change, so a fresh clone's first run would use the default set: build it first when stale.
if (!existsSync('.tap/plugins') || statSync('package.json').mtimeMs > statSync('.tap/plugins').mtimeMs) {
  spawnSync(process.execPath, [tapBin, 'build'], { stdio: 'ignore' });
  // The build may leave the folder's time as it was: mark it built, or every run (several at once) builds again.
  if (existsSync('.tap/plugins')) utimesSync('.tap/plugins', new Date(), new Date());
}
const code = await new Promise<number>((resolve) => {
  const child = spawn(process.execPath, [tapBin, `--output-dir=${resultsDir}`, ...args], {
    stdio: 'inherit',
    env: { ...process.env, TEST_ADMIN_URL: adminUrl, TEST_TEMPLATE_DB: template },
  });
  const forward = (sig: NodeJS.Signals) => child.kill(sig);
  process.on('SIGINT', forward).on('SIGTERM', forward);
  child.on('close', (c) => resolve(c ?? 1));
});

let passed = 0,
  failed = 0,
  skipped = 0;
const took: [number, string][] = [];
for (const file of await readdir(resultsDir, { recursive: true }).catch(() => [] as string[])) {
  if (!file.endsWith('.tap')) continue;
  const parser = new Parser();
  const done = new Promise<void>((r) =>
    parser.on('complete', (res) => {
      took.push([res.time ?? 0, file.replace(/\.tap$/, '')]);
      passed += res.pass - res.skip - res.todo;
      skipped += res.skip + res.todo;
      // A file that crashed before running a test has no failing point of its own: count it as one failure.
      failed += res.fail || (res.count === 0 || !res.ok ? 1 : 0);
      r();
    }),
  );
  parser.end(await readFile(join(resultsDir, file), 'utf8'));
  await done;
}

// Where the time goes: the slowest files (tap runs `jobs` files at once, package.json; the `serial` folders alone).
if (took.length > 20) {
  console.log('slowest test files:');
  for (const [ms, file] of took.sort((a, b) => b[0] - a[0]).slice(0, 20)) console.log(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${file}`);
}

await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => {});
await admin.end();
await stopDb();
await rm(resultsDir, { recursive: true, force: true });
if (dataDir) await rm(dataDir, { recursive: true, force: true });
if (code !== 0 && failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(code !== 0 ? code : failed > 0 ? 1 : 0);
