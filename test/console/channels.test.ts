// The console with several channels, over HTTP without a browser: the variants index shows one row per variant
// and the chosen channel's quantity (default: `default`), its JSON gives every channel's too; the record's JSON
// gives each channel's quantity with why and the history per channel.
import t from 'tap';
import { threeChannels } from './channels-setup.ts';
import { consoleServer } from './harness.ts';

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
