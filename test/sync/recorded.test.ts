// The recorded payloads of the real service served over HTTP as a small account, speaking the spec's list
// protocol (ids, status, updated_at_min, limit/page, include, X-Pagination, rate headers); a full sweep
// must put every record into the mirror without loss.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sql } from 'kysely';
import { addTokenConnection, clientFor } from '../../src/api/connections.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { createQueues } from '../../src/queue/queues.ts';
import { runSweep } from '../../src/sync/sweep.ts';
import { childCollections, otherResources, resources } from '../../src/sync/resources.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase } from '../support/db.ts';
import { fixture, fixtureNames } from './harness.ts';
import { captureLogger } from '../support/log.ts';
import { canon } from '../support/mirror.ts';
import { ClientState } from '../../src/api/client-state.ts';

const TOKEN = 'recorded-token';

// Which parent field a child collection's records point at, for include=.
const childOf: Record<string, { key: string; field: string }> = {
  orders: { key: 'order_line_items', field: 'order_id' },
  fulfillments: { key: 'fulfillment_line_items', field: 'fulfillment_id' },
  purchase_orders: { key: 'purchase_order_line_items', field: 'purchase_order_id' },
};

function startRecordedAccount(): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const data = new Map(fixtureNames().map((n) => [n, fixture(n)]));
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    const u = new URL(req.url!, 'http://x');
    requests.push(`${req.method} ${u.pathname}${u.search}`);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, {
        'content-type': 'application/json',
        'x-request-id': `r${requests.length}`,
        'x-rate-limit-limit': '300',
        'x-rate-limit-remaining': String(Math.max(0, 300 - requests.length)),
        'x-rate-limit-reset': String(Math.ceil(Date.now() / 1000) + 300),
        ...headers,
      });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return send(401, { error: 'invalid token' });
    if (u.pathname === '/accounts/current') return send(200, { account: data.get('accounts')![0] });
    const key = u.pathname.slice(1);
    const all = data.get(key);
    if (req.method !== 'GET' || !all || key === 'accounts') return send(404, { error: 'Not found' });
    const q = u.searchParams;
    const ids = [...q.getAll('ids'), ...q.getAll('ids[]')]
      .flatMap((v) => v.split(','))
      .filter(Boolean)
      .map(Number);
    // Default: everything not soft-deleted; status=X: records in state X. Stricter than the sandbox: several
    // values of status are refused (400), so the engine's one-read-per-state fallback is exercised.
    const several = [...q.getAll('status'), ...q.getAll('status[]')];
    if (several.length > 1) return send(400, { error: 'status takes one value' });
    const status = several[0] ?? null;
    const min = q.get('updated_at_min');
    let list = all.filter((r) => (status === null ? r.status !== 'archived' : (r.status ?? 'active') === status));
    if (ids.length) list = list.filter((r) => ids.includes(r.id));
    if (min) list = list.filter((r) => !r.updated_at || r.updated_at >= min);
    const limit = Math.min(250, Number(q.get('limit') ?? 50));
    const page = Number(q.get('page') ?? 1);
    const pages = Math.max(1, Math.ceil(list.length / limit));
    const slice = list.slice((page - 1) * limit, page * limit);
    const body: Record<string, unknown> = { [key]: slice };
    const inc = childOf[key];
    if (inc && (q.get('include') ?? '').split(',').includes(inc.key)) {
      body[inc.key] = data.get(inc.key)!.filter((c) => slice.some((p) => p.id === c[inc.field]));
    }
    send(200, body, {
      'x-pagination': JSON.stringify({
        total_records: list.length,
        total_pages: pages,
        first_page: page === 1,
        last_page: page >= pages,
        out_of_bounds: page > pages,
        offset: (page - 1) * limit,
      }),
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        requests,
        close: () =>
          new Promise((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      }),
    ),
  );
}

