// The demo comes with a channel of its own (src/demo/channel-endpoint.ts): `commerce-sync start` with nothing set
// sends the demo's stock to an endpoint in the process, allowed as the sandbox is (its address and port only), and
// the console's Demo channel page shows the POSTs it received, each verified by the `standardwebhooks` package.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { testDatabase } from '../support/db.ts';
import { spawnCli, until } from '../support/processes.ts';

t.test("the demo's own channel receives signed POSTs, and its page shows them", async (t) => {
  const tdb = await testDatabase(t);
  const dataDir = await mkdtemp(join(tmpdir(), 'cs-demo-channel-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const app = await spawnCli(
    t,
    'start',
    ['start'],
    { DATABASE_URL: tdb.url, DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: 0, SANDBOX_VARIANTS: 10, SANDBOX_ACTIVITY: 0 },
    { readyTimeoutMs: 60_000 },
  );
  const get = async (path: string) => {
    const res = await fetch(`${app.url}${path}`);
    return { status: res.status, text: await res.text() };
  };
  await until(
    'the first sweep was POSTed to the demo channel',
    async () => /class="ok">verified/.test((await get('/demo-channel')).text),
    60_000,
    250,
  );
  const page = (await get('/demo-channel')).text;
  t.match(page, /channel\.stock\.changed/, 'the page shows the stock POSTed');
  t.match(page, /SKU-0000\d\d = \d+/, 'with what it said');
  t.notMatch(page, /refused:/, 'every POST verified');
  t.match((await get('/')).text, /href="\/demo-channel"/, 'the navigation links it');

  // Allowed as the sandbox is: that port of 127.0.0.1, not this machine.
  const [endpoint] = /http:\/\/127\.0\.0\.1:\d+\/demo-channel/.exec(page)!;
  const other = `http://127.0.0.1:${Number(new URL(endpoint).port) + 1}/hook`;
  const made = await fetch(`${app.url}/api/channels?connection=demo`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'other' }),
  });
  t.equal(made.status, 201, 'a second channel');
  const set = await fetch(`${app.url}/api/channels/other/destination?connection=demo`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url: other }),
  });
  t.equal(set.status, 400, 'another port of this machine is still refused as a destination');
  t.match(JSON.stringify(await set.json()), /internal address/, 'as an internal address');
});
