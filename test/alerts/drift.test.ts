// Drift counts only what no delivery or queued read explains (docs/alerts.md): a sweep that changes records whose
// deliveries are stored but not yet read (the drains were about to read them) reports them as explained, not as
// drift; records whose deliveries were lost are drift. Against the sandbox, with no worker running, so deliveries
// stay queued while the sweeps run.
import t from 'tap';
import { sql } from 'kysely';
import { sweep } from '../../src/sync/sweep.ts';
import { rulesFrom } from '../../src/stock/rules.ts';
import { startLoop, type Loop } from '../sync/harness.ts';

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
  t.equal(explained.drift + explained.explained, changed, 'drift is what is left');
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
