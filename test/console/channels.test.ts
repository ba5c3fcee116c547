// The console with several channels, over HTTP without a browser: the variants index shows one row per variant
// and the chosen channel's quantity (default: `default`), its JSON gives every channel's too; the record's JSON
// gives each channel's quantity with why and the history per channel; the Channels page and its Pause and Resume
// are behind the operator guard like every other console action.
import t from 'tap';
import { saveDestination } from '../../src/db/channel-destinations.ts';
import { consoleServer, threeChannels } from './harness.ts';

const TOKEN = 'channels-console-operator-token';
const auth = { authorization: `Bearer ${TOKEN}` };

t.test('variants index and record per channel', async (t) => {
  const { base, db } = await consoleServer(t, { token: TOKEN });
  await threeChannels(db, base, TOKEN);
  const get = async (path: string) => {
    const res = await fetch(`${base}${path}`, { headers: auth });
    return { status: res.status, body: (await res.json()) as any };
  };

  await t.test('the index: one row per variant, the default channel unless another is chosen', async (t) => {
    const all = await get('/api/variants?connection=shop');
    t.equal(all.status, 200);
    t.equal(all.body.total, 2, 'two variants, not one row per channel');
    t.equal(all.body.channel, 'default');
    t.match(all.body.variants[0], {
      sku: 'SKU-1',
      quantity: '15',
      lastChangeCause: 'sweep',
      channels: [
        { channel: 'default', quantity: '15', listed: true },
        { channel: 'marketplace', quantity: '8' },
        { channel: 'wholesale', quantity: '11' },
      ],
    });
    const market = await get('/api/variants?connection=shop&channel=marketplace');
    t.equal(market.body.channel, 'marketplace');
    t.match(
      market.body.variants.map((v: any) => [v.sku, v.quantity, v.lastChangeCause, v.lastChangeBefore]),
      [
        ['SKU-1', '8', 'rules', null],
        ['SKU-2', '1', 'rules', null],
      ],
      "each row's last change is the channel's own",
    );
    t.equal((await get('/api/variants?connection=shop&channel=marketplace&filter=low&threshold=8')).body.total, 2);
    t.equal((await get('/api/variants?connection=shop&filter=low&threshold=8')).body.total, 1, 'the default channel has 15 of SKU-1');
    t.same(
      (await get('/api/variants?connection=shop&channel=wholesale&sort=quantity&dir=desc')).body.variants.map((v: any) => v.quantity),
      ['11', '2'],
    );
    const bad = await get('/api/variants?connection=shop&channel=nope');
    t.equal(bad.status, 400);
    t.match(bad.body.error, /channel must be one of default, marketplace, wholesale/);

    const html = async (qs: string) => (await fetch(`${base}/variants?${qs}`, { headers: auth })).text();
    const page = await html('connection=shop&channel=wholesale');
    t.match(page, /<option selected>wholesale<\/option>/);
    t.match(page, /Quantity in wholesale/);
    t.equal((page.match(/<tr data-sku=/g) ?? []).length, 2);
    t.match(
      await html('connection=shop&channel=nope'),
      /That connection has no channel of that name: the index shows its default channel\./,
    );
  });

  await t.test("the record: each channel's quantity with why, the default one where it always was", async (t) => {
    const rec = (await get('/api/variants/shop/1')).body;
    t.match(rec.channel, { quantity: '15', tracked: true });
    t.match(rec.channels, [
      {
        channel: 'default',
        quantity: '15',
        rules: { locations: null, bufferUnits: '0', bufferPercent: null, capMaxOnline: true },
        override: null,
        why: { counted: '15', held: '0', buffer: '0' },
      },
      {
        channel: 'marketplace',
        quantity: '8',
        rules: { locations: [{ id: 1, name: 'Warehouse' }], bufferUnits: '2' },
        why: { counted: '10', buffer: '2' },
      },
      {
        channel: 'wholesale',
        quantity: '11',
        rules: { bufferUnits: '1', bufferPercent: '10', capMaxOnline: false },
        override: { mode: 'buffer', bufferUnits: '4' },
        why: { counted: '15', buffer: '4', override: 'buffer' },
      },
    ]);
    t.same(
      rec.channelHistory.map((c: any) => [c.channel, c.quantity, c.cause]),
      [
        ['wholesale', '11', 'rules'],
        ['wholesale', '13', 'rules'],
        ['marketplace', '8', 'rules'],
        ['default', '15', 'sweep'],
      ],
    );
    t.equal(rec.historyChannel, null);
    const one = (await get('/api/variants/shop/1?history=marketplace')).body;
    t.equal(one.historyChannel, 'marketplace');
    t.same(
      one.channelHistory.map((c: any) => c.channel),
      ['marketplace'],
    );
  });
});

