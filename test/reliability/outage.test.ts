// A database outage kills no process. PostgreSQL is crashed four times under delivery load
// (`pg_ctl -m immediate`: every backend is cut in the middle of whatever it was doing) and started again on the
// same port, while a receiver, a worker (sweeps and pushed stock counts running) and a console (its API in use,
// a live-tail stream open) run as real processes. While it is down every /readyz answers 503; after each
// restart every process is the same one, alive, its /readyz answers 200 again, and the console's live tail
// listens again; every delivery acknowledged with a 2xx is stored and processed, and no error reached the
// process guard (src/guard.ts). A second test checks that guard itself.
import t from 'tap';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { enqueueOperation } from '../../src/push/enqueue.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { requestSweep } from '../../src/queue/contracts.ts';
import { adminUrl } from '../support/db.ts';
import { crashImmediate, ownPostgres, restartSamePort } from '../support/embedded.ts';
import { captureLogger } from '../support/log.ts';
import { runNode, type CliProcess } from '../support/processes.ts';
import { ackedProcessed, drainSandbox, startWorld, steadyLoad, until } from './harness.ts';

// OUTAGE_CRASHES: more crashes in one run, to hunt a rare failure by hand.
const CRASHES = Number(process.env.OUTAGE_CRASHES) || 4;
const OPERATOR_TOKEN = 'outage-test-operator-token-0123456789';
const { log } = captureLogger('silent');

