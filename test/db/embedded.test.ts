import t from 'tap';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded } from '../../src/db/embedded.ts';
import { captureLogger } from '../support/log.ts';

const query = async (url: string, sql: string) => {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
};

t.test('starts, keeps its data across a restart, and stops', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cs-embedded-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { log } = captureLogger();
  const first = await startEmbedded(dir, log);
  await query(first.url, `CREATE TABLE kept (v text); INSERT INTO kept VALUES ('still here')`);
  await first.stop();
  t.notOk(existsSync(join(first.dataDir, 'postmaster.pid')), 'server stopped');
  await t.rejects(query(first.url, 'SELECT 1'), 'no longer answers');

  const second = await startEmbedded(dir, log);
  t.same(await query(second.url, 'SELECT v FROM kept'), [{ v: 'still here' }]);
  await second.stop();
});

t.test('a server left running by a killed owner is stopped and restarted', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cs-embedded-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { log, text } = captureLogger();
  const first = await startEmbedded(dir, log);
  await query(first.url, `CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)`);
  // Pretend the owning process died without stopping it (kill -9).
  const { writeFile } = await import('node:fs/promises');
  await writeFile(join(dir, 'postgres.owner'), '999999\n');
  const second = await startEmbedded(dir, log);
  t.match(text(), /left running by an earlier process/);
  t.not(second.port, first.port);
  t.same(await query(second.url, 'SELECT v FROM kept'), [{ v: 7 }]);
  await second.stop();
});

t.test('a second process attaches to the running server and leaves it running', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cs-embedded-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { log } = captureLogger();
  const owner = await startEmbedded(dir, log);
  const { writeFile } = await import('node:fs/promises');
  // The owner is another live process (our parent stands in for it).
  await writeFile(join(dir, 'postgres.owner'), `${process.ppid}\n`);
  const guest = await startEmbedded(dir, log);
  t.equal(guest.port, owner.port);
  await guest.stop();
  t.same(await query(owner.url, 'SELECT 1 AS one'), [{ one: 1 }], 'still running after the guest stops');
  await owner.stop();
});

t.test('a lock left by a process killed while starting the server is taken over', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cs-embedded-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { writeFile } = await import('node:fs/promises');
  await writeFile(join(dir, 'postgres.lock'), '999999 12345\n');
  const { log, text } = captureLogger();
  const db = await startEmbedded(dir, log);
  t.match(text(), /lock of a process that is gone/);
  t.same(await query(db.url, 'SELECT 1 AS one'), [{ one: 1 }]);
  t.notOk(existsSync(join(dir, 'postgres.lock')), 'released once started');
  await db.stop();
  t.notOk(existsSync(join(dir, 'postgres.lock')), 'and after stopping');
});

t.test('a start waits while a live process holds the lock (it is starting the server), then goes on', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cs-embedded-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { unlink, writeFile } = await import('node:fs/promises');
  // Our parent stands in for another live process starting the server.
  await writeFile(join(dir, 'postgres.lock'), `${process.ppid}\n`);
  const { log, text } = captureLogger();
  let settled = false;
  const starting = startEmbedded(dir, log).finally(() => {
    settled = true;
  });
  await new Promise((r) => setTimeout(r, 1500));
  t.notOk(settled, 'still waiting');
  t.match(text(), /starting or stopping the embedded PostgreSQL: waiting for it/);
  t.notOk(existsSync(join(dir, 'postgres', 'postmaster.pid')), 'started nothing meanwhile');
  await unlink(join(dir, 'postgres.lock'));
  const db = await starting;
  t.same(await query(db.url, 'SELECT 1 AS one'), [{ one: 1 }]);
  await db.stop();
});

t.test('the password file given to initdb is readable by no other user while it exists', async (t) => {
  const { lstatSync, readdirSync } = await import('node:fs');
  const dir = await mkdtemp(join(tmpdir(), 'cs-embedded-'));
  const tmp = await mkdtemp(join(tmpdir(), 'cs-tmpdir-'));
  t.teardown(() => Promise.all([rm(dir, { recursive: true, force: true }), rm(tmp, { recursive: true, force: true })]));
  // os.tmpdir() reads TMPDIR on each call: the launcher's temporary files land where this test can watch them,
  // in a folder as open as /tmp itself (as root, initdb runs as the postgres user and must get in).
  const { chmod } = await import('node:fs/promises');
  await chmod(tmp, 0o1777);
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  const seen = new Map<string, number>();
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      for (const name of readdirSync(tmp, { recursive: true }) as string[]) {
        try {
          seen.set(name, lstatSync(join(tmp, name)).mode);
        } catch {
          /* gone between the listing and the stat */
        }
      }
      await new Promise((r) => setTimeout(r, 1));
    }
  })();
  const { log } = captureLogger();
  let db: Awaited<ReturnType<typeof startEmbedded>>;
  try {
    db = await startEmbedded(dir, log);
  } finally {
    watching = false;
    await watcher;
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
  await db.stop();
  t.ok(seen.size > 0, `initdb's password file was seen (${[...seen.keys()].join(', ')})`);
  for (const [name, mode] of seen) t.equal(mode & 0o077, 0, `${name} (mode ${(mode & 0o777).toString(8)}): nothing for group or others`);
  t.same(readdirSync(tmp), [], 'and it is gone after');
});
