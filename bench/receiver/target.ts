// One server under test, in its own process (so the load generator does not share its event loop):
//   receiver  our receiver (role.ts mounted as `start` mounts it): verify, group commit row + job + sync log
//   bare      a bare Koa handler answering 200
//   naive     the receiver the design card describes, written the plain way: verify the signature, then one pg-boss
//             send per delivery whose job id is derived from the delivery id (a duplicate sends nothing), answer 200
//             after it committed: the same promise as ours (deduplicated, job-linked, committed before the answer)
//   verify    (diagnostic) our read + verify + parse without the database, answering 200
//   anchor    the simplest receiver a user could write: Koa, verify the signature, one INSERT per request into
//             a table of its own (synchronous_commit on), answer 200
// Prints `READY <port>` when listening; SIGTERM stops it gracefully.
import Koa from 'koa';
import Router from '@koa/router';
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { loadConfig } from '../../src/config.ts';
import { createDb, createPool } from '../../src/db/index.ts';
import { createLogger } from '../../src/log.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { createQueues } from '../../src/queue/queues.ts';
import { mount } from '../../src/receiver/role.ts';
import { createRuntime } from '../../src/runtime.ts';
import { listen } from '../../src/server.ts';
import { deliveriesQueue } from '../../src/queue/contracts.ts';

const [scenario, url] = process.argv.slice(2) as [string, string];
const log = createLogger('warn', { destination: process.stderr, pretty: false });
const config = loadConfig({ ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' });
const stops: (() => Promise<void>)[] = [];
let app: Koa;

/**
 * What a user's own receiver does before storing: read the whole body, check the HMAC in constant time. The
 * body, or null after answering 401. (The anchor and the naive scenario share it, so they differ only in what
 * they store.)
 */
async function simpleVerifiedBody(ctx: Koa.Context): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  for await (const c of ctx.req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks);
  const expected = Buffer.from(createHmac('sha256', config.COMMERCE_CLIENT_SECRET).update(raw).digest('base64'));
  const given = Buffer.from(ctx.get('x-service-signature').trim());
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    ctx.status = 401;
    return null;
  }
  return raw;
}

if (scenario === 'bare') {
  app = new Koa();
  const router = new Router();
  router.post('/webhooks/:connection', (ctx) => {
    ctx.body = { ok: true };
  });
  app.use(router.routes());
} else if (scenario === 'verify') {
  // Diagnostic: our receiver's whole request path except the database (read, verify, parse), answering 200.
  const { readRawBody } = await import('../../src/receiver/body.ts');
  const { verifySignature, signingSecrets } = await import('../../src/receiver/verify.ts');
  const { parseDelivery } = await import('../../src/receiver/payload.ts');
  app = new Koa();
  const router = new Router();
  router.post('/webhooks/:connection', async (ctx) => {
    const raw = await readRawBody(ctx.req, config.WEBHOOK_BODY_LIMIT);
    if (!verifySignature(raw, ctx.get('x-service-signature'), signingSecrets(config))) {
      ctx.status = 401;
      return;
    }
    ctx.body = { ok: parseDelivery(raw).ok };
  });
  app.use(router.routes());
} else if (scenario === 'anchor') {
  const pool = createPool(url, 10); // pg's default pool size: what a user who writes this gets
  await pool.query(`CREATE TABLE IF NOT EXISTS anchor_deliveries (delivery_id text PRIMARY KEY, connection text NOT NULL,
    body jsonb NOT NULL, received_at timestamptz NOT NULL DEFAULT now())`);
  stops.push(() => pool.end());
  app = new Koa();
  const router = new Router();
  router.post('/webhooks/:connection', async (ctx) => {
    const raw = await simpleVerifiedBody(ctx);
    if (!raw) return;
    // synchronous_commit is the server's default (on; run.ts prints it): the 200 follows a durable commit.
    await pool.query('INSERT INTO anchor_deliveries (delivery_id, connection, body) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
      ctx.get('x-service-delivery'),
      ctx.params.connection,
      raw.toString('utf8'),
    ]);
    ctx.body = { ok: true };
  });
  app.use(router.routes());
} else if (scenario === 'naive') {
  const boss = await startBoss(url, log, { supervise: false, schedule: false, max: 10 });
  await createQueues(boss);
  stops.push(() => stopBoss(boss));
  app = new Koa();
  const router = new Router();
  router.post('/webhooks/:connection', async (ctx) => {
    const raw = await simpleVerifiedBody(ctx);
    if (!raw) return;
    const body = JSON.parse(raw.toString('utf8'));
    const connection = ctx.params.connection!;
    const deliveryId = ctx.get('x-service-delivery');
    // pg-boss job ids are UUIDs: the delivery's, derived (SHA-256 of connection and delivery id, as a v8 UUID).
    const h = createHash('sha256').update(`${connection}\u0000${deliveryId}`).digest('hex');
    const id = `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((Number.parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
    await boss.send(
      deliveriesQueue.name,
      { connection, deliveryId, event: body.event, objectId: body.object_id, body: raw.toString('utf8') } as never,
      {
        id,
      },
    );
    ctx.body = { ok: true };
  });
  app.use(router.routes());
} else if (scenario === 'receiver') {
  const pool = createPool(url, 2);
  const db = createDb(pool);
  stops.push(() => db.destroy());
  const rt = await createRuntime(config, log, {
    database: { url, pool, db, close: async () => {} },
    boss: { supervise: false, schedule: false, max: 4 },
  });
  stops.push(() => rt.stop());
  app = rt.app;
  await mount(rt);
} else {
  throw new Error(`unknown scenario ${scenario}`);
}

const server = await listen(app, 0, '127.0.0.1');
process.stdout.write(`READY ${server.port}\n`);
process.once('SIGTERM', async () => {
  await server.close(2000);
  for (const s of stops.reverse()) await s().catch(() => {});
  process.exit(0);
});
