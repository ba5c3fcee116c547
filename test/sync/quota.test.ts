// One quota, many spenders: the service's rate limit belongs to the application and account together
// (real-service-notes section 7), so a script or a second deployment with another token of the same application
// spends the window commerce-sync spends. Here such a script sets out to spend 80% of every window, one request at
// a time to the end of its share, while the merchant works and the workers drain deliveries and sweep: the two
// race for the end of every window. commerce-sync follows the service's Remaining and Reset: at most one 429 a
// window reaches it, and after one nothing of ours is sent until the reset; no job fails, the mirror's stock ends
// equal to the sandbox's, and sweeps never take the reserve kept for stock reads, whoever spent the window.
// A recording proxy between the workers and the sandbox counts our requests apart from the script's.
import t from 'tap';
import { sql } from 'kysely';
import { requestSweep } from '../../src/queue/contracts.ts';
import { canon } from '../support/mirror.ts';
import { perWindow, recordingProxy, startSpender } from '../support/spender.ts';
import { startLoop } from './harness.ts';
import { maintenanceQueue } from '../../src/queue/contracts.ts';

const LIMIT = 100;
const TIME_SCALE = 60; // the 300-second window lasts 5 real seconds
const WINDOW_MS = 300_000 / TIME_SCALE;
const RESERVE = 10; // BUDGET_RESERVE's 30 of 300, for a window of 100
const WINDOWS = 8;

/** A request of ours: a sweep's listing (neither ids nor a parent's id), or a read for deliveries. */
const isSweep = (path: string) => {
  const q = new URLSearchParams(path.split('?')[1] ?? '');
  return !q.has('ids') && ![...q.keys()].some((k) => k.endsWith('_id'));
};

