// How long a channel's recomputation takes: --variants mirrored variants (two stock locations each,
// one in 20 a bundle of two others), then: the default channel's first computation, a channel added, a change of
// its rules that moves every quantity, and one that moves none; each in batches of 1000 variants a transaction
// (src/stock/channel.ts recomputeWholeChannel). Then a hold of 10 SKUs in three channels, and a mirror write of
// 1000 variants recomputed in every channel. Prints each with the machine it ran on.
//
//   node_modules/.bin/node bench/channels/recompute.ts [--variants 100000]
//
// Set DATABASE_URL to use an existing PostgreSQL (a scratch database is made on it and dropped).
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { createDb, createPool } from '../../src/db/index.ts';
import { createLogger } from '../../src/log.ts';
import { applyRulesIfChanged, recomputeChannel } from '../../src/stock/recompute.ts';
import { addChannel, changeChannel, findChannel } from '../../src/channels/channels.ts';
import { createHold } from '../../src/channels/holds.ts';
import { rulesFrom } from '../../src/stock/rules.ts';
import { scratchDatabase } from '../support/database.ts';

const { values: args } = parseArgs({ options: { variants: { type: 'string', default: '100000' } } });
const n = Number(args.variants);
const log = createLogger('warn', { destination: process.stderr, pretty: false });
const settings = { CHANNEL_LOCATIONS: '', CHANNEL_SAFETY_BUFFER: '0', CHANNEL_HOLD_MINUTES: 60, SERVICE_CLOCK_MARGIN_SECONDS: 5 };

const scratch = await scratchDatabase('channels', log);
const pool = createPool(scratch.url, 4);
const db = createDb(pool);
try {
  console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(1)} GB; ${n} variants`);
  const c = Number(
    (
      await db
        .insertInto('connections')
        .values({ name: 'bench', base_url: 'http://bench', auth_kind: 'token' })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id,
  );
  await sql`INSERT INTO variants (connection_id, id, sku, status, composite, manage_stock, keep_selling, max_online, raw)
    SELECT ${c}, i, 'SKU-' || i, 'active', i % 20 = 0, true, false, CASE WHEN i % 7 = 0 THEN 30 END, '{}'
    FROM generate_series(1, ${n}) i`.execute(db);
  await sql`INSERT INTO stock_levels (connection_id, variant_id, location_id, on_hand, committed, incoming, raw)
    SELECT ${c}, i, l, (i * l) % 97 + 0.5, i % 3, 0, '{}' FROM generate_series(1, ${n}) i, generate_series(1, 2) l
    WHERE i % 20 <> 0`.execute(db);
  await sql`INSERT INTO compositions (connection_id, bundle_id, component_id, quantity, raw)
    SELECT ${c}, i, i - k, k, '{}' FROM generate_series(20, ${n}, 20) i, generate_series(1, 2) k`.execute(db);
  await sql`ANALYZE`.execute(db);

  const timed = async (what: string, run: () => Promise<string>) => {
    const started = performance.now();
    const detail = await run();
    const ms = performance.now() - started;
    console.log(`${what.padEnd(66)} ${(ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(1)} s`).padStart(8)}  ${detail}`);
  };
  await timed(
    'default channel, first computation (every quantity new)',
    async () => `${await applyRulesIfChanged(db, settings, c)} changes`,
  );
  await timed('channel added (location 1, buffer 5)', async () => {
    const r = await addChannel(db, c, { name: 'marketplace', locations: [1], buffer_units: '5' });
    return `${r.recomputed.changes} changes`;
  });
  await timed('its rules changed: buffer 10% at least 2 (most quantities move)', async () => {
    const r = await changeChannel(db, await findChannel(db, 'marketplace'), { buffer_units: '2', buffer_percent: '10' });
    return `${r.recomputed.changes} changes`;
  });
  await timed('its rules changed: max_online no longer caps (few move)', async () => {
    const r = await changeChannel(db, await findChannel(db, 'marketplace'), { cap_max_online: false });
    return `${r.recomputed.changes} changes`;
  });
  await addChannel(db, c, { name: 'wholesale', buffer_units: '1' });
  await timed('a hold of 10 SKUs, in 3 channels (one transaction)', async () => {
    const lines = Array.from({ length: 10 }, (_, i) => ({ sku: `SKU-${i * 3 + 1}`, quantity: '1' }));
    const r = await createHold(db, settings, {
      connectionId: c,
      channel: 'marketplace',
      source: 'api',
      input: { channel_order_id: 'B-1', lines },
    });
    return `${r.changes.length} changes`;
  });
  await sql`UPDATE stock_levels SET on_hand = on_hand + 1 WHERE connection_id = ${c} AND variant_id <= 1000`.execute(db);
  await timed('a mirror write of 1000 variants, 3 channels (one transaction)', async () => {
    const ids = Array.from({ length: 1000 }, (_, i) => i + 1);
    const r = await db.transaction().execute((tx) => recomputeChannel(tx, rulesFrom(settings), c, ids, { kind: 'sweep' }));
    return `${r.length} changes`;
  });
} finally {
  await db.destroy();
  await scratch.close();
}
