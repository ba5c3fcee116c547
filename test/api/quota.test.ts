// One quota, many spenders: another client of the same application spends the window while three
// "processes" of ours (a gate each, 4 requests in flight each) want more than it leaves. steady: the script sends
// one request at a time to the end of its share, so the two race for the last requests of every window; burst: it
// takes its 80% at the start of each window, 4 at a time. The budget follows the service's Remaining and Reset:
// at most one 429 a window reaches us (a lost race for the last request), and no call fails.
import t from 'tap';
import { sql } from 'kysely';
import { clientFor } from '../../src/api/connections.ts';
import { ClientState } from '../../src/api/client-state.ts';
import { getConnection } from '../../src/db/connections.ts';
import { perWindow, recordingProxy, startSpender, type SpenderOptions } from '../support/spender.ts';
import { setup } from './harness.ts';

const LIMIT = 100;
const TIME_SCALE = 100; // the 300-second window lasts 3 real seconds
const WINDOW_MS = 300_000 / TIME_SCALE;
const WINDOWS = 8;

for (const mode of ['steady', 'burst'] as const)
  t.test(`${mode} script spending 80% of each window: at most one 429 a window to us, every call answered`, async (t) => {
    const s = await setup(t, {
      sandbox: { variants: 5, rateLimit: LIMIT, timeScale: TIME_SCALE },
      config: { API_CONCURRENCY: 4, API_MAX_ATTEMPTS: 5, BUDGET_RESERVE: 10 },
    });
    const proxy = await recordingProxy(t, s.sandbox.url);
    await sql`UPDATE connections SET base_url = ${proxy.url} WHERE id = ${s.connection.id}`.execute(s.database.db);
    const row = (await getConnection(s.database.db, s.connection.id))!;
    // Three processes: each with a gate of its own, as a process has.
    const clients = await Promise.all(
      [0, 1, 2].map(() => clientFor({ ...s.deps, clients: new ClientState() }, row, { backoffBaseMs: 10, backoffMaxMs: 100 })),
    );
    const { token } = await s.admin('POST', 'tokens', { application_id: 1 });
    const opts: SpenderOptions = { limit: LIMIT, windowMs: WINDOW_MS, share: 0.8, mode, parallel: 4 };
    const spender = startSpender(s.sandbox.url, token, opts);
    t.teardown(() => spender.stop());

    const until = Date.now() + WINDOWS * WINDOW_MS;
    const errors: string[] = [];
    let calls = 0;
    const priorities = ['webhook', 'reconcile', 'interactive'] as const;
    await Promise.all(
      clients.flatMap((client, p) =>
        Array.from({ length: 4 }, async () => {
          while (Date.now() < until) {
            calls++;
            await client.get('/variants', { query: { limit: 1 }, priority: priorities[p] }).catch((err) => errors.push(String(err)));
          }
        }),
      ),
    );
    await spender.stop();

    const ours = perWindow(proxy.seen);
    for (const [reset, w] of ours) {
      const f = spender.byWindow.get(reset);
      t.comment(`window ${reset}: ours ${w.ok} answered, ${w.limited} 429; the script's ${f?.ok ?? 0} answered, ${f?.limited ?? 0} 429`);
    }
    t.same(errors, [], `all ${calls} calls answered`);
    const worst = Math.max(...[...ours.values()].map((w) => w.limited));
    t.ok(worst <= 1, `at most one 429 a window (worst: ${worst})`);
    t.ok(ours.size >= WINDOWS - 2, `over ${ours.size} windows`);
  });