t.test('a script spending 80% of every window: at most one 429 a window to us, then a wait for the reset, nothing lost', async (t) => {
  const loop = await startLoop(t, {
    sandbox: { variants: 40, timeScale: TIME_SCALE, rateLimit: LIMIT },
    config: { BUDGET_RESERVE: RESERVE },
  });
  // Every request of ours goes through the recorder: the workers make their clients at their first job, after this.
  const proxy = await recordingProxy(t, loop.sandbox.url);
  await sql`UPDATE connections SET base_url = ${proxy.url} WHERE id = ${loop.connection.id}`.execute(loop.tdb.db);
  const { token } = await loop.admin('POST', 'tokens', { application_id: 1 });
  // Its 80 requests spread over the first 60% of each window: it is still spending when the window runs out.
  const spender = startSpender(loop.sandbox.url, token, { limit: LIMIT, windowMs: WINDOW_MS, share: 0.8, mode: 'steady', spread: 0.6 });
  t.teardown(() => spender.stop());

  await requestSweep(loop.bosses[0]!, loop.connection.id, true);
  const started = Date.now();
  let swept = started;
  while (Date.now() - started < WINDOWS * WINDOW_MS) {
    await loop.admin('POST', 'activity', { operations: 2 });
    // An incremental sweep every third window: sweeps compete for what the script leaves too.
    if (Date.now() - swept > 3 * WINDOW_MS) {
      swept = Date.now();
      await requestSweep(loop.bosses[0]!, loop.connection.id, false);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  await loop.admin('POST', 'deliveries/flush');
  const quiet = Date.now();

  const stockDiff = async () => {
    const snapshot = (await loop.admin('GET', 'snapshot?resource=variants')).variants;
    const rows = await sql<{ id: number; raw: any }>`SELECT id, raw FROM variants WHERE connection_id = ${loop.connection.id}`.execute(
      loop.tdb.db,
    );
    const mine = new Map(rows.rows.map((r) => [Number(r.id), r.raw]));
    return snapshot
      .filter((v: any) => JSON.stringify(canon(v.locations ?? [])) !== JSON.stringify(canon(mine.get(v.id)?.locations ?? null)))
      .map((v: any) => v.id as number);
  };
  const waiting = async () =>
    (
      await sql<{ n: number }>`SELECT (SELECT count(*)::int FROM pending_fetches) + (SELECT count(*)::int FROM webhook_deliveries
        WHERE state IN ('received', 'queued')) AS n`.execute(loop.tdb.db)
    ).rows[0]!.n;
  // A drain held for stock leaves its rows pending until the next mark or the maintenance minute (the test's
  // workers run no schedules): that minute's safety net, once a window here.
  let maintained = 0;
  let stale: number[] = [];
  await loop
    .until(
      'the mirror to catch up while the script goes on spending',
      async () => {
        if (Date.now() - maintained > WINDOW_MS) {
          maintained = Date.now();
          await loop.bosses[0]!.send(maintenanceQueue.name, { task: 'pending' });
        }
        if ((await loop.admin('GET', 'stats')).deliveries.pending || (await waiting())) return false;
        stale = await stockDiff();
        return stale.length === 0;
      },
      60_000,
    )
    .catch(async (err) => {
      t.comment(`stock differs for ${stale.join(',') || '-'}`);
      const q = async (text: string) => t.comment(JSON.stringify((await sql.raw(text).execute(loop.tdb.db)).rows));
      await q(
        'SELECT resource, count(*)::int AS n, min(first_marked_at) AS first, max(claimed_until) AS claimed FROM pending_fetches GROUP BY 1',
      );
      await q('SELECT state, count(*)::int AS n FROM webhook_deliveries GROUP BY 1');
      await q("SELECT name, state, count(*)::int AS n FROM pgboss.job WHERE name <> 'channel-stock' GROUP BY 1, 2");
      throw err;
    });
  const caughtUp = Date.now() - quiet;
  await spender.stop();

  const ours = perWindow(proxy.seen);
  let theirs = 0;
  for (const [reset, w] of ours) {
    const f = spender.byWindow.get(reset) ?? { ok: 0, limited: 0 };
    theirs += f.ok;
    t.comment(`window ${reset}: ours ${w.ok} answered, ${w.limited} 429; the script's ${f.ok} answered, ${f.limited} 429`);
  }
  const stats = await loop.admin('GET', 'stats');
  const budget = await loop.tdb.db.selectFrom('api_budgets').selectAll().executeTakeFirstOrThrow();
  t.comment(
    `sandbox: ${stats.requests.total} requests, ${stats.rate_limited} 429s; ours: ${budget.requests_total} sent, ` +
      `${budget.accounting_errors} 429s; stock equal ${caughtUp} ms after the merchant stopped`,
  );

  const worst = Math.max(...[...ours.values()].map((w) => w.limited));
  t.ok(ours.size >= WINDOWS, `over ${ours.size} windows`);
  t.ok(theirs >= 0.5 * LIMIT * (ours.size - 1), `the script spent most of them (${theirs} of ${LIMIT * ours.size})`);
  t.ok(worst <= 1, `at most one 429 a window (worst: ${worst})`);
  if (worst > 1) {
    for (const s of proxy.seen)
      t.comment(`  ${s.sent % 100_000} -> ${(s.answered ?? 0) % 100_000} ${s.path.slice(0, 40)} ${s.status} ${s.remaining} ${s.reset}`);
  }
  // After a 429, nothing of ours until its reset (but what was granted before its answer reached the budget).
  const early = proxy.seen.filter(
    (s) => s.status !== null && proxy.seen.some((l) => l.status === 429 && s.sent > l.answered! + 1000 && s.sent < l.reset! * 1000),
  );
  t.same(
    early.map((s) => s.path),
    [],
    'after a 429, the next request waits for the reset',
  );
  // Sweeps never take the reserve, whoever spent the window: no sweep request sent while what the service had
  // said was left (our answers of the window up to a second before: the budget hears of an answer a moment after
  // the proxy) was within it.
  const intoReserve = proxy.seen.filter((s) => {
    if (!isSweep(s.path) || s.reset === null) return false;
    const heard = proxy.seen.filter((a) => a.reset === s.reset && a.remaining !== null && a.answered! < s.sent - 1000);
    return heard.length > 0 && Math.min(...heard.map((a) => a.remaining!)) <= RESERVE;
  });
  t.same(
    intoReserve.map((s) => s.path),
    [],
    'no sweep request took the reserve',
  );
  t.equal(
    budget.accounting_errors,
    [...ours.values()].reduce((n, w) => n + w.limited, 0),
    "every 429 the proxy saw is in the budget's count",
  );
  const failed = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pgboss.job WHERE state = 'failed'`.execute(loop.tdb.db);
  t.equal(failed.rows[0]!.n, 0, 'no job failed');
});
