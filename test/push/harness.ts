// A push test's world: a fresh database, the sandbox over HTTP, a connection to it, the variants mirrored,
// and the push worker running in this process.
import { pushHandler } from '../../src/push/worker.ts';
import { addTokenConnection } from '../../src/api/connections.ts';
import type { Config } from '../../src/config.ts';
import type { Connection, PushKind, PushOperation } from '../../src/db/schema.ts';
import type { Boss } from '../../src/queue/boss.ts';
import { createQueues } from '../../src/queue/queues.ts';
import { workQueues } from '../../src/worker/handlers.ts';
import { startSandbox, type Sandbox, type SandboxOptions } from '@commerce-sync/sandbox';
import { enqueueOperation } from '../../src/push/enqueue.ts';
import { getOperation } from '../../src/db/operations.ts';
import type { Runtime } from '../../src/runtime.ts';
import type { SyncDeps } from '../../src/sync/state.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase, type TestDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { testRuntime } from '../support/runtime.ts';
import { sandboxAdmin, sandboxProfile, type Profile } from '../support/sandbox.ts';
import type { Teardown } from '../support/teardown.ts';

export interface Harness {
  sb: Sandbox;
  tdb: TestDatabase;
  boss: Boss;
  /** What the push job's handler gets (runPushJob). */
  rt: SyncDeps;
  runtime: Runtime;
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
  t: Teardown,
  opts: {
    config?: Parameters<typeof testConfig>[0];
    sandbox?: SandboxOptions;
    worker?: boolean;
    profile?: Profile;
  } = {},
): Promise<Harness> {
  const config = testConfig({ API_MAX_ATTEMPTS: 3, ...opts.config });
  const { log } = captureLogger('warn');
  const tdb = await testDatabase(t);
  const sb = await startSandbox({ variants: 20, locations: 2, timeScale: 100, ...sandboxProfile(opts.profile), ...opts.sandbox });
  t.teardown(() => sb.close());
  const runtime = await testRuntime(t, tdb, config, log, { boss: { supervise: true, schedule: false, max: 4 } });
  const boss = runtime.boss;
  const rt = { ...runtime.workerDeps(), log };
  const connection = await addTokenConnection(rt, { baseUrl: sb.url, token: sb.token, name: 'shop' });
  const call = sandboxAdmin(sb);
  const admin = (path: string, body?: unknown) => call(body === undefined ? 'GET' : 'POST', path, body);
  const snapshot = async (resource: string) => (await admin(`snapshot?resource=${resource}`))[resource] as any[];
  const h: Harness = {
    sb,
    tdb,
    boss,
    rt,
    runtime,
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
  if (opts.worker !== false) {
    await createQueues(boss, config);
    runtime.onStop.push(await workQueues(rt, [pushHandler], { pollingIntervalSeconds: 0.5 }));
  } else await createQueues(boss);
  return h;
}

/** Variants whose stock is tracked, with a SKU, not bundles: safe to order and count. */
export function plainVariants(variants: any[]): any[] {
  return variants.filter((v) => v.sku && v.status !== 'archived' && !v.composite && v.manage_stock !== false);
}

export const onHand = (v: any, locationId: number): string =>
  String(v.locations?.find((l: any) => Number(l.location_id) === locationId)?.stock_on_hand ?? '0');

/** An import-order's input for an existing company, issued 2026-11-21 (the shape most push tests order with). */
export function orderInput(
  companyId: number,
  channel: string,
  channelOrderId: string,
  lines: { sku: string; quantity: string }[],
  currency = 'SGD',
) {
  return { channel, channel_order_id: channelOrderId, customer: { company_id: companyId }, currency, issued_at: '2026-11-21', lines };
}
