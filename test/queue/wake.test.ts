// Workers are woken by pg-boss's notifications, not by polling (src/queue/boss.ts, src/queue/queues.ts): a process
// that supervises listens, every queue but deliveries notifies, and an idle sweep worker, polling every 30 s here,
// takes a job sent to it at once.
import t from 'tap';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { deliveriesQueue, reconcileQueue, requestSweep } from '../../src/queue/contracts.ts';
import { createQueues, queues } from '../../src/queue/queues.ts';
import { reconcileHandler } from '../../src/sync/handlers.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';

t.test('an idle worker takes a job sent to its queue at once, long before its backstop poll', async (t) => {
  const tdb = await testDatabase(t);
  const { log } = captureLogger('warn');
  const boss = await startBoss(tdb.url, log, { supervise: true, schedule: false, max: 3 });
  t.teardown(() => stopBoss(boss, false));
  await createQueues(boss);

  const notifying = Object.fromEntries((await boss.getQueues()).map((q) => [q.name, q.notify]));
  for (const q of queues) t.equal(notifying[q.name], q !== deliveriesQueue, `${q.name}: notify ${q !== deliveriesQueue}`);

  // The sweep workers' own options, but polling every 30 s, with notifications or without: only a notification can
  // bring the job sooner.
  const options = { ...reconcileHandler.work(testConfig()), pollingIntervalSeconds: 30, notifyPollingIntervalSeconds: 30 };
  const taken: number[] = [];
  await boss.work(reconcileQueue.name, options, async () => {
    taken.push(Date.now());
  });
  // Past the workers' first fetch (at start), so only a notification or the 30 s poll can bring the job.
  await new Promise((r) => setTimeout(r, 2_000));
  const sent = Date.now();
  await requestSweep(boss, 1, false);
  for (const end = Date.now() + 20_000; !taken.length && Date.now() < end; ) await new Promise((r) => setTimeout(r, 50));
  t.equal(taken.length, 1, 'the job was taken');
  t.ok(taken[0]! - sent < 5_000, `taken ${taken[0]! - sent} ms after it was sent`);
});
