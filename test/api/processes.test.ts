// Several processes share one connection's budget through PostgreSQL: the sandbox never answers 429.
import t from 'tap';
import { getConnection } from '../../src/api/connections.ts';
import { runNode } from '../support/processes.ts';
import { oauthConnection, setup } from './harness.ts';

const runReader = (env: NodeJS.ProcessEnv) => runNode(['test/api/fixtures/reader.ts'], { ...process.env, ...env });

t.test('three processes, one budget of 20 per window: every request answered, none with 429', async (t) => {
  // timeScale 150: the 300-second window lasts 2 real seconds.
  const s = await setup(t, { sandbox: { rateLimit: 20, timeScale: 150 }, config: { API_CONCURRENCY: 4 } });
  const env = {
    DATABASE_URL: s.database.url,
    CONNECTION: 'shop',
    REQUESTS: '30',
    LOG_LEVEL: 'warn',
    TOKEN_ENCRYPTION_KEY: s.config.TOKEN_ENCRYPTION_KEY,
    DATA_DIR: s.config.DATA_DIR,
    API_CONCURRENCY: '4',
    API_MAX_ATTEMPTS: '4',
  };
  const before = (await s.stats()).requests.total;
  const runs = await Promise.all([
    runReader({ ...env, PRIORITY: 'interactive' }),
    runReader({ ...env, PRIORITY: 'webhook' }),
    runReader({ ...env, PRIORITY: 'reconcile', BUDGET_RESERVE: '5' }),
  ]);
  for (const r of runs) {
    t.equal(r.code, 0, r.err);
    const summary = JSON.parse(r.out.trim().split('\n').pop()!);
    t.same(summary.errors, [], 'no request failed');
  }
  const stats = await s.stats();
  t.equal(stats.requests.total - before, 90, 'exactly the 90 requests, no retries needed');
  t.notOk(stats.requests.by_status['429'], 'no 429 answers');
  t.equal(stats.rate_limited, 0);
  const budget = await s.database.db.selectFrom('api_budgets').selectAll().executeTakeFirstOrThrow();
  t.equal(budget.accounting_errors, 0);
  t.equal(budget.in_flight, 0, 'every lease returned');
  t.same(budget.waiters, {}, 'no waiter left behind');
  t.same(budget.leases, {}, 'no lease left behind');
});

t.test('in one process: after exhaustion the interactive caller gets the first slot of the new window', async (t) => {
  const s = await setup(t, { sandbox: { rateLimit: 6, timeScale: 300 }, config: { API_CONCURRENCY: 1, BUDGET_RESERVE: 1 } });
  const order: string[] = [];
  const call = (name: string, priority: 'interactive' | 'reconcile' | 'webhook') =>
    s.client.get('/accounts/current', { priority }).then(() => {
      order.push(name);
    });
  // Spend the window, then queue low priority first and high priority last.
  const spend = Array.from({ length: 6 }, (_, i) => call(`spend${i}`, 'interactive'));
  await Promise.all(spend);
  const queued = [call('r1', 'reconcile'), call('r2', 'reconcile'), call('w1', 'webhook'), call('i1', 'interactive')];
  await Promise.all(queued);
  t.same(order.slice(6), ['i1', 'w1', 'r1', 'r2']);
  const stats = await s.stats();
  t.notOk(stats.requests.by_status['429']);
});

t.test('three processes meet an expired OAuth token together: one refresh, the others reuse its token', async (t) => {
  const s = await setup(t, { sandbox: { manualClock: true, tokenExpiresIn: 600 } });
  const { connection } = await oauthConnection(s);
  await s.admin('POST', 'clock', { advance_seconds: 700 });
  const env = {
    DATABASE_URL: s.database.url,
    CONNECTION: 'oauth-shop',
    REQUESTS: '4',
    LOG_LEVEL: 'info',
    TOKEN_ENCRYPTION_KEY: s.config.TOKEN_ENCRYPTION_KEY,
    DATA_DIR: s.config.DATA_DIR,
    COMMERCE_CLIENT_ID: s.sandbox.clientId,
    COMMERCE_CLIENT_SECRET: s.sandbox.clientSecret,
  };
  const runs = await Promise.all([runReader(env), runReader(env), runReader(env)]);
  let refreshed = 0;
  for (const r of runs) {
    t.equal(r.code, 0, r.err);
    t.same(JSON.parse(r.out.trim().split('\n').pop()!).errors, []);
    refreshed += r.err.split('\n').filter((l) => l.includes('"msg":"access token refreshed"')).length;
  }
  // The sandbox rotates refresh tokens: had two processes refreshed, the second would have been refused.
  t.equal(refreshed, 1, 'one process refreshed');
  const row = (await getConnection(s.database.db, connection.id))!;
  t.equal(row.status, 'active', row.status_reason ?? '');
});