t.test('a full sweep of the recorded account puts every record into the mirror, raw intact', async (t) => {
  const account = await startRecordedAccount();
  t.teardown(() => account.close());
  const tdb = await testDatabase(t);
  const logs = captureLogger('warn');
  const config = testConfig({
    DATA_DIR: await mkdtemp(join(tmpdir(), 'cs-rec-')),
    TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 5).toString('base64'),
    DATABASE_URL: tdb.url,
  });
  const deps = { db: tdb.db, config, log: logs.log, clients: new ClientState() };
  const connection = await addTokenConnection(deps, { baseUrl: account.url, token: TOKEN, name: 'recorded' });
  const boss = await startBoss(tdb.url, logs.log, { supervise: false, schedule: false, max: 2 });
  t.teardown(() => stopBoss(boss, false));
  await createQueues(boss);
  const client = await clientFor(deps, connection);
  const result = await runSweep({ db: tdb.db, boss, config, log: logs.log }, client, { full: true, wait: true });
  t.ok(result.initial, 'an empty mirror: the first sweep is the initial load');
  t.equal(result.drift, 0, 'what the initial load writes is not counted as drift');
  t.ok(Object.values(result.resources).reduce((n, s) => n + s.applied, 0) > 0, 'it wrote the records');

  const rawOf = async (table: string, where = sql``) =>
    (await sql<{ raw: any }>`SELECT raw FROM ${sql.raw(table)} WHERE connection_id = ${connection.id} ${where}`.execute(tdb.db)).rows.map(
      (r) => r.raw,
    );
  const same = (t: { same(a: unknown, b: unknown, m: string): unknown }, got: any[], want: any[], what: string) => {
    // The client hands decimal fields over as their exact source text (5 -> "5"): same value, kept exactly.
    const key = (r: any) => JSON.stringify(canon(r), (_k, v) => (typeof v === 'number' ? String(v) : v));
    t.same(got.map(key).sort(), want.map(key).sort(), `${what}: all ${want.length} records, raw intact`);
  };
  for (const spec of Object.values(resources)) {
    if (fixtureNames().includes(spec.key)) same(t, await rawOf(spec.table), fixture(spec.key), spec.key);
  }
  for (const child of childCollections) {
    if (!fixtureNames().includes(child.key)) continue;
    same(t, await rawOf(child.table!), fixture(child.key), child.key);
  }
  for (const { name, key } of otherResources) {
    if (!fixtureNames().includes(key)) continue;
    same(t, await rawOf('other_records', sql`AND resource = ${name}`), fixture(key), key);
  }
  const covered = new Set([
    ...Object.values(resources).map((s) => s.key),
    ...childCollections.map((c) => c.key),
    ...otherResources.map((s) => s.key),
  ]);
  t.same(
    fixtureNames()
      .filter((n) => !covered.has(n))
      .sort(),
    ['accounts', 'webhooks'],
    'only the account (kept on the connection) and our own webhook subscriptions are not mirror records',
  );
  const conn = await tdb.db.selectFrom('connections').select('raw').where('id', '=', connection.id).executeTakeFirstOrThrow();
  t.same(canon(conn.raw), canon(fixture('accounts')[0]), 'the account record is kept on the connection');

  // Stock from the recorded variants, exact: "-0.0" is 0, committed: null is 0, negative stays negative.
  const s = await sql<{ variant_id: number; location_id: number; on_hand: string; committed: string }>`
    SELECT variant_id, location_id, on_hand::text, committed::text FROM stock_levels WHERE connection_id = ${connection.id}`.execute(
    tdb.db,
  );
  t.equal(
    s.rows.length,
    fixture('variants').reduce((n, v) => n + v.locations.length, 0),
  );
  t.match(
    s.rows.find((r) => r.variant_id === 720709 && r.location_id === 159),
    { on_hand: '-10', committed: '1' },
  );
  const q = await tdb.db
    .selectFrom('channel_quantities')
    .select(['variant_id', 'quantity'])
    .where('connection_id', '=', connection.id)
    .execute();
  t.equal(q.length, fixture('variants').length, 'every variant has a channel quantity');
  t.equal(q.find((r) => r.variant_id === 457)?.quantity, '110', '111 on hand - 1 committed');

  // A second full sweep finds no drift: the writes are idempotent.
  const again = await runSweep({ db: tdb.db, boss, config, log: logs.log }, client, { full: true, wait: true });
  t.equal(again.drift, 0, 'no drift the second time');
  t.equal(again.channelChanges, 0);
});