t.test('the Channels page and its Pause and Resume are guarded like every console action', async (t) => {
  const { base, db, boss } = await consoleServer(t, { token: TOKEN });
  const { channel } = await threeChannels(db, base, TOKEN);
  await saveDestination(db, channel.marketplace, { url: 'https://hooks.example/secret-path', secrets: 'x', startAfter: 0 });

  t.equal((await fetch(`${base}/channels`)).status, 401);
  const page = await (await fetch(`${base}/channels`, { headers: auth })).text();
  t.match(page, /Behind by 2 changes/, 'the marketplace destination has both its changes to send');
  t.match(page, /https:\/\/hooks\.example\/…/);
  t.notMatch(page, /secret-path/, 'the path of a destination URL is not shown');
  t.match(page, /No destination: the channel reads its changes/);

  const post = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, { method: 'POST', redirect: 'manual', headers });
  t.equal((await post(`/channels/${channel.marketplace}/destination/pause`)).status, 401, 'no token');
  t.equal(
    (await post(`/channels/${channel.marketplace}/destination/pause`, { ...auth, origin: 'http://evil.example' })).status,
    403,
    'another site',
  );
  t.equal((await post('/channels/999999/destination/pause', auth)).status, 404);

  const paused = await post(`/channels/${channel.marketplace}/destination/pause`, auth);
  t.equal(paused.status, 302);
  t.equal(paused.headers.get('location'), `/channels?connection=shop&paused=${channel.marketplace}#channel-${channel.marketplace}`);
  const row = await db
    .selectFrom('channel_destinations')
    .selectAll()
    .where('channel_id', '=', channel.marketplace)
    .executeTakeFirstOrThrow();
  t.ok(row.paused_at);
  t.equal(row.paused_reason, 'paused by an operator', 'the same default whichever door');
  t.match(
    await (await fetch(`${base}${paused.headers.get('location')}`, { headers: auth })).text(),
    /Paused the destination of marketplace: nothing is sent until it is resumed/,
  );

  const none = await post(`/channels/${channel.wholesale}/destination/resume`, auth);
  t.equal(none.headers.get('location'), `/channels?connection=shop&missing=${channel.wholesale}#channel-${channel.wholesale}`);
  t.match(
    await (await fetch(`${base}${none.headers.get('location')}`, { headers: auth })).text(),
    /wholesale has no destination to pause or resume\./,
  );

  const resumed = await post(`/channels/${channel.marketplace}/destination/resume`, auth);
  t.equal(resumed.headers.get('location'), `/channels?connection=shop&resumed=${channel.marketplace}#channel-${channel.marketplace}`);
  const after = await db
    .selectFrom('channel_destinations')
    .selectAll()
    .where('channel_id', '=', channel.marketplace)
    .executeTakeFirstOrThrow();
  t.equal(after.paused_at, null);
  t.ok(
    (await boss.findJobs('channel-delivery', { data: { channelId: channel.marketplace } })).length >= 1,
    'a delivery is requested at once',
  );
});
