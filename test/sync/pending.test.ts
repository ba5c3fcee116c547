// Coalescing without a service: deliveries -> pending rows, claims, clears that respect re-marks, and a
// drain against an in-memory reader that counts its list calls.
import t from 'tap';
import { sql } from 'kysely';
import { addConnection, testDatabase } from '../support/db.ts';
import { memoryReader } from './harness.ts';
import { captureLogger } from '../support/log.ts';
import { consumeDeliveries } from '../../src/sync/intake.ts';
import { claimWithStamps, clearPending, markPending, type Mark } from '../../src/db/pending.ts';

const claimPending = async (db: Db, connectionId: number, resource: string, limit: number) =>
  (await claimWithStamps(db, connectionId, resource, limit)).claimed;
import { drainPending } from '../../src/sync/drain.ts';
import { rulesFrom } from '../../src/stock/rules.ts';
import type { Reader } from '../../src/api/live.ts';
import type { Db } from '../../src/db/index.ts';
import { claimPairs, duePendingPairs, releasePair, renewPairs, type ClaimedPair } from '../../src/db/drain-pairs.ts';

async function delivery(db: Db, connectionId: number, resource: string | null, objectId: number | null, n: number): Promise<number> {
  const row = await db
    .insertInto('webhook_deliveries')
    .values({
      connection_id: connectionId,
      delivery_id: `d${n}`,
      event: `${resource}s.create`,
      resource,
      action: 'create',
      object_id: objectId,
      body: '{}',
      state: 'queued',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

t.test('a burst of deliveries about few records makes few pending rows; unmirrored ones are unhandled', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  const jobs = [];
  for (let i = 0; i < 50; i++) {
    const objectId = 100 + (i % 5);
    jobs.push({
      kind: 'replay' as const,
      deliveryRowId: await delivery(db, c.id, 'variant', objectId, i),
      connectionId: c.id,
      resource: 'variant',
      action: 'stock_level_update',
      objectId,
    });
  }
  jobs.push({
    kind: 'replay' as const,
    deliveryRowId: await delivery(db, c.id, 'order', 7, 50),
    connectionId: c.id,
    resource: 'order',
    action: 'create',
    objectId: 7,
  });
  jobs.push({
    kind: 'replay' as const,
    deliveryRowId: await delivery(db, c.id, 'payment', 9, 51),
    connectionId: c.id,
    resource: 'payment',
    action: 'create',
    objectId: 9,
  });
  jobs.push({
    kind: 'replay' as const,
    deliveryRowId: await delivery(db, c.id, 'variant', null, 52),
    connectionId: c.id,
    resource: 'variant',
    action: 'create',
    objectId: null,
  });
  const r = await consumeDeliveries(db, jobs);
  t.same(r, {
    processed: 51,
    unhandled: 2,
    drains: [
      { connectionId: c.id, resource: 'variant' },
      { connectionId: c.id, resource: 'order' },
    ],
  });
  const rows = await db.selectFrom('pending_fetches').selectAll().orderBy('id').execute();
  t.same(
    rows.map((x) => [x.resource, x.id, x.marks]),
    [
      ['order', 7, 1],
      ['variant', 100, 10],
      ['variant', 101, 10],
      ['variant', 102, 10],
      ['variant', 103, 10],
      ['variant', 104, 10],
    ].sort((a, b) => Number(a[1]) - Number(b[1])),
  );
  t.ok(
    rows.every((x) => x.delivery_row_ids.length <= 20),
    'delivery ids kept, at most 20',
  );
  const states = await db
    .selectFrom('webhook_deliveries')
    .select(['state', 'error'])
    .where('state', '=', 'unhandled')
    .orderBy('id')
    .execute();
  t.same(
    states.map((s) => s.error),
    ['resource payment is not mirrored', 'delivery names no object_id'],
  );
  // The same batch again (a retried job) changes nothing but the marks.
  await consumeDeliveries(db, jobs);
  t.equal((await db.selectFrom('pending_fetches').select('id').execute()).length, 6);
});

t.test('a batch of deliveries about many connections makes their drains due in its own statement', async (t) => {
  const { db } = await testDatabase(t);
  const jobs = [];
  for (let i = 0; i < 20; i++) {
    const c = await addConnection(db, `shop-${i}`);
    jobs.push({
      kind: 'replay' as const,
      deliveryRowId: await delivery(db, c.id, 'variant', 100, i),
      connectionId: c.id,
      resource: 'variant',
      action: 'create',
      objectId: 100,
    });
  }
  const r = await consumeDeliveries(db, jobs);
  t.equal(r.drains.length, 20);
  const claimed = await claimPairs(db, 'w1', 50);
  t.same(claimed.map((p) => p.connectionId).sort(), jobs.map((j) => j.connectionId).sort(), 'every pair due, once');
});

t.test('drain pairs: one claim per pair, stock first, a mark while draining leaves it due after its window', async (t) => {
  const { db } = await testDatabase(t);
  const a = await addConnection(db, 'a');
  const b = await addConnection(db, 'b');
  await markPending(db, [
    { connectionId: a.id, resource: 'product', id: 1 },
    { connectionId: b.id, resource: 'variant', id: 1 },
  ]);
  const [first, second] = await Promise.all([claimPairs(db, 'w1', 1), claimPairs(db, 'w2', 1)]);
  t.same(
    [...first!, ...second!].map((p) => p.resource).sort(),
    ['product', 'variant'],
    'two workers claiming together take different pairs',
  );
  const all = [...first!, ...second!];
  const variant = all.find((p) => p.resource === 'variant')!;
  const product = all.find((p) => p.resource === 'product')!;
  t.same(await claimPairs(db, 'w3', 5), [], "a claimed pair is nobody else's");

  // A mark while the variant's drain runs: released as drained, it is due again once its window has passed.
  await markPending(db, [{ connectionId: b.id, resource: 'variant', id: 2 }]);
  const owner = (p: ClaimedPair) => (first!.includes(p) ? 'w1' : 'w2');
  await releasePair(db, owner(variant), variant, { drained: true, failed: false, seconds: 0 });
  const [again] = await claimPairs(db, 'w3', 5);
  t.match(again, { connectionId: b.id, resource: 'variant' }, 'marked meanwhile: due again');
  await releasePair(db, 'w3', again!, { drained: true, failed: false, seconds: 60 });
  await markPending(db, [{ connectionId: b.id, resource: 'variant', id: 3 }]);
  t.same(await claimPairs(db, 'w3', 5), [], 'not before its window has passed');

  // Stock first: both due, one slot.
  await sql`UPDATE drain_pairs SET next_at = now() - interval '1 second'`.execute(db);
  await releasePair(db, owner(product), product, { drained: false, failed: false, seconds: 0 });
  t.match(await claimPairs(db, 'w4', 1), [{ resource: 'variant' }], 'the stock pair goes first');
  const [other] = await claimPairs(db, 'w4', 1);
  t.match(other, { resource: 'product' });

  // A failed drain backs off.
  await releasePair(db, 'w4', other!, { drained: false, failed: true, seconds: 0 });
  const backoff = await sql<{ wait: number; failures: number }>`SELECT extract(epoch FROM next_at - now())::float8 AS wait, failures
    FROM drain_pairs WHERE connection_id = ${a.id}`.execute(db);
  t.match(backoff.rows[0], { failures: 1 });
  t.ok(backoff.rows[0]!.wait > 1 && backoff.rows[0]!.wait <= 2, 'the first retry after 2 s');

  // A killed worker: its drain had claimed the pair and its rows. While its claim is renewed, marks leave it
  // alone; once it lapses (no renewal), the next claim takes the pair over with the rows the dead drain held.
  await sql`UPDATE drain_pairs SET next_at = now() WHERE connection_id = ${a.id}`.execute(db);
  await markPending(db, [{ connectionId: a.id, resource: 'product', id: 1 }]);
  const [dead] = await claimPairs(db, 'dead', 1);
  t.match(dead, { connectionId: a.id, resource: 'product' });
  t.equal((await claimPending(db, a.id, 'product', 250)).length, 1, "the dead worker's drain claimed its row");
  await markPending(db, [{ connectionId: a.id, resource: 'product', id: 2 }]);
  t.equal(await renewPairs(db, 'dead', [dead!]), 1, 'renewed while its drain runs');
  t.equal(await renewPairs(db, 'w5', [dead!]), 0, "nobody renews another worker's claim");
  t.same(await claimPairs(db, 'w5', 5), [], 'a renewed claim is left alone, marks or not');
  await sql`UPDATE drain_pairs SET claimed_until = now() - interval '1 second' WHERE connection_id = ${a.id}`.execute(db);
  t.match(await claimPairs(db, 'w5', 5), [{ connectionId: a.id, resource: 'product' }], 'a lapsed claim is taken over');
  t.same(
    (await claimPending(db, a.id, 'product', 250)).map((r) => r.id).sort(),
    [1, 2],
    'with the rows the dead drain had claimed, without waiting for their lease',
  );
  t.equal(await renewPairs(db, 'dead', [dead!]), 0, 'the dead worker, were it back, holds nothing');
  await sql`UPDATE pending_fetches SET claimed_until = NULL WHERE connection_id = ${a.id}`.execute(db);

  // The safety net: rows whose pair is not due (a lapsed claim of a killed drain) make it due again.
  await releasePair(db, 'w5', { connectionId: a.id, resource: 'product', claimedSeq: 1e9 }, { drained: true, failed: false, seconds: 0 });
  t.same(await claimPairs(db, 'w5', 5), [], 'nothing due');
  t.equal(await duePendingPairs(db), 1, 'a pair with unclaimed rows is due again');
  t.match(await claimPairs(db, 'w5', 5), [{ connectionId: a.id, resource: 'product' }]);
  await sql`DELETE FROM drain_pairs`.execute(db);
  await markPending(db, [{ connectionId: b.id, resource: 'fulfillment', id: 1 }]);
  t.equal(await duePendingPairs(db), 2, 'the pairs the delete took, made again');
  const tiers = await sql<{ resource: string; tier: number }>`SELECT resource, tier FROM drain_pairs ORDER BY resource`.execute(db);
  t.same(
    tiers.rows,
    [
      { resource: 'fulfillment', tier: 0 },
      { resource: 'product', tier: 1 },
      { resource: 'variant', tier: 0 },
    ],
    'stock pairs are tier 0 however they are made (a mark, the safety net)',
  );
});

t.test('claims are disjoint; a clear keeps rows re-marked while they were being read', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  await markPending(
    db,
    Array.from({ length: 10 }, (_, i) => ({ connectionId: c.id, resource: 'variant', id: i + 1 })),
  );
  await sql`UPDATE pending_fetches SET first_marked_at = now() - interval '1 hour'`.execute(db);
  const [a, b] = await Promise.all([claimPending(db, c.id, 'variant', 6), claimPending(db, c.id, 'variant', 6)]);
  t.equal(a!.length + b!.length, 10, 'together they took everything');
  t.same(
    a!.map((x) => x.id).filter((id) => b!.some((y) => y.id === id)),
    [],
    'nothing taken twice',
  );
  await markPending(db, [{ connectionId: c.id, resource: 'variant', id: a![0]!.id, deliveryRowId: 77 }]);
  t.same(await claimPending(db, c.id, 'variant', 10), [], 'a mark leaves the claim: no second drain reads the row meanwhile');
  t.equal(await clearPending(db, c.id, 'variant', a!), a!.length - 1, 'the re-marked row stays');
  const left = await db
    .selectFrom('pending_fetches')
    .select(['id', 'claimed_until', 'marks', 'delivery_row_ids', sql<number>`extract(epoch FROM now() - first_marked_at)`.as('age')])
    .where('id', '=', a![0]!.id)
    .executeTakeFirstOrThrow();
  t.equal(left.claimed_until, null, 'and is claimable again');
  t.ok(Number(left.age) < 60, `its lag counts from the claim, not from its first mark an hour before, read since (${left.age} s)`);
  // A claim held past a minute (a drain waiting for the budget, or one that died) is freed by the next mark.
  const [held] = await claimPending(db, c.id, 'variant', 1);
  await sql`UPDATE pending_fetches SET claimed_until = now() + interval '200 seconds' WHERE id = ${held!.id}`.execute(db);
  await markPending(db, [{ connectionId: c.id, resource: 'variant', id: held!.id, deliveryRowId: 78 }]);
  t.same(
    (await claimPending(db, c.id, 'variant', 10)).map((x) => x.id),
    [held!.id],
    'a mark frees a claim older than a minute',
  );
  t.same([left.marks, left.delivery_row_ids.map(Number)], [1, [77]], 'holding only the mark made since the claim');
});

/** A stored variant.stock_level_update delivery about `objectId`, and the mark it makes. */
async function stockDelivery(db: Db, connectionId: number, objectId: number, deliveryId: string, eventAt: string | null): Promise<Mark> {
  const row = await db
    .insertInto('webhook_deliveries')
    .values({
      connection_id: connectionId,
      delivery_id: deliveryId,
      event: 'variants.stock_level_update',
      resource: 'variant',
      action: 'stock_level_update',
      object_id: objectId,
      event_at: eventAt,
      body: '{}',
      state: 'processed',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { connectionId, resource: 'variant', id: objectId, deliveryRowId: Number(row.id), reason: 'variant.stock_level_update' };
}

/** What a drain runs with here: the reader given, no channel rules of note, no clock margin unless asked. */
const drainDeps = (db: Db, client: Reader, clockMarginMs = 0) => ({
  db,
  log: captureLogger().log,
  client,
  rules: rulesFrom({ CHANNEL_LOCATIONS: '', CHANNEL_SAFETY_BUFFER: '0' }),
  clockMarginMs,
});

/** Mirrored variants whose updated_at is an hour old, each last read at its time on the service's clock. */
async function variantsReadAt(db: Db, connectionId: number, reads: readonly (readonly [number, string])[]) {
  for (const [id, readAt] of reads)
    await db
      .insertInto('variants')
      .values({ connection_id: connectionId, id, status: 'active', updated_at: '2026-01-01T11:00:00.000Z', raw: '{}', read_as_of: readAt })
      .execute();
}

t.test('a drain reads 250 ids a call, looks missing ones up once as archived, marks the rest gone', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  const v = (id: number, status = 'active') => ({
    id,
    sku: `S${id}`,
    status,
    updated_at: '2026-01-01T00:00:00Z',
    manage_stock: true,
    locations: [{ location_id: 1, stock_on_hand: '3', committed: '1' }],
  });
  const active = Array.from({ length: 590 }, (_, i) => v(i + 1));
  const archived = [v(591, 'archived')];
  // 592..600 exist in the mirror but no longer in the service.
  await db
    .insertInto('variants')
    .values(Array.from({ length: 9 }, (_, i) => ({ connection_id: c.id, id: 592 + i, status: 'active', raw: JSON.stringify(v(592 + i)) })))
    .execute();
  const ids = Array.from({ length: 600 }, (_, i) => i + 1);
  await markPending(
    db,
    [...ids, ...ids].map((id) => ({ connectionId: c.id, resource: 'variant', id })),
  );
  const reader = memoryReader(active, archived);
  reader.connection.id = c.id;
  const out = await drainPending(drainDeps(db, reader), 'variant');
  t.equal(out.read, 600);
  t.same(
    reader.calls.filter((x) => x.status !== 'archived').map((x) => x.ids),
    [250, 250, 100],
    'ceil(600/250) list calls',
  );
  t.equal(out.requests, 4, 'what pacing counts: 4 requests for ceil(600/250) = 3 reads of ids');
  t.same(
    reader.calls.filter((x) => x.status === 'archived').map((x) => x.ids),
    [10],
    'one archived look-up for the 10 missing',
  );
  const statuses = await sql<{
    status: string;
    n: number;
  }>`SELECT status, count(*)::int AS n FROM variants GROUP BY status ORDER BY status`.execute(db);
  t.same(statuses.rows, [
    { status: 'active', n: 590 },
    { status: 'archived', n: 1 },
    { status: 'gone', n: 9 },
  ]);
  t.equal((await db.selectFrom('pending_fetches').select('id').execute()).length, 0, 'everything read is cleared');
  const q = await db
    .selectFrom('channel_quantities')
    .select(['variant_id', 'quantity'])
    .where('variant_id', 'in', [1, 591, 592])
    .orderBy('variant_id')
    .execute();
  t.same(q, [
    { variant_id: 1, quantity: '2' },
    { variant_id: 591, quantity: '0' },
    { variant_id: 592, quantity: '0' },
  ]);
  const gone = await db
    .selectFrom('channel_quantity_changes')
    .select(['cause', 'before_quantity', 'quantity'])
    .where('variant_id', '=', 592)
    .execute();
  t.same(gone, [{ cause: 'fetch', before_quantity: null, quantity: '0' }], 'the change records a fetch without delivery as its cause');
});

t.test('a variant the mirror shows as of after every delivery that marked it is cleared without a read', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  const at = (iso: string) => ({ updated_at: iso, raw: JSON.stringify({ id: 0, updated_at: iso }) });
  // Mirrored variants: 1 and 2 were read with updated_at 12:00:10; 3 with 12:00:05.
  for (const [id, iso] of [
    [1, '2026-01-01T12:00:10.000Z'],
    [2, '2026-01-01T12:00:10.000Z'],
    [3, '2026-01-01T12:00:05.000Z'],
  ] as const)
    await db
      .insertInto('variants')
      .values({ connection_id: c.id, id, status: 'active', ...at(iso) })
      .execute();
  const deliveryAt = (objectId: number, n: number, eventAt: string | null) => stockDelivery(db, c.id, objectId, `e${n}`, eventAt);
  await markPending(db, [
    await deliveryAt(1, 1, '2026-01-01T12:00:08Z'), // late deliveries of changes the mirror already shows
    await deliveryAt(1, 2, '2026-01-01T12:00:09Z'),
    await deliveryAt(2, 3, '2026-01-01T12:00:10Z'), // the same second as the read state: order unknown, read
    await deliveryAt(3, 4, '2026-01-01T12:00:08Z'), // newer than the mirror: read
    await deliveryAt(4, 5, '2026-01-01T12:00:01Z'), // not mirrored: read
  ]);
  // A follow-up mark among a row's marks (no event time of its own): read.
  await markPending(db, [await deliveryAt(5, 6, '2026-01-01T12:00:01Z')]);
  await markPending(db, [{ connectionId: c.id, resource: 'variant', id: 5, reason: 'order lines' }]);
  await db
    .insertInto('variants')
    .values({ connection_id: c.id, id: 5, status: 'active', ...at('2026-01-01T12:00:10.000Z') })
    .execute();
  // Where updated_at does not move with stock (documented service), the last read's time on the service's clock
  // decides: 6 was read at 12:00:12, after its change at 12:00:09; 7 at 12:00:09.5, the change's own second.
  for (const [id, readAt] of [
    [6, '2026-01-01T12:00:12.000Z'],
    [7, '2026-01-01T12:00:09.500Z'],
  ] as const)
    await db
      .insertInto('variants')
      .values({ connection_id: c.id, id, status: 'active', ...at('2026-01-01T11:00:00.000Z'), read_as_of: readAt })
      .execute();
  await markPending(db, [await deliveryAt(6, 7, '2026-01-01T12:00:09Z'), await deliveryAt(7, 8, '2026-01-01T12:00:09Z')]);
  const asOf = Date.parse('2026-01-01T12:00:30.250Z');
  const reader = memoryReader(
    [1, 2, 3, 4, 5, 6, 7].map((id) => ({ id, status: 'active', updated_at: '2026-01-01T12:00:20Z' })),
    [],
    asOf,
  );
  reader.connection.id = c.id;
  const out = await drainPending(drainDeps(db, reader), 'variant');
  t.equal(out.skipped, 2, 'variants 1 and 6 are not read again');
  t.equal(out.read, 5, 'variants 2, 3, 4, 5 and 7 are read');
  t.equal(reader.calls.length, 1);
  t.equal((await db.selectFrom('pending_fetches').select('id').execute()).length, 0, 'all cleared');
  const readAt = await db.selectFrom('variants').select(['id', 'read_as_of']).where('connection_id', '=', c.id).orderBy('id').execute();
  t.same(
    readAt.map((r) => [Number(r.id), r.read_as_of ? new Date(r.read_as_of).toISOString() : null]),
    [
      [1, null],
      [2, '2026-01-01T12:00:30.250Z'],
      [3, '2026-01-01T12:00:30.250Z'],
      [4, '2026-01-01T12:00:30.250Z'],
      [5, '2026-01-01T12:00:30.250Z'],
      [6, '2026-01-01T12:00:12.000Z'],
      [7, '2026-01-01T12:00:30.250Z'],
    ],
    'the read is noted on the service clock for what it returned',
  );
});

t.test("with the clock margin, a read stamped by a clock running ahead of the webhooks' is not taken as after the event", async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  // The event happened at 12:00:09 on the webhooks' clock. Variant 1's last read was stamped 12:00:12 by web servers
  // whose clock runs 3 s ahead: it really reached the service at 12:00:09, maybe before the change. Variant 2 was
  // read at 12:00:16 by the same clock: after the change whatever a skew of up to 5 s.
  await variantsReadAt(db, c.id, [
    [1, '2026-01-01T12:00:12.000Z'],
    [2, '2026-01-01T12:00:16.000Z'],
  ]);
  const marks = [
    await stockDelivery(db, c.id, 1, 'skew-1', '2026-01-01T12:00:09Z'),
    await stockDelivery(db, c.id, 2, 'skew-2', '2026-01-01T12:00:09Z'),
  ];
  const drain = async (clockMarginMs: number) => {
    await markPending(db, marks);
    const reader = memoryReader(
      [1, 2].map((id) => ({ id, status: 'active', updated_at: '2026-01-01T11:00:00Z' })),
      [],
      null,
    );
    reader.connection.id = c.id;
    const out = await drainPending(drainDeps(db, reader, clockMarginMs), 'variant');
    return { skipped: out.skipped, read: out.read };
  };
  t.same(await drain(0), { skipped: 2, read: 0 }, 'without a margin both count as read after the change: 1 wrongly');
  t.same(await drain(5000), { skipped: 1, read: 1 }, 'with a 5 s margin variant 1 is read again, variant 2 is not');
});

