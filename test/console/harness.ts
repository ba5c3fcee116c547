// A console role on a real HTTP server over a fresh test database, with pg-boss and the queues created,
// plus small helpers to put connections, variants, deliveries and log entries in place.
import { createHmac } from 'node:crypto';
import { createQueues } from '../../src/queue/queues.ts';
import type { Boss } from '../../src/queue/boss.ts';
import type { Server } from '../../src/server.ts';
import type { Runtime } from '../../src/runtime.ts';
import type { Db } from '../../src/db/index.ts';
import { mirror, variant } from '../channels/harness.ts';
import { testConfig } from '../support/config.ts';
import { testDatabase, type TestDatabase } from '../support/db.ts';
import { captureLogger } from '../support/log.ts';
import { testConsole } from '../support/runtime.ts';
import type { Teardown } from '../support/teardown.ts';

export interface ConsoleServer {
  base: string;
  db: Db;
  boss: Boss;
  tdb: TestDatabase;
  rt: Runtime;
  server: Server;
  logLines: () => Record<string, unknown>[];
}

/**
 * Where `addConnection` says its connections live. With `demo: true` the harness's demo sandbox is taken to be
 * there, so connections added by `addConnection` are the sandbox's and the console stays in open demo mode.
 */
export const HARNESS_SERVICE_URL = 'http://127.0.0.1:9';

/** The signing secret deliveries to a harness with `receiver: true` are signed with. */
export const CLIENT_SECRET = 'console-test-secret';

/**
 * A console on port 0. `receiver: true` also mounts the real receiver role (POST /webhooks/:connection),
 * so a test can send a signed delivery and watch it arrive.
 */
export async function consoleServer(
  t: Teardown,
  opts: { token?: string; demo?: boolean; receiver?: boolean; config?: Parameters<typeof testConfig>[0] } = {},
): Promise<ConsoleServer> {
  const tdb = await testDatabase(t);
  const config = testConfig({ OPERATOR_TOKEN: opts.token ?? '', COMMERCE_CLIENT_SECRET: CLIENT_SECRET, ...opts.config });
  const { log, lines: logLines } = captureLogger('warn');
  const { rt, server } = await testConsole(t, tdb, config, log, {
    receiver: opts.receiver,
    demo: opts.demo ? { baseUrl: HARNESS_SERVICE_URL } : false,
  });
  await createQueues(rt.boss);
  return { base: rt.publicUrl, db: tdb.db, boss: rt.boss, tdb, rt, server, logLines };
}

