// A push test's world: a fresh database, the sandbox over HTTP, a connection to it, the variants mirrored,
// and the push worker running in this process.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { addTokenConnection } from '../../src/api/connections.ts';
import type { Config } from '../../src/config.ts';
import type { Connection, PushKind, PushOperation } from '../../src/db/schema.ts';
import { startBoss, stopBoss, type Boss } from '../../src/queue/boss.ts';
import { createQueues } from '../../src/queue/names.ts';
import { startSandbox, type Sandbox, type SandboxOptions } from '@commerce-sync/sandbox';
import { enqueueOperation } from '../../src/push/enqueue.ts';
import { getOperation } from '../../src/db/operations.ts';
import { startPushWorker, type PushRuntime } from '../../src/push/worker.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase, type TestDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { sandboxAdmin, sandboxProfile, type Profile } from '../support/sandbox.ts';

interface T {
  teardown(fn: () => unknown): void;
}

export interface Harness {
  sb: Sandbox;
  tdb: TestDatabase;
  boss: Boss;
  rt: PushRuntime;
  config: Config;
  connection: Connection;
  admin(path: string, body?: unknown): Promise<any>;
  snapshot(resource: string): Promise<any[]>;
  faults(f: unknown): Promise<void>;
  push(kind: PushKind, input: unknown): Promise<PushOperation>;
  settle(id: number, timeoutMs?: number): Promise<PushOperation>;
  run(kind: PushKind, input: unknown): Promise<PushOperation>;
  mirrorVariants(): Promise<any[]>;
}

export async function harness(
  t: T,
  opts: {
    config?: Parameters<typeof testConfig>[0];
    sandbox?: SandboxOptions;
    worker?: boolean;
    profile?: Profile;
    /** Every update (PUT) answers 204 with no body, as the real service documents (see updatesWithoutBody). */
    updatesWithoutBody?: boolean;
  } = {},
): Promise<Harness> {
  const config = testConfig({ API_MAX_ATTEMPTS: 3, ...opts.config });
  const { log } = captureLogger('warn');
  const tdb = await testDatabase(t);
  const sb = await startSandbox({ variants: 20, locations: 2, timeScale: 100, ...sandboxProfile(opts.profile), ...opts.sandbox });
  t.teardown(() => sb.close());
  const boss = await startBoss(tdb.url, log, { supervise: true, schedule: false, max: 4 });
  const rt: PushRuntime = { config, log, database: { url: tdb.url, pool: tdb.pool, db: tdb.db, close: async () => {} }, boss, onStop: [] };
  t.teardown(async () => {
    for (const stop of [...rt.onStop].reverse()) await stop();
    await stopBoss(boss, false);
  });
  const baseUrl = opts.updatesWithoutBody ? await updatesWithoutBody(t, sb.url) : sb.url;
  const connection = await addTokenConnection({ db: tdb.db, config, log }, { baseUrl, token: sb.token, name: 'shop' });
  const call = sandboxAdmin(sb);
  const admin = (path: string, body?: unknown) => call(body === undefined ? 'GET' : 'POST', path, body);
  const snapshot = async (resource: string) => (await admin(`snapshot?resource=${resource}`))[resource] as any[];
  const h: Harness = {
    sb,
    tdb,
    boss,
    rt,
    config,
    connection,
    admin,
    snapshot,
    faults: async (f) => {
      await admin('faults', f);
    },
    push: (kind, input) => enqueueOperation({ db: tdb.db, boss }, kind, input),
    async settle(id, timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const op = (await getOperation(tdb.db, id))!;
        if (op.state === 'confirmed' || op.state === 'failed') return op;
        if (Date.now() > until) throw new Error(`operation ${id} still ${op.state} (${op.reason ?? ''}) after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async run(kind, input) {
      return h.settle((await h.push(kind, input)).id);
    },
    // What the sync worker would keep: the mirror of variants (here straight from the sandbox's snapshot).
    async mirrorVariants() {
      const variants = await snapshot('variants');
      await tdb.db.deleteFrom('variants').where('connection_id', '=', connection.id).execute();
      if (variants.length) {
        await tdb.db
          .insertInto('variants')
          .values(
            variants.map((v) => ({
              connection_id: connection.id,
              id: v.id,
              sku: v.sku,
              status: v.status ?? 'active',
              product_id: v.product_id ?? null,
              composite: !!v.composite,
              manage_stock: v.manage_stock !== false,
              keep_selling: !!v.keep_selling,
              updated_at: v.updated_at ?? null,
              created_at: v.created_at ?? null,
              raw: JSON.stringify(v),
            })),
          )
          .execute();
      }
      return variants;
    },
  };
  await h.mirrorVariants();
  if (opts.worker !== false) await startPushWorker(rt, { pollingIntervalSeconds: 0.5 });
  else await createQueues(boss);
  return h;
}

/** Variants whose stock is tracked, with a SKU, not bundles: safe to order and count. */
export function plainVariants(variants: any[]): any[] {
  return variants.filter((v) => v.sku && v.status !== 'archived' && !v.composite && v.manage_stock !== false);
}

export const onHand = (v: any, locationId: number): string =>
  String(v.locations?.find((l: any) => Number(l.location_id) === locationId)?.stock_on_hand ?? '0');

/**
 * A proxy in front of the sandbox that answers every successful PUT with 204 and no body, keeping the
 * headers (rate limit, Date, request id): the real service answers every update so (real-service-notes §7),
 * while the sandbox, both profiles, still answers `PUT /fulfillments/{id}` with the record. Returns its URL.
 */
async function updatesWithoutBody(t: T, target: string): Promise<string> {
  const notForwarded = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'content-encoding']);
  const server = createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const headers = Object.entries(req.headers).flatMap(([k, v]) =>
        notForwarded.has(k) || v === undefined ? [] : [[k, String(v)] as [string, string]],
      );
      const answer = await fetch(`${target}${req.url}`, {
        method: req.method,
        headers,
        body: chunks.length ? Buffer.concat(chunks) : undefined,
      });
      const body = Buffer.from(await answer.arrayBuffer());
      const out: Record<string, string> = {};
      answer.headers.forEach((v, k) => {
        if (!notForwarded.has(k)) out[k] = v;
      });
      if (req.method === 'PUT' && answer.ok) {
        delete out['content-type'];
        res.writeHead(204, out).end();
      } else res.writeHead(answer.status, out).end(body);
    } catch (err) {
      res.writeHead(502).end(String(err));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
