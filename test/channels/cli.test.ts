// commerce-sync channels: its verbs, --json, and exit status 2 with the bad value named for bad input. Run the
// way src/cli.ts runs a command (its options through parseArgs, a UsageError exiting 2).
import t from 'tap';
import { addConnection, testDatabase } from '../support/db.ts';
import { channelsCommand, mirror, quantities, variant } from './harness.ts';

t.test('channels: list, add, change, overrides and holds; --json; exit 2 naming a bad value', async (t) => {
  const { db, url } = await testDatabase(t);
  const c = await addConnection(db);
  await mirror(db, c.id, [variant(1, { 1: ['10'], 2: ['5'] })]);
  const run = channelsCommand(url);

  const list = await run('list', '--json');
  t.equal(list.code, 0);
  t.match(JSON.parse(list.out), [{ connection: 'shop', name: 'default', locations: null, buffer_units: '0', cap_max_online: true }]);

  t.match(await run('add', 'market', '--locations', '1', '--buffer', '2'), {
    code: 0,
    out: /market\s+1\s+2\s+yes[\s\S]*recomputed: 1 quantities changed/,
  });
  t.match(await run('add', 'market'), { code: 1, err: /exists already/ });
  t.match(await run('add', 'web', '--locations', '1,x'), {
    code: 2,
    err: /--locations must be comma-separated location ids or "all", not "1,x"/,
  });
  t.match(await run('add', 'web', '--buffer', 'lots'), { code: 2, err: /buffer_units: .*\(got "lots"\)/ });
  t.match(await run('add', 'web', '--cap-max-online', 'maybe'), { code: 2, err: /--cap-max-online must be yes or no, not "maybe"/ });
  t.match(await run('change', 'market', '--buffer-percent', '150'), {
    code: 2,
    err: /buffer_percent: a percentage from 0 to 100 \(got "150"\)/,
  });
  t.match(await run('change', 'nope', '--buffer', '1'), { code: 2, err: /no channel "nope"/ });
  t.match(await run('change', 'market'), { code: 2, err: /nothing to change/ });
  t.match(await run('frobnicate'), { code: 2, err: /unknown verb "frobnicate"/ });
  t.equal((await run('change', 'market', '--buffer-percent', '10%', '--buffer', '1', '--cap-max-online', 'no')).code, 0);
  t.same(await quantities(db, c.id, 1), { default: '15', market: '9' }, '10 less 10% (1), at least 1');

  t.match(await run('override', 'set', 'market', 'SKU-1', 'fixed', '--quantity', '3'), {
    code: 0,
    out: /SKU-1 fixed 3; 1 quantities changed/,
  });
  t.match(await run('override', 'set', 'market', 'SKU-1', 'fixed'), { code: 2, err: /quantity: a fixed override needs the quantity/ });
  t.match(await run('override', 'set', 'market', 'SKU-1', 'most'), { code: 2, err: /mode: .*\(got "most"\)/ });
  const shown = JSON.parse((await run('show', 'market', '--json')).out);
  t.match(shown, {
    channel: { name: 'market', buffer_percent: '10', buffer_units: '1', cap_max_online: false, overrides: 1 },
    overrides: [{ sku: 'SKU-1', mode: 'fixed', quantity: '3' }],
  });
  t.same(await quantities(db, c.id, 1), { default: '15', market: '3' });
  t.equal((await run('override', 'remove', 'market', 'SKU-1')).code, 0);
  t.match(await run('override', 'remove', 'market', 'SKU-1'), { code: 1, err: /no override of SKU "SKU-1"/ });

  t.match(await run('holds', 'add', 'market', 'M-1', '--line', 'SKU-1=2'), {
    code: 0,
    out: /M-1\s+active\s+SKU-1=2[\s\S]*held; 2 quantities changed/,
  });
  t.same(await quantities(db, c.id, 1), { default: '13', market: '7' });
  t.match(await run('holds', 'add', 'market', 'M-2', '--line', 'SKU-1'), { code: 2, err: /--line "SKU-1": expected SKU=QUANTITY/ });
  t.match(await run('holds', 'add', 'market', 'M-2', '--line', 'SKU-1=0'), {
    code: 2,
    err: /lines.0.quantity: a quantity above zero \(got "0"\)/,
  });
  t.match(await run('holds', 'add', 'market', 'M-2', '--line', 'GONE=1'), { code: 2, err: /unknown SKU GONE/ });
  t.match(await run('holds', 'add', 'market', 'M-1', '--line', 'SKU-1=5'), { code: 1, err: /held already with other lines/ });
  t.match(JSON.parse((await run('holds', 'list', '--json')).out), [{ channel: 'market', channel_order_id: 'M-1', state: 'active' }]);
  t.match(await run('holds', 'list', '--state', 'gone'), { code: 2, err: /--state must be active, ended or all, not "gone"/ });
  t.match(await run('holds', 'cancel', 'market', 'M-1'), { code: 0, out: /cancelled; 2 quantities changed/ });
  t.match(await run('holds', 'cancel', 'market', 'M-9'), { code: 1, err: /no hold for channel order market\/M-9/ });
  t.same(await quantities(db, c.id, 1), { default: '15', market: '9' });
  t.match(JSON.parse((await run('holds', 'list', 'market', '--state', 'all', '--json')).out), [{ end_cause: 'cancelled' }]);

  t.match(await run('remove', 'market'), { code: 0, out: /removed channel market of shop/ });
  t.match(await run('remove', 'default'), { code: 1, err: /only channel/ });
  t.match(await run('list'), { code: 0, out: /CONNECTION\s+CHANNEL\s+LOCATIONS[\s\S]*shop\s+default\s+all\s+0\s+yes/ });
});

t.test(
  'channels destination: set (a secret made and shown once), show, pause, resume, remove; exit 2 for a bad URL or secret',
  async (t) => {
    const { db, url } = await testDatabase(t);
    const c = await addConnection(db);
    await mirror(db, c.id, [variant(1, { 1: ['10'] })]);
    const run = channelsCommand(url);
    t.match(await run('destination', 'set', 'default', '--url', 'ftp://x'), { code: 2, err: /url: an http\(s\) URL/ });
    t.match(await run('destination', 'set', 'default', '--url', 'http://127.0.0.1:9/stock', '--secret', 'hunter2'), {
      code: 2,
      err: /secret: whsec_/,
    });
    t.match(await run('destination', 'show', 'default'), { code: 1, err: /has no destination/ });
    const set = JSON.parse((await run('destination', 'set', 'default', '--url', 'http://127.0.0.1:9/stock', '--json')).out);
    t.match(set, { secret: /^whsec_[A-Za-z0-9+/]{32}$/, destination: { host: '127.0.0.1:9', state: 'behind', behind: 1, cursor: 0 } });
    t.notMatch((await run('destination', 'show', 'default')).out, /whsec_/, 'the secret is shown once only');
    t.match(await run('destination', 'pause', 'default', '--reason', 'shop closed'), { code: 0, out: /paused: shop closed/ });
    t.match(await run('destination', 'resume', 'default'), { code: 0, out: /127\.0\.0\.1:9: behind, 1 changes behind/ });
    t.match(await run('destination', 'remove', 'default'), { code: 0, out: /destination removed/ });
    t.match(await run('destination', 'frob', 'default'), { code: 2, err: /channels destination takes show NAME/ });
  },
);
