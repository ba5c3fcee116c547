// A receiver mounted the way `start` mounts it (role.ts on a Runtime), on port 0, with its own database.
// Signatures here are computed with node:crypto directly, independently of src/receiver/verify.ts.
import { createHmac, randomBytes } from 'node:crypto';
import { startSandbox } from '@commerce-sync/sandbox';
import { addTokenConnection } from '../../src/api/connections.ts';
import { mount } from '../../src/receiver/role.ts';
import type { Server } from '../../src/server.ts';
import type { Boss } from '../../src/queue/boss.ts';
import type { Config } from '../../src/config.ts';
import type { Runtime } from '../../src/runtime.ts';
import { testDatabase, type TestDatabase } from '../support/db.ts';
import { testConfig } from '../support/config.ts';
import { captureLogger } from '../support/log.ts';
import { testRuntime } from '../support/runtime.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import type { Teardown } from '../support/teardown.ts';

export const SECRET = 'current-secret';
export const PREVIOUS = 'previous-secret';

export const sign = (body: string | Buffer, secret = SECRET) => createHmac('sha256', secret).update(body).digest('base64');

export interface Harness {
  base: string;
  url(connection?: string): string;
  tdb: TestDatabase;
  boss: Boss;
  rt: Runtime;
  server: Server;
  logs: ReturnType<typeof captureLogger>;
  connectionId: number;
  /** Stops the runtime the way shutdown does (server first, then pg-boss and the receiver). */
  stop(): Promise<void>;
  rows(): Promise<
    {
      delivery_id: string;
      state: string;
      event: string | null;
      resource: string | null;
      action: string | null;
      object_id: number | null;
      job_id: string | null;
      error: string | null;
      body: string;
    }[]
  >;
  jobs(): Promise<{ id: string; data: any }[]>;
  /** The delivery row ids the jobs on `deliveries` name, ascending; a row named by two jobs appears twice. */
  jobbed(connectionId?: number): Promise<number[]>;
  /** The ids of the stored rows in state `queued`, ascending. */
  queued(connectionId?: number): Promise<number[]>;
}

export interface HarnessOptions {
  config?: Partial<Record<keyof Config, string | number | boolean>>;
  /** URL the receiver's own pool uses (e.g. through a proxy the test can cut); default the test database. */
  receiverUrl?: (url: string) => string | Promise<string>;
}

export async function startReceiver(t: Teardown, opts: HarnessOptions = {}): Promise<Harness> {
  const tdb = await testDatabase(t);
  const logs = captureLogger('info');
  const config = testConfig({
    COMMERCE_CLIENT_SECRET: SECRET,
    COMMERCE_CLIENT_SECRET_PREVIOUS: PREVIOUS,
    DATABASE_URL: tdb.url,
    ...opts.config,
  });
  // The receiver's own pool goes to rt.database.url (through the test's proxy when it gives one).
  const rt = await testRuntime(t, tdb, config, logs.log, {
    databaseUrl: opts.receiverUrl ? await opts.receiverUrl(tdb.url) : undefined,
  });
  const boss = rt.boss;
  await mount(rt);
  const server = await rt.listen(0);
  const { id: connectionId } = await tdb.db
    .insertInto('connections')
    .values({ name: 'shop', base_url: 'http://127.0.0.1:1', auth_kind: 'token' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const stop = () => rt.stop();
  const base = rt.publicUrl;
  return {
    base,
    url: (c = 'shop') => `${base}/webhooks/${c}`,
    tdb,
    boss,
    rt,
    server,
    logs,
    connectionId,
    stop,
    rows: async () => (await tdb.pool.query('SELECT * FROM webhook_deliveries ORDER BY id')).rows,
    jobs: async () => (await tdb.pool.query(`SELECT id, data FROM pgboss.job WHERE name = 'deliveries' ORDER BY created_on`)).rows,
    // The rows jobs hold: every row that names the job (its jobId).
    jobbed: async (c?: number) =>
      (
        await tdb.pool.query(
          `SELECT w.id FROM pgboss.job j JOIN webhook_deliveries w ON w.job_id = j.data->>'jobId'
             WHERE j.name = 'deliveries' AND w.connection_id = (j.data->>'connectionId')::bigint
               AND ($1::bigint IS NULL OR w.connection_id = $1)
           ORDER BY 1`,
          [c ?? null],
        )
      ).rows.map((r) => Number(r.id)),
    queued: async (c?: number) =>
      (
        await tdb.pool.query(
          `SELECT id FROM webhook_deliveries WHERE state = 'queued' AND ($1::bigint IS NULL OR connection_id = $1) ORDER BY id`,
          [c ?? null],
        )
      ).rows.map((r) => Number(r.id)),
  };
}

/**
 * A spec-profile sandbox, a receiver, and a token connection `acme` to the sandbox; `admin` posts to the
 * sandbox's admin routes.
 */
export async function sandboxWorld(t: Teardown) {
  const sb = await startSandbox({ variants: 5, clientSecret: SECRET, profile: 'spec' });
  t.teardown(() => sb.close());
  const h = await startReceiver(t, { config: { TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64') } });
  const deps = { db: h.tdb.db, config: h.rt.config, log: h.logs.log, clients: h.rt.clients };
  const connection = await addTokenConnection(deps, { baseUrl: sb.url, token: sb.token, name: 'acme' });
  const admin = (path: string, body: unknown = {}) =>
    fetch(`${sb.url}/__sandbox/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sb.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<any>);
  // Flushes the service's deliveries until none is left to send. One flush waits for the attempts it makes, not
  // for the retry of one that failed (a slow answer on a loaded machine): those would be missing from the rows.
  const deliverAll = async () => {
    for (let i = 0; i < 20; i++) {
      await admin('deliveries/flush');
      const stats = await fetch(`${sb.url}/__sandbox/stats`, { headers: { authorization: `Bearer ${sb.adminToken}` } }).then(
        (r) => r.json() as Promise<any>,
      );
      if (stats.deliveries.pending === 0) return;
    }
    throw new Error('the service still has deliveries to send after 20 flushes');
  };
  return { sb, h, deps, connection, admin, deliverAll };
}

export function payload(objectId: number, event = 'variants.stock_level_update'): string {
  return JSON.stringify({
    object_id: objectId,
    event,
    timestamp: 1_700_000_000,
    resource_url: `http://127.0.0.1:1/variants/${objectId}.json`,
  });
}

/** POSTs a delivery; by default correctly signed with a delivery id. */
export function deliver(url: string, body: string | Buffer, headers: Record<string, string | null> = {}): Promise<Response> {
  const h: Record<string, string> = { 'content-type': 'application/json' };
  const all = { 'x-service-signature': sign(body), 'x-service-delivery': `d-${Math.random().toString(36).slice(2)}`, ...headers };
  for (const [k, v] of Object.entries(all)) if (v !== null) h[k] = v;
  return fetch(url, { method: 'POST', body, headers: h });
}

/** A TCP proxy in front of PostgreSQL that a test can cut (database unreachable) and restore. */
export async function pgProxy(t: Teardown, target: string): Promise<{ url: string; cut(): Promise<void>; restore(): Promise<void> }> {
  const u = new URL(target);
  const proxy = await startTcpProxy(t, { host: u.hostname, port: Number(u.port || 5432) });
  return { url: proxy.wrap(target), cut: () => proxy.close(), restore: () => proxy.reopen() };
}