export async function addConnection(db: Db, name: string, extra: { accountName?: string } = {}): Promise<number> {
  const row = await db
    .insertInto('connections')
    .values({
      name,
      base_url: HARNESS_SERVICE_URL,
      auth_kind: 'token',
      account_name: extra.accountName ?? `${name} account`,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function addVariant(
  db: Db,
  connectionId: number,
  v: { id: number; sku: string; name?: string; stock?: { location: number; onHand: string; committed?: string }[] },
): Promise<void> {
  await db
    .insertInto('variants')
    .values({
      connection_id: connectionId,
      id: v.id,
      sku: v.sku,
      name: v.name ?? v.sku,
      status: 'active',
      raw: JSON.stringify({ id: v.id, sku: v.sku }),
      updated_at: new Date(),
    })
    .execute();
  for (const s of v.stock ?? []) {
    await db
      .insertInto('locations')
      .values({ connection_id: connectionId, id: s.location, name: `Warehouse ${s.location}`, status: 'active', raw: '{}' })
      .onConflict((oc) => oc.doNothing())
      .execute();
    await db
      .insertInto('stock_levels')
      .values({
        connection_id: connectionId,
        variant_id: v.id,
        location_id: s.location,
        on_hand: s.onHand,
        committed: s.committed ?? '0',
        incoming: '0',
        bin_location: null,
        reorder_point: null,
        raw: '{}',
        updated_at: new Date(),
      })
      .execute();
  }
}

/** A connection's API budget row: 300 requests a window, `remaining` of them left, the window ending at `resetAt`. */
export async function addBudget(
  db: Db,
  connectionId: number,
  b: { remaining: number; resetAt: Date; resetKnown?: boolean; inFlight?: number },
): Promise<void> {
  await db
    .insertInto('api_budgets')
    .values({
      connection_id: connectionId,
      request_limit: 300,
      remaining: b.remaining,
      reset_at: b.resetAt,
      ...(b.resetKnown === undefined ? {} : { reset_known: b.resetKnown }),
      ...(b.inFlight === undefined ? {} : { in_flight: b.inFlight }),
    })
    .execute();
}

let deliverySeq = 0;
export async function addDelivery(
  db: Db,
  connectionId: number,
  d: { resource?: string; action?: string; objectId?: number; state?: 'queued' | 'processed' | 'failed'; error?: string } = {},
): Promise<number> {
  const row = await db
    .insertInto('webhook_deliveries')
    .values({
      connection_id: connectionId,
      delivery_id: `test-${process.pid}-${++deliverySeq}`,
      event: `${d.resource ?? 'variant'}s/${d.action ?? 'update'}`,
      resource: d.resource ?? 'variant',
      action: d.action ?? 'update',
      object_id: d.objectId ?? 1,
      body: '{}',
      state: d.state ?? 'processed',
      error: d.error ?? null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** Reads an SSE response until `until` says stop (or the reader ends); returns the parsed `log` events. */
export async function readEvents(
  res: Response,
  until: (events: { id: string; data: Record<string, unknown> }[]) => boolean,
): Promise<{ id: string; data: Record<string, unknown> }[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const events: { id: string; data: Record<string, unknown> }[] = [];
  let buf = '';
  while (!until(events)) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const chunk = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const fields = Object.fromEntries(
        chunk
          .split('\n')
          .filter((l) => !l.startsWith(':') && l.includes(':'))
          .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trimStart()]),
      );
      if (fields.event === 'log') events.push({ id: fields.id!, data: JSON.parse(fields.data!) });
    }
  }
  await reader.cancel().catch(() => {});
  return events;
}

/** POSTs a delivery signed like the service signs them (Base64 HMAC-SHA256 of the body). */
export async function sendDelivery(
  base: string,
  connection: string,
  payload: { event: string; object_id: number },
  deliveryId: string,
): Promise<Response> {
  const body = JSON.stringify({
    ...payload,
    timestamp: Math.floor(Date.now() / 1000),
    resource_url: `http://127.0.0.1:9/${payload.event.split('.')[0]}/${payload.object_id}.json`,
  });
  return fetch(`${base}/webhooks/${connection}`, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      'x-service-delivery': deliveryId,
      'x-service-signature': createHmac('sha256', CLIENT_SECRET).update(body).digest('base64'),
    },
  });
}

/**
 * Three channels of one connection that show three different quantities of the same variant: the mirror's write
 * makes the `default` channel (both locations), the JSON API adds `marketplace` (the warehouse only, 2 units back)
 * and `wholesale` (1 unit or 10%, no cap) with an own buffer of 4 for the SKU.
 * SKU-1 has 10 in the warehouse and 5 on the shop floor: default 15, marketplace 8, wholesale 11.
 */
export async function threeChannels(db: Db, base: string, token: string) {
  const shop = await addConnection(db, 'shop');
  for (const [id, name] of [
    [1, 'Warehouse'],
    [2, 'Shop floor'],
  ] as const)
    await db.insertInto('locations').values({ connection_id: shop, id, name, status: 'active', raw: '{}' }).execute();
  await mirror(db, shop, [variant(1, { 1: ['10'], 2: ['5'] }), variant(2, { 1: ['3'], 2: ['0'] })]);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as any;
  };
  await call('POST', '/api/channels', { connection: 'shop', name: 'marketplace', locations: [1], buffer_units: '2' });
  await call('POST', '/api/channels', {
    connection: 'shop',
    name: 'wholesale',
    buffer_units: '1',
    buffer_percent: '10',
    cap_max_online: false,
  });
  await call('PUT', '/api/channels/wholesale/overrides/SKU-1?connection=shop', { mode: 'buffer', buffer_units: '4' });
  const channels = (await call('GET', '/api/channels?connection=shop')).channels as { id: number; name: string }[];
  const id = (name: string) => channels.find((c) => c.name === name)!.id;
  return { shop, call, channel: { default: id('default'), marketplace: id('marketplace'), wholesale: id('wholesale') } };
}
