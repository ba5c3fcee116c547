// Drift counts only changes an event should have announced and no delivery or queued read explains (docs/alerts.md):
// a sweep that changes records whose deliveries are stored but not yet read (the drains were about to read them)
// reports them as explained; changes the service sends no event for (an order voided, a variant's price) as
// unannounced; records whose deliveries were lost are drift. Against the sandbox: first with no worker running, so
// deliveries stay queued while the sweeps run; then as the demo runs, its activity and `commerce-sync reconcile`.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { sql } from 'kysely';
import { evaluateAlerts } from '../../src/alerts/evaluate.ts';
import { openAlerts } from '../../src/db/alerts.ts';
import { sweep } from '../../src/sync/sweep.ts';
import { rulesFrom } from '../../src/stock/rules.ts';
import { captureLogger } from '../support/log.ts';
import { runNode } from '../support/processes.ts';
import { startLoop, TEST_KEY, type Loop } from '../sync/harness.ts';

const sweepNow = async (loop: Loop, full: boolean) =>
  sweep(
    {
      db: loop.tdb.db,
      log: loop.logs.log,
      client: loop.client,
      rules: rulesFrom(loop.config),
      overlapSeconds: loop.config.RECONCILE_OVERLAP_SECONDS,
      clockMarginMs: loop.config.SERVICE_CLOCK_MARGIN_SECONDS * 1000,
    },
    { full, wait: true },
  );

async function delivered(loop: Loop): Promise<void> {
  await loop.admin('POST', 'deliveries/flush');
  await loop.until('deliveries delivered', async () => (await loop.admin('GET', 'stats')).deliveries.pending === 0);
}

t.test('changes whose deliveries wait to be read are explained, not drift; lost deliveries are drift', async (t) => {
  const loop = await startLoop(t, { workers: 0, sandbox: { variants: 30 } });
  const first = await sweepNow(loop, true);
  t.equal(first.drift, 0, 'the first load is not drift');

  // Merchant activity whose deliveries are stored and queued, none read yet.
  await loop.admin('POST', 'activity', { operations: 40 });
  await delivered(loop);
  const queued = await sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE state = 'queued'`.execute(loop.tdb.db);
  t.ok(queued.rows[0]!.n > 0, `${queued.rows[0]!.n} deliveries wait to be read`);
  const explained = await sweepNow(loop, false);
  // Changed: written, gone, or left to a drain (a variant changed at the same updated_at, docs/sync.md).
  const changed = Object.values(explained.resources).reduce((n, r) => n + r.applied + r.gone + (r.queued ?? 0), 0);
  t.ok(changed > 0, `the sweep changed ${changed} records`);
  t.ok(explained.explained > 0, `${explained.explained} of them were announced by a waiting delivery`);
  t.equal(explained.drift + explained.explained + explained.unannounced, changed, 'drift is what is left');
  t.ok(explained.drift < changed, `drift ${explained.drift} < ${changed} changed`);
  const logged = await sql<{ detail: { drift: number; explained: number } }>`
    SELECT detail FROM sync_log WHERE action = 'sweep' ORDER BY id DESC LIMIT 1`.execute(loop.tdb.db);
  t.same(logged.rows[0]!.detail.explained, explained.explained, 'the sync log says how many were explained');

  // Now deliveries are lost: what the sweep finds is drift.
  await loop.admin('POST', 'faults', { deliveries: { drop: 1 } });
  await loop.admin('POST', 'activity', { operations: 40 });
  await delivered(loop);
  const lost = await sweepNow(loop, false);
  t.ok(lost.drift > 0, `with every delivery lost the sweep finds drift (${lost.drift}, ${lost.explained} explained)`);
});

/** `commerce-sync reconcile` on the loop's database, as a person runs it: its output. */
async function reconcile(t: Test, loop: Loop): Promise<string> {
  const dataDir = await mkdtemp(join(tmpdir(), 'cs-reconcile-'));
  const env = { ...process.env, DATABASE_URL: loop.tdb.url, TOKEN_ENCRYPTION_KEY: TEST_KEY, DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
  const p = await runNode(['src/cli.ts', 'reconcile'], env);
  t.equal(p.code, 0, `reconcile exits 0${p.code ? `: ${p.both}` : ''}`);
  return p.out;
}

/** The figures of a reconcile's first line: changed = drift + no event + explained. */
function figures(t: Test, out: string) {
  const m = /changed (\d+): drift (\d+), no event (\d+), explained (\d+);/.exec(out);
  t.ok(m, `the output names each figure: ${out.split('\n')[0]}`);
  const [changed, drift, unannounced, explained] = (m ?? []).slice(1).map(Number) as [number, number, number, number];
  t.equal(drift + unannounced + explained, changed, 'and they add up');
  return { changed, drift, unannounced, explained };
}

/**
 * Minutes of the demo's merchant activity as the demo performs it, 2 operations a second: 10 every 5 s of the
 * sandbox's clock (100 times faster than ours; a burst would make every change of a record seem as old as its first
 * delivery). Its deliveries are sent (and, with faults, lost) before the sweep.
 */
async function activity(loop: Loop, operations: number): Promise<void> {
  for (let done = 0; done < operations; done += 10) {
    await loop.admin('POST', 'activity', { operations: 10 });
    await new Promise((r) => setTimeout(r, 50));
  }
  await delivered(loop);
}

const driftAlert = async (loop: Loop) => {
  await evaluateAlerts({ db: loop.tdb.db, config: loop.config, log: captureLogger('error').log });
  return (await openAlerts(loop.tdb.db)).find((a) => a.key === 'drift:shop');
};

t.test('a demo with the sandbox activity: several reconciles open no drift alarm; with deliveries dropped they do', async (t) => {
  // The demo's sandbox (200 variants) and worker; the alarm at its default threshold.
  const loop = await startLoop(t, { sandbox: { variants: 200 }, firstSweep: true });
  const initial = sql`SELECT 1 FROM sync_log WHERE action = 'sweep.initial'`;
  await loop.until('the first sweep', async () => (await initial.execute(loop.tdb.db)).rows.length > 0);
  t.equal(loop.config.ALERT_DRIFT_THRESHOLD, 20);
  let unannounced = 0;
  for (let i = 0; i < 3; i++) {
    // Five minutes of the demo between sweeps, as its scheduled sweeps are.
    await activity(loop, 600);
    const f = figures(t, await reconcile(t, loop));
    unannounced += f.unannounced;
    t.ok(f.drift <= loop.config.ALERT_DRIFT_THRESHOLD, `sweep ${i + 1}: drift ${f.drift} (${f.unannounced} changes no event announces)`);
    t.notOk(await driftAlert(loop), 'no drift alarm');
  }
  t.ok(unannounced > 3 * loop.config.ALERT_DRIFT_THRESHOLD, `the sweeps repaired ${unannounced} changes the service sends no event for`);

  // Deliveries really lost: what the sweep repairs that an event should have announced raises the alarm.
  await loop.admin('POST', 'faults', { deliveries: { drop: 1 } });
  await activity(loop, 600);
  const lost = figures(t, await reconcile(t, loop));
  t.ok(lost.drift > loop.config.ALERT_DRIFT_THRESHOLD, `with every delivery dropped: drift ${lost.drift}`);
  const alert = await driftAlert(loop);
  t.ok(alert, 'the drift alarm opens');
  t.match(alert?.message, /changes? that an event should have announced and no delivery did.*webhooks are being missed/);
});
