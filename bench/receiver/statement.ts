// PostgreSQL's CPU per delivery of the receiver's batch statement alone, without HTTP: batches of --batch deliveries
// stored by storeDeliveries (rows, wait row, job: what a receiver commit runs) from two connections, beside a bare
// INSERT ... SELECT FROM json_to_recordset into the same table and the anchor's one-row insert and commit (bench/receiver
// target.ts). An embedded PostgreSQL with synchronous_commit off (a flush costs nothing, so a commit is CPU); its CPU
// is read from /proc for the postmaster and its children. Run:
//   node_modules/.bin/node bench/receiver/statement.ts [--batches 3000] [--batch 12]
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { createPool } from '../../src/db/index.ts';
import { deliveriesJson, type NewDelivery } from '../../src/db/deliveries.ts';
import { createQueues } from '../../src/queue/queues.ts';
import { createLogger } from '../../src/log.ts';
import { startBoss, stopBoss } from '../../src/queue/boss.ts';
import { storeDeliveries } from '../../src/receiver/store.ts';
import { postgresCpuSeconds } from '../freshness/world.ts';
import { scratchDatabase } from '../support/database.ts';

const { values: args } = parseArgs({ options: { batches: { type: 'string', default: '3000' }, batch: { type: 'string', default: '12' } } });
const batches = Number(args.batches);
const size = Number(args.batch);
const log = createLogger('warn', { destination: process.stderr, pretty: false });

const scratch = await scratchDatabase('statement', log, { server: 'embedded', synchronousCommit: 'off' });
const pool = createPool(scratch.url, 2);
const boss = await startBoss(scratch.url, log, { supervise: false, schedule: false, max: 2 });
await createQueues(boss);
const { rows } = await pool.query(
  `INSERT INTO connections (name, base_url, auth_kind) VALUES ('bench', 'http://127.0.0.1:1', 'token') RETURNING id`,
);
const connectionId = Number(rows[0].id);

/** CPU seconds of the embedded server: its postmaster and children, exited ones included. */
const postgresCpu = () => postgresCpuSeconds(scratch.postmaster)!;

let seq = 0;
/** One connection's batch, shaped as the receiver stores it: one candidate job for the connection's queued rows. */
function batchOf(n: number): NewDelivery[] {
  const jobId = randomUUID();
  return Array.from({ length: n }, () => {
    const id = ++seq;
    const body = `{"object_id":${id},"event":"variants.stock_level_update","timestamp":${Math.floor(Date.now() / 1000)},"resource_url":"http://127.0.0.1:1/variants/${id}.json"}`;
    return {
      connectionId,
      deliveryId: `bench-${id}`,
      event: 'variants.stock_level_update',
      resource: 'variant',
      action: 'stock_level_update',
      objectId: id,
      eventAt: new Date(),
      resourceUrl: `http://127.0.0.1:1/variants/${id}.json`,
      body,
      state: 'queued',
      error: null,
      jobId,
    };
  });
}

/** Runs `count` calls of `fn` from two connections at once (after a warm-up); PostgreSQL's CPU us per delivery. */
async function measure(label: string, fn: (batch: NewDelivery[]) => Promise<unknown>, count: number, n: number): Promise<void> {
  for (let i = 0; i < 100; i++) await fn(batchOf(n));
  let left = count;
  const cpu0 = postgresCpu();
  const t0 = performance.now();
  await Promise.all(
    [0, 1].map(async () => {
      while (left-- > 0) await fn(batchOf(n));
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const us = ((postgresCpu() - cpu0) / (count * n)) * 1e6;
  console.log(
    `${label.padEnd(58)} ${us.toFixed(1).padStart(6)} us of PostgreSQL per delivery, ${((count * n) / seconds).toFixed(0).padStart(6)} deliveries/s`,
  );
}

const bare = `INSERT INTO webhook_deliveries (connection_id, delivery_id, event, resource, action, object_id, event_at, resource_url, body, state, error, job_id)
  SELECT c, d, e, r, a, o, t, u, b, s, x, j FROM json_to_recordset($1::json)
    AS v(c bigint, d text, e text, r text, a text, o bigint, t timestamptz, u text, b text, s text, x text, j text)
  ON CONFLICT (connection_id, delivery_id) DO NOTHING RETURNING id`;
await pool.query(`CREATE TABLE anchor_deliveries (delivery_id text PRIMARY KEY, connection text NOT NULL, body jsonb NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now())`);
try {
  const cpus = os.cpus();
  console.log(
    `machine: ${cpus.length} x ${cpus[0]?.model ?? 'unknown cpu'}, node ${process.version}; embedded PostgreSQL, synchronous_commit=off`,
  );
  console.log(`${batches} batches of ${size} from two connections (the anchor: ${batches * size} one-row commits)`);
  await measure(`receiver batch (storeDeliveries: rows, wait row, job)`, (b) => storeDeliveries(pool, boss, b), batches, size);
  await measure(`bare INSERT ... SELECT FROM json_to_recordset, same table`, (b) => pool.query(bare, [deliveriesJson(b)]), batches, size);
  await measure(
    `anchor: one-row INSERT and commit`,
    (b) =>
      pool.query('INSERT INTO anchor_deliveries (delivery_id, connection, body) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
        b[0]!.deliveryId,
        'bench',
        b[0]!.body,
      ]),
    batches * size,
    1,
  );
} finally {
  await stopBoss(boss, false);
  await pool.end();
  await scratch.close();
}