t.test('a follow-up read is left out for a variant read a second after the event that asked for its parent', async (t) => {
  const { db } = await testDatabase(t);
  const c = await addConnection(db);
  // Variant 1 was last read at 12:00:12, variant 2 at 12:00:09.5; neither's updated_at tells (an hour old).
  await variantsReadAt(db, c.id, [
    [1, '2026-01-01T12:00:12.000Z'],
    [2, '2026-01-01T12:00:09.500Z'],
  ]);
  const delivery = await db
    .insertInto('webhook_deliveries')
    .values({
      connection_id: c.id,
      delivery_id: 'adj-10',
      event: 'stock_adjustments.create',
      resource: 'stock_adjustment',
      action: 'create',
      object_id: 10,
      event_at: '2026-01-01T12:00:09Z',
      body: '{}',
      state: 'processed',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  // Adjustment 10 was announced by its delivery (event at 12:00:09); adjustment 11 is read for another reason.
  // Both moved variants 1 and 2; their updated_at is older than the reads (it need not move with the effect).
  await markPending(db, [
    { connectionId: c.id, resource: 'stock_adjustment', id: 10, deliveryRowId: Number(delivery.id), reason: 'stock_adjustment.create' },
  ]);
  const adjustment = (id: number) => ({
    id,
    updated_at: '2026-01-01T11:30:00.000Z',
    stock_adjustment_line_item_ids: [id * 10 + 1, id * 10 + 2],
  });
  const lines = (id: number) => [1, 2].map((v) => ({ id: id * 10 + v, stock_adjustment_id: id, variant_id: v, quantity: '1' }));
  const reader: Reader = {
    connection: { id: c.id, name: 'mem' },
    traits: { singleStatusOnly: false },
    async getByIds(_path: string, ids: number[]) {
      return {
        records: ids.map(adjustment) as any[],
        sideloads: { stock_adjustment_line_items: ids.flatMap(lines) },
        requests: 1,
        asOf: Date.parse('2026-01-01T12:00:30Z'),
      };
    },
    paginate: (() => {
      throw new Error('not used');
    }) as any,
  };
  const deps = drainDeps(db, reader);
  const pendingVariants = async () =>
    (await db.selectFrom('pending_fetches').select('id').where('resource', '=', 'variant').orderBy('id').execute()).map((r) =>
      Number(r.id),
    );
  await drainPending(deps, 'stock_adjustment');
  t.same(await pendingVariants(), [2], 'variant 1 was read after the event; variant 2 in its second, so it is read');
  await db.deleteFrom('pending_fetches').execute();
  await markPending(db, [{ connectionId: c.id, resource: 'stock_adjustment', id: 11, reason: 'purchase order of procurement' }]);
  await drainPending(deps, 'stock_adjustment');
  t.same(await pendingVariants(), [1, 2], 'a parent read for no delivery of its own: both followed');
});
