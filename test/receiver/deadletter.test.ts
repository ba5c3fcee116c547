// A delivery whose job fails for good: the job lands in the dead-letter queue and the delivery row says
// `failed` (not `queued` forever); replaying the dead letter processes it.
import { deliveriesHandler } from '../../src/sync/handlers.ts';
import t from 'tap';
import { deliver, payload, startReceiver } from './harness.ts';
import { workQueues } from '../../src/worker/handlers.ts';
import { replayDeadLetter } from '../../src/receiver/replay.ts';
import { deadLetterOf } from '../../src/queue/queue.ts';
import { deliveriesQueue } from '../../src/queue/contracts.ts';

async function until<T>(what: string, f: () => Promise<T | undefined | null | false>): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const v = await f();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

t.test('a dead-lettered delivery job leaves its rows failed; a replay of the dead letter processes them', async (t) => {
  const h = await startReceiver(t);
  // No retries, so the first failure is the last (the policy's 8 retries with backoff would take minutes).
  await h.boss.updateQueue(deliveriesQueue.name, { retryLimit: 0, retryDelay: 0 });
  // The database refuses what the handler writes: every attempt fails.
  await h.tdb.pool.query(`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'pending fetches refused by the test'; END $$;
    CREATE TRIGGER refuse BEFORE INSERT ON pending_fetches FOR EACH ROW EXECUTE FUNCTION refuse()`);
  const res = await Promise.all([1, 2].map((i) => deliver(h.url(), payload(i), { 'x-service-delivery': `dl-${i}` })));
  t.same(
    res.map((r) => r.status),
    [200, 200],
  );
  await workQueues(h.rt.workerDeps(), [deliveriesHandler]);

  const rows = await until('both rows failed', async () => {
    const r = await h.rows();
    return r.every((x) => x.state === 'failed') && r;
  });
  t.equal(rows.length, 2);
  t.ok(
    rows.every((r) => /dead letter: pending fetches refused by the test/.test(r.error ?? '')),
    'the error says why',
  );
  // The handler marks the rows before it rethrows; pg-boss fails the job and makes its dead letter after that.
  const dead = await until('the dead letter', async () => {
    const r = (await h.tdb.pool.query(`SELECT id, data FROM pgboss.job WHERE name = $1`, [deadLetterOf(deliveriesQueue.name)])).rows;
    return r.length > 0 && r;
  }).catch(() => []);
  t.ok(dead.length >= 1, 'the job is a dead letter');
  t.ok(
    rows.every((r) => dead.some((j) => j.data.jobId === r.job_id)),
    'the dead letter owns both deliveries',
  );

  await h.tdb.pool.query('DROP TRIGGER refuse ON pending_fetches');
  for (const j of dead) t.ok(await replayDeadLetter(h.tdb.db, h.boss, deadLetterOf(deliveriesQueue.name), j.id), 'replayed');
  const after = await until('both rows processed', async () => {
    const r = await h.rows();
    return r.every((x) => x.state === 'processed') && r;
  });
  t.ok(after.every((r) => r.error === null));
  t.equal(Number((await h.tdb.pool.query('SELECT count(*) AS n FROM pending_fetches')).rows[0].n), 2, 'and their reads are pending');
});

t.test('a failed attempt with retries left leaves the rows queued', async (t) => {
  const h = await startReceiver(t);
  await h.boss.updateQueue(deliveriesQueue.name, { retryLimit: 1, retryDelay: 3600 });
  await h.tdb.pool.query(`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
    CREATE TRIGGER refuse BEFORE INSERT ON pending_fetches FOR EACH ROW EXECUTE FUNCTION refuse()`);
  t.equal((await deliver(h.url(), payload(1), { 'x-service-delivery': 'retry-1' })).status, 200);
  await workQueues(h.rt.workerDeps(), [deliveriesHandler]);
  await until(
    'the job to fail once',
    async () => (await h.tdb.pool.query(`SELECT 1 FROM pgboss.job WHERE name = 'deliveries' AND state = 'retry'`)).rows.length,
  );
  t.same(
    (await h.rows()).map((r) => r.state),
    ['queued'],
    'still queued: the retry will handle it',
  );
});
