// Faults at the service, with real receiver and worker processes under steady delivery load: storms of 500
// and 503, answers slower than the client's timeout, a lapsed subscription (402) and a revoked token (401).
// The worker backs off and says why (its log, the connection's status and reason), resumes when the service
// recovers, and loses nothing: every acknowledged delivery is processed and after a sweep the mirror equals
// the sandbox.
import t from 'tap';
import { sql } from 'kysely';
import { addOAuthConnection } from '../../src/api/connections.ts';
import { requestToken } from '../../src/api/oauth.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { captureLogger } from '../support/log.ts';
import { watchRegressions } from '../support/mirror.ts';
import { converged, drainSandbox, startWorld, steadyLoad, ackedProcessed, until, type World } from './harness.ts';
import { ClientState } from '../../src/api/client-state.ts';
import { maintenanceQueue } from '../../src/queue/contracts.ts';

async function status(world: World): Promise<{ status: string; status_reason: string | null }> {
  return world.db.selectFrom('connections').select(['status', 'status_reason']).where('name', '=', 'shop1').executeTakeFirstOrThrow();
}

const count = (text: string, re: RegExp) => (text.match(new RegExp(re.source, 'g')) ?? []).length;

t.test('500/503 storms, slow answers, a lapsed subscription and a revoked token: back off, report, resume, lose nothing', async (t) => {
  const world = await startWorld(t);
  const [shop] = world.shops;
  const regressions = await watchRegressions(world.db);
  const receiver = await world.spawn('receiver');
  world.setReceivers([receiver]);
  const worker = await world.spawn('worker', { API_TIMEOUT_MS: 1000, API_MAX_ATTEMPTS: 3, LOG_LEVEL: 'warn' });
  const stopLoad = steadyLoad(t, shop!, 8);
  const processed = async () =>
    (await sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE state = 'processed'`.execute(world.db)).rows[0]!.n;
  const progress = async (what: string, more = 20) => {
    const from = await processed();
    await until(
      what,
      async () => (await processed()) >= from + more || `${(await processed()) - from} of ${more} more processed`,
      40_000,
      250,
    );
  };
  await progress('deliveries flowing');

  // 1. Storm of 500 and 503 on every API route; then 2. answers slower than API_TIMEOUT_MS.
  const reads = () => worker.output();
  await shop!.admin('POST', 'faults', { responses: { error_500: 0.35, error_503: 0.35 } });
  await until('the worker to meet the storm', () => count(reads(), /service error; retrying/) >= 3, 20_000);
  await new Promise((r) => setTimeout(r, 2000));
  await shop!.admin('POST', 'faults', { responses: { latency_ms: 1500 } });
  await until('the worker to meet slow answers', () => count(reads(), /no answer from the service; retrying/) >= 2, 30_000);
  await shop!.admin('POST', 'faults', {});
  t.match(reads(), /"status":50[03].*service error; retrying/, 'the worker log names the status it retries');
  t.equal((await status(world)).status, 'active', 'server errors and timeouts do not take the connection down');
  await progress('processing resumes after the storm');

  // 3. A lapsed subscription: every call answers 402.
  await shop!.admin('POST', 'account', { lapsed: true });
  await until('the connection to be marked lapsed', async () => (await status(world)).status === 'lapsed', 20_000);
  const lapsed = await status(world);
  t.match(lapsed.status_reason, /402/, `the reason says what happened: ${lapsed.status_reason}`);
  // The status commits before the worker's log line crosses its stdout pipe to us: wait for the line, briefly.
  await until('the worker log to say so', () => /subscription lapsed \(402\)/.test(reads()), 5_000);
  t.match(reads(), /subscription lapsed \(402\)/, 'the worker log says so');
  const ackedWhileLapsed = world.proxy.acked.size;
  await until('deliveries still acknowledged while lapsed', () => world.proxy.acked.size >= ackedWhileLapsed + 10, 20_000);
  await shop!.admin('POST', 'account', { lapsed: false });
  // The worker probes lapsed connections every 5 minutes (maintenance schedule); fire that tick now.
  const boss = await startBoss(world.databaseUrl, captureLogger('silent').log, { supervise: false, schedule: false, max: 2 });
  t.teardown(() => stopBoss(boss, false));
  await boss.send(maintenanceQueue.name, { task: 'probe-lapsed' });
  await until('the connection to come back by itself', async () => (await status(world)).status === 'active', 20_000);
  t.pass('after the subscription is renewed, the next probe makes the connection active again, with no operator');
  await progress('processing resumes after the renewal');

  // 4. The token revoked mid-run: 401, the connection is marked unauthorized; an operator reconnects (OAuth).
  await shop!.admin('POST', 'revoke', { token: shop!.sandbox.token });
  await until('the connection to be marked unauthorized', async () => (await status(world)).status === 'unauthorized', 45_000);
  const revoked = await status(world);
  t.match(revoked.status_reason, /401/, `the reason says what happened: ${revoked.status_reason}`);
  const authorize = await fetch(`${shop!.sandbox.url}/oauth/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: world.config.COMMERCE_CLIENT_ID, redirect_uri: 'http://127.0.0.1:1/cb', decision: 'approve' }),
  });
  const code = new URL(authorize.headers.get('location')!).searchParams.get('code')!;
  const tokens = await requestToken(world.config, shop!.sandbox.url, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: 'http://127.0.0.1:1/cb',
  });
  await addOAuthConnection(
    { db: world.db, config: world.config, log: captureLogger('silent').log, clients: new ClientState() },
    { baseUrl: shop!.sandbox.url, tokens, name: 'shop1' },
  );
  t.equal((await status(world)).status, 'active', 'reconnected');
  const from = await processed();
  await until(
    'the running worker to work with the new token',
    async () => {
      const s = await status(world);
      if (s.status !== 'active') throw new Error(`connection ${s.status} again: ${s.status_reason}`);
      return (await processed()) >= from + 20;
    },
    30_000,
    250,
  );
  t.pass('after reconnecting, the running worker works with the new token (no restart)');

  // Nothing lost.
  await stopLoad();
  await drainSandbox(shop!);
  await ackedProcessed(world.db, world.proxy.acked);
  t.pass(`${world.proxy.acked.size} acknowledged deliveries, all processed`);
  await world.reconcile();
  await converged(world);
  t.pass('after recovery and a sweep the mirror equals the sandbox');
  t.same(await regressions(), [], 'no mirror regression');
  const stats = await shop!.admin('GET', 'stats');
  t.equal(stats.rate_limited, 0, 'no 429 through it all');
  await Promise.all([receiver.stop(), worker.stop()]);
});
