import t from 'tap';
import { PROFILES } from '../support/sandbox.ts';
import { harness, orderInput, plainVariants } from './harness.ts';

const customer = {
  company: { name: 'Ada Lovelace', company_type: 'consumer', email: 'ada@example.com' },
  shipping_address: { address1: '12 St James Square', city: 'London', country: 'GB', label: 'Ship' },
  billing_address: { address1: '1 Analytical Row', city: 'London', country: 'GB', label: 'Bill' },
};

for (const profile of PROFILES)
  t.test(`${profile}: order import against the sandbox`, async (t) => {
    const h = await harness(t, { profile });
    const variants = plainVariants(await h.snapshot('variants'));
    const [a, b] = variants;
    const companies = await h.snapshot('companies');
    const ordersBefore = (await h.snapshot('orders')).length;

    await t.test('a new customer with addresses, SKU and freeform lines', async (t) => {
      const op = await h.run('import-order', {
        channel: 'webshop',
        channel_order_id: '1001',
        customer,
        currency: 'usd',
        issued_at: '2026-11-20',
        lines: [
          { sku: a.sku, quantity: '2', price: '9.50' },
          { sku: b.sku, quantity: 1 },
          { freeform: true, label: 'Gift wrap', quantity: '1', price: '3.00' },
        ],
      });
      t.equal(op.state, 'confirmed', op.reason ?? '');
      const result = op.result as any;
      const order = (await h.snapshot('orders')).find((o) => o.id === result.order_id);
      t.ok(order, 'the order exists on the service');
      t.equal(order.currency_iso, 'USD');
      t.equal(order.reference_number, '1001');
      const lines = (await h.snapshot('order_line_items')).filter((l) => l.order_id === order.id);
      t.equal(lines.length, 3);
      t.same(
        lines
          .filter((l) => !l.freeform)
          .map((l) => l.variant_id)
          .sort(),
        [a.id, b.id].sort(),
      );
      t.ok(
        lines.find((l) => l.freeform && l.label === 'Gift wrap'),
        'freeform line kept',
      );
      const company = (await h.snapshot('companies')).find((c) => c.id === order.company_id);
      t.equal(company.name, 'Ada Lovelace', 'the new company was created with the order');
      const mapping = await h.tdb.db.selectFrom('channel_orders').selectAll().execute();
      t.match(mapping, [{ channel: 'webshop', channel_order_id: '1001', order_id: order.id, operation_id: op.id }]);
      const log = await h.tdb.db
        .selectFrom('sync_log')
        .select(['action', 'outcome'])
        .where('resource', '=', 'operation')
        .where('record_id', '=', op.id)
        .orderBy('id')
        .execute();
      t.same(
        log.map((l) => l.action),
        ['push.import-order.queued', 'push.import-order.sent', 'push.import-order.confirmed'],
      );
      const onOrder = await h.tdb.db
        .selectFrom('sync_log')
        .select('action')
        .where('resource', '=', 'order')
        .where('record_id', '=', order.id)
        .execute();
      t.same(
        onOrder.map((l) => l.action),
        ['push.import-order.confirmed'],
        "the outcome is on the order's history too",
      );
      t.ok(
        (await h.admin('stats')).requests.by_route['GET /currencies'] >= 1,
        'a currency the mirror does not know is read from the service',
      );
    });

    await t.test('an existing company; a currency the mirror knows costs no read', async (t) => {
      const sgd = (await h.snapshot('currencies')).find((c) => c.iso === 'SGD');
      await h.tdb.db
        .insertInto('currencies')
        .values({ connection_id: h.connection.id, id: sgd.id, iso: 'SGD', name: sgd.name, status: 'active', raw: JSON.stringify(sgd) })
        .execute();
      const before = (await h.admin('stats')).requests.by_route;
      const op = await h.run('import-order', orderInput(companies[0].id, 'webshop', '1002', [{ sku: a.sku, quantity: '1' }]));
      t.equal(op.state, 'confirmed', op.reason ?? '');
      const order = (await h.snapshot('orders')).find((o) => o.id === (op.result as any).order_id);
      t.equal(order.company_id, companies[0].id);
      const after = (await h.admin('stats')).requests.by_route;
      t.equal(after['GET /currencies'] ?? 0, before['GET /currencies'] ?? 0, 'no currency read');
      t.equal((after['POST /orders'] ?? 0) - (before['POST /orders'] ?? 0), 1, 'one request in all: the create');
    });

    await t.test('the same channel order imported twice makes one order', async (t) => {
      const input = orderInput(companies[0].id, 'market', 'M-77', [{ sku: a.sku, quantity: '1' }]);
      const first = await h.push('import-order', input);
      const second = await h.push('import-order', input);
      t.equal(first.idempotency_key, second.idempotency_key, 'same key for the same channel order');
      const [one, two] = [await h.settle(first.id), await h.settle(second.id)];
      t.equal(one.state, 'confirmed');
      t.equal(two.state, 'confirmed');
      t.equal((two.result as any).order_id, (one.result as any).order_id, 'both name the same order');
      t.equal((two.result as any).already_imported, true);
      const third = await h.run('import-order', input);
      t.equal((third.result as any).order_id, (one.result as any).order_id);
      const orders = (await h.snapshot('orders')).filter((o) => o.reference_number === 'M-77');
      t.equal(orders.length, 1, 'one order on the service');
    });

    await t.test('a lost answer after the service created the order: exactly one order', async (t) => {
      await h.faults({ responses: { lose_response: 1, routes: '^POST /orders$' } });
      const op = await h.push('import-order', orderInput(companies[0].id, 'webshop', 'LOST-1', [{ sku: b.sku, quantity: '3' }]));
      // Wait until the first attempt has gone out and lost its answers, then let answers through again.
      for (let i = 0; i < 300; i++) {
        const created = (await h.snapshot('orders')).filter((o) => o.reference_number === 'LOST-1');
        const row = await h.tdb.db
          .selectFrom('push_operations')
          .select(['state', 'reason'])
          .where('id', '=', op.id)
          .executeTakeFirstOrThrow();
        if (created.length && row.reason) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      await h.faults({});
      const done = await h.settle(op.id, 60_000);
      t.equal(done.state, 'confirmed', done.reason ?? '');
      t.ok(done.attempts >= 2, `retried (${done.attempts} attempts)`);
      const orders = (await h.snapshot('orders')).filter((o) => o.reference_number === 'LOST-1');
      t.equal(orders.length, 1, 'exactly one order');
      t.equal((done.result as any).order_id, orders[0].id);
    });

    await t.test('160 lines: a create and a PUT, one order with every line', async (t) => {
      const lines = Array.from({ length: 160 }, (_, i) => ({ sku: variants[i % variants.length].sku, quantity: String(1 + (i % 3)) }));
      const before = (await h.admin('stats')).requests.by_route;
      const op = await h.run('import-order', orderInput(companies[0].id, 'bulk', 'B-160', lines));
      t.equal(op.state, 'confirmed', op.reason ?? '');
      const orderId = (op.result as any).order_id;
      const onService = (await h.snapshot('order_line_items')).filter((l) => l.order_id === orderId);
      t.equal(onService.length, 160, 'all 160 lines on the service');
      const after = (await h.admin('stats')).requests.by_route;
      const puts = Object.entries(after)
        .filter(([k]) => /^PUT \/orders/.test(k))
        .reduce((n, [k, v]) => n + (v as number) - (before[k] ?? 0), 0);
      t.ok(puts >= 1, `lines beyond 150 added with PUT (${puts})`);
      t.equal((after['POST /orders'] ?? 0) - (before['POST /orders'] ?? 0), 1, 'one create');
    });

    await t.test('lines beyond 150 refused after the create: the order is reported, a re-import returns no second order', async (t) => {
      // A SKU the mirror knows but the service does not (deleted since), on line 151: the create works, the PUT is refused.
      await h.tdb.db
        .insertInto('variants')
        .values({ connection_id: h.connection.id, id: 987654321, sku: 'GHOST-1', status: 'active', raw: '{}' })
        .execute();
      const lines = [
        ...Array.from({ length: 150 }, (_, i) => ({ sku: variants[i % variants.length].sku, quantity: '1' })),
        { sku: 'GHOST-1', quantity: '1' },
      ];
      const input = orderInput(companies[0].id, 'bulk', 'B-151', lines);
      const op = await h.run('import-order', input);
      t.equal(op.state, 'failed');
      t.equal(op.status_code, 422);
      const orderId = (op.result as any).order_id;
      t.type(orderId, 'number', 'the created order is reported');
      t.match(op.reason, new RegExp(`order ${orderId} was created on the service but adding its lines beyond the first 150 was refused`));
      const again = await h.run('import-order', input);
      t.equal(again.idempotency_key, op.idempotency_key, 'the same key: the order exists');
      t.equal(again.state, 'failed');
      t.equal((await h.snapshot('orders')).filter((o) => o.reference_number === 'B-151').length, 1, 'still one order');
    });

    await t.test('unknown SKU fails with a clear reason and sends nothing', async (t) => {
      const op = await h.run('import-order', orderInput(companies[0].id, 'webshop', '1003', [{ sku: 'NO-SUCH-SKU', quantity: '1' }]));
      t.equal(op.state, 'failed');
      t.match(op.reason, /unknown SKU NO-SUCH-SKU/);
      t.equal(op.attempts, 1, 'not retried');
    });

    await t.test('a missing currency fails when ALLOW_CREATE_CURRENCY is off', async (t) => {
      const op = await h.run('import-order', orderInput(companies[0].id, 'webshop', '1004', [{ sku: a.sku, quantity: '1' }], 'EUR'));
      t.equal(op.state, 'failed');
      t.match(op.reason, /currency EUR does not exist.*ALLOW_CREATE_CURRENCY=true/);
      t.notOk(
        (await h.snapshot('currencies')).some((c) => c.iso === 'EUR'),
        'no currency created',
      );
    });

    await t.test('a 422 is surfaced with the field messages and not retried', async (t) => {
      const op = await h.run('import-order', orderInput(999999, 'webshop', '1005', [{ sku: a.sku, quantity: '1' }]));
      t.equal(op.state, 'failed');
      t.equal(op.status_code, 422);
      t.equal(op.attempts, 1, 'not retried');
      t.ok(op.field_errors && (op.field_errors as any).company_id, `field messages kept: ${JSON.stringify(op.field_errors)}`);
      t.match(op.reason, /company_id/);
      const log = await h.tdb.db
        .selectFrom('sync_log')
        .selectAll()
        .where('record_id', '=', op.id)
        .where('action', '=', 'push.import-order.failed')
        .executeTakeFirstOrThrow();
      t.equal(log.outcome, 'error');
      t.match(log.error, /422/);
      // A corrected import of the same channel order gets a fresh key (the refusal created nothing) and works.
      const fixed = await h.run('import-order', orderInput(companies[0].id, 'webshop', '1005', [{ sku: a.sku, quantity: '1' }]));
      t.equal(fixed.state, 'confirmed', fixed.reason ?? '');
      t.not(fixed.idempotency_key, op.idempotency_key);
    });

    t.equal((await h.snapshot('orders')).length - ordersBefore, 7, 'orders created in all: 1001, 1002, M-77, LOST-1, B-160, B-151, 1005');
  });

t.test('a missing currency is created when ALLOW_CREATE_CURRENCY is on', async (t) => {
  const h = await harness(t, { config: { ALLOW_CREATE_CURRENCY: true } });
  const [a] = plainVariants(await h.snapshot('variants'));
  const companies = await h.snapshot('companies');
  const op = await h.run('import-order', orderInput(companies[0].id, 'webshop', '2001', [{ sku: a.sku, quantity: '1' }], 'EUR'));
  t.equal(op.state, 'confirmed', op.reason ?? '');
  t.match(op.result, { currency_created: { iso: 'EUR' } });
  const eur = (await h.snapshot('currencies')).filter((c) => c.iso === 'EUR');
  t.equal(eur.length, 1, 'the currency exists once');
  const order = (await h.snapshot('orders')).find((o) => o.id === (op.result as any).order_id);
  t.equal(order.currency_iso, 'EUR');
});