/** Status of GET url (0: no answer at all, a process that stopped answering). */
async function probe(url: string, headers: Record<string, string> = {}): Promise<number> {
  try {
    const res = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** An open /api/tail event stream: the largest entry id it has delivered. */
function openTail(url: string): { lastId: () => number; close: () => void } {
  const abort = new AbortController();
  let lastId = 0;
  void (async () => {
    try {
      const res = await fetch(`${url}/api/tail`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` }, signal: abort.signal });
      const decoder = new TextDecoder();
      for await (const chunk of res.body!) {
        for (const m of decoder.decode(chunk, { stream: true }).matchAll(/^id: (\d+)$/gm)) lastId = Math.max(lastId, Number(m[1]));
      }
    } catch {
      /* closed */
    }
  })();
  return { lastId: () => lastId, close: () => abort.abort() };
}

t.test(
  `PostgreSQL crashed ${CRASHES} times under load: receiver, worker and console live, ready again, nothing acknowledged lost`,
  async (t) => {
    const t0 = Date.now();
    const phase = (what: string) => t.comment(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);
    // The processes hold the server's own address: a restart on the same port is what they see of an outage.
    const own = await ownPostgres(t, log, 'outage', { retry: { attempts: 20, delayMs: 250 } });
    const { server: pg, url, db } = own;
    const boss = await startBoss(url, log, { supervise: false, schedule: false, max: 2 });
    t.teardown(() => stopBoss(boss, false));

    const world = await startWorld(t, { database: { url, db } });
    const [shop] = world.shops;
    const receiver = await world.spawn('receiver');
    world.setReceivers([receiver]);
    const roles: CliProcess[] = [receiver, await world.spawn('worker'), await world.spawn('start', { ROLES: 'console', OPERATOR_TOKEN })];
    const consoleRole = roles[2]!;
    const keep = process.env.OUTAGE_OUTPUT_DIR;
    if (keep) t.teardown(() => Promise.all(roles.map((p) => writeFile(join(keep, `${p.name}.log`), p.output()))));
    const alive = () => {
      const dead = roles.filter((p) => p.child.exitCode !== null || p.child.signalCode !== null);
      return dead.length
        ? dead.map((p) => `${p.name} exited (${p.child.exitCode ?? p.child.signalCode}):\n${p.output().slice(-3000)}`).join('\n')
        : '';
    };
    /** Polls until every role's /readyz answers `status`; a role that exits fails at once. */
    const readyz = (status: number, within: number) =>
      until(
        `/readyz ${status} on every role`,
        async () => {
          const dead = alive();
          if (dead) throw new Error(dead);
          const seen = await Promise.all(roles.map((p) => probe(`${p.url}/readyz`)));
          const waiting = roles.filter((_, i) => seen[i] !== status);
          return waiting.length ? waiting.map((p) => `${p.name} ${seen[roles.indexOf(p)]}`).join(', ') : true;
        },
        within,
        200,
      );
    await readyz(200, 30_000);
    phase('receiver, worker and console ready');
    // A first sweep, so stock counts pushed through the crashes find their SKUs in the mirror.
    await world.reconcile();
    const skus = (await shop!.snapshot('variants')).filter(
      (v) => v.sku && v.status === 'active' && !v.composite && v.manage_stock !== false,
    );
    const location = (await shop!.snapshot('locations'))[0]!.id;
    let counts = 0;
    const pushCount = async () => {
      const v = skus[counts % skus.length]!;
      counts++;
      await enqueueOperation({ db, boss }, 'stock-count', {
        counts: [{ sku: v.sku, location_id: location, quantity: String(100 + counts) }],
        notes: `outage-${counts}`,
      });
    };
    // The console's pages and JSON API are used all along, the database there or not.
    let browsing = true;
    const browse = (async () => {
      const auth = { authorization: `Bearer ${OPERATOR_TOKEN}` };
      for (let i = 0; browsing; i++) {
        await probe(`${consoleRole.url}${['/api/overview', '/api/queues', '/api/logs?limit=20', '/api/deliveries', '/'][i % 5]}`, auth);
        await new Promise((r) => setTimeout(r, 150));
      }
    })();
    t.teardown(() => {
      browsing = false;
      return browse;
    });

    const tail = openTail(consoleRole.url);
    t.teardown(() => tail.close());
    const stopLoad = steadyLoad(t, shop!, 10);
    const ackedAtLeast = (n: number, what: string) =>
      until(what, () => world.proxy.acked.size >= n || `${world.proxy.acked.size} acknowledged`, 30_000, 100);
    await ackedAtLeast(20, 'deliveries flowing');

    const listening = async () =>
      (
        await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE application_name = 'commerce-sync tail' AND query = 'LISTEN sync_log'`.execute(db)
      ).rows[0]!.n;

    for (let crash = 1; crash <= CRASHES; crash++) {
      // A sweep in flight holds a connection for its advisory lock across the crash.
      await requestSweep(boss, shop!.connection.id, crash % 2 === 0);
      await pushCount();
      await pushCount();
      await new Promise((r) => setTimeout(r, 300 + ((crash * 337) % 1200)));
      await crashImmediate(pg);
      phase(`crash ${crash}: PostgreSQL stopped (-m immediate)`);
      // While it is down every role says so, and stays alive. Outages of different lengths: a restart at
      // once meets clients reconnecting during crash recovery, a longer one their backoff.
      await readyz(503, 20_000);
      await new Promise((r) => setTimeout(r, [200, 1500, 4000, 800][crash % 4]));
      await restartSamePort(pg);
      phase(`crash ${crash}: PostgreSQL started again`);
      await readyz(200, 30_000);
      t.equal(alive(), '', `crash ${crash}: receiver, worker and console are the same processes, alive and ready`);
      await ackedAtLeast(world.proxy.acked.size + 10, `crash ${crash}: deliveries acknowledged after the restart`);
      await until(
        `crash ${crash}: the console's live tail listening again`,
        async () => (await listening()) === 1 || 'not listening',
        20_000,
        200,
      );
      phase(`crash ${crash}: ready, deliveries flowing, live tail listening`);
    }

    const beforeEnd = (await sql<{ id: number }>`SELECT coalesce(max(id), 0)::int AS id FROM sync_log`.execute(db)).rows[0]!.id;
    await stopLoad();
    browsing = false;
    await browse;
    await drainSandbox(shop!);
    await ackedProcessed(db, world.proxy.acked, { everyMs: 300 });
    t.pass(
      `${world.proxy.acked.size} deliveries acknowledged, all stored and processed; answers seen: ${JSON.stringify(Object.fromEntries(world.proxy.statuses))}`,
    );
    await until(
      'the live-tail stream to carry entries written after the last restart',
      () => tail.lastId() > beforeEnd || `last id ${tail.lastId()}`,
      20_000,
      200,
    );
    t.equal(alive(), '', 'every process still alive at the end');
    for (const p of roles) {
      t.notMatch(p.output(), /unhandled rejection|uncaught exception/i, `${p.name}: nothing escaped to the process guard (src/guard.ts)`);
      t.equal(await p.stop(), 0, `${p.name} stops cleanly`);
    }
    phase('done');
  },
);

/** Runs fixtures/escaped-error.ts in `mode`: its exit code and output. */
async function escaped(mode: string): Promise<{ code: number | null; out: string }> {
  const script = fileURLToPath(new URL('./fixtures/escaped-error.ts', import.meta.url));
  const { code, both: out } = await runNode([script, mode], { PATH: process.env.PATH, DATABASE_URL: adminUrl() });
  return { code, out };
}

t.test('an error of a lost connection that escapes every handler ends no long-running process; any other error still does', async (t) => {
  const bare = await escaped('bare');
  t.not(bare.code, 0, "without the guard, Node's default ends the process");
  t.notMatch(bare.out, /alive/, 'it did not get to the end');

  const guarded = await escaped('guarded');
  t.equal(guarded.code, 0, 'with the guard of start, receiver and worker, the process lives', { output: guarded.out.slice(-2000) });
  t.match(guarded.out, /alive/, 'and gets to the end');
  t.match(guarded.out, /uncaught exception from a lost database connection/, "the unlistened 'error' event is logged as the bug it is");
  t.match(guarded.out, /not queryable.*unhandled rejection from a lost database connection/, 'so is the rejection nobody awaited');
  t.notMatch(guarded.out, /"password"|postgres:\/\//, 'the log names no connection string or password');

  const bug = await escaped('bug');
  t.equal(bug.code, 1, 'a rejection that is not about the database still ends the process, with status 1');
  t.match(bug.out, /"level":60.*a bug that is not about the database/, 'logged as fatal, with its message');
  t.notMatch(bug.out, /alive/, 'it did not carry on');
});
