// The audit trail: voiding an order, changing a channel's buffer and pausing its destination through the API each
// leave an entry with who (the break-glass operator token), the role, the connection and record, where from and the
// values before and after; a CLI change leaves one with the shell's user; the console's Audit page and
// GET /api/audit?since=CURSOR show them; secrets never reach an entry; a GET or a refused change writes none.
import t from 'tap';
import { setDestination } from '../../src/channels/destinations.ts';
import { listAudit } from '../../src/db/audit.ts';
import { addChannel } from '../../src/channels/channels.ts';
import { channelsCommand } from '../channels/harness.ts';
import { addConnection, consoleServer } from './harness.ts';

const TOKEN = 'audit-test-operator-token-0123456789';

t.test('changes through the API and the CLI are audited with who, what, before and after', async (t) => {
  const s = await consoleServer(t, { token: TOKEN });
  const { db } = s;
  const connectionId = await addConnection(db, 'shop');
  await addChannel(db, connectionId, { name: 'default' });
  await db
    .insertInto('orders')
    .values({ connection_id: connectionId, id: 1001, order_number: 'SO1001', status: 'active', raw: JSON.stringify({ id: 1001 }) })
    .execute();
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${s.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.5', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  t.equal((await call('POST', '/api/operations/void', { order_id: 1001 })).status, 202, 'a void asked for');
  t.equal((await call('PATCH', '/api/channels/default', { buffer_units: '3' })).status, 200, 'a buffer changed');
  const channel = await db.selectFrom('channels').select('id').where('name', '=', 'default').executeTakeFirstOrThrow();
  await setDestination(db, s.rt.clients.key(s.rt.config), Number(channel.id), { url: 'https://shop.example/hook' }, []);
  t.equal((await call('POST', '/api/channels/default/destination/pause', { reason: 'maintenance' })).status, 200, 'a destination paused');
  t.equal((await call('PATCH', '/api/channels/default', { buffer_units: 'lots' })).status, 400, 'a refused change');
  t.equal((await call('GET', '/api/channels/default')).status, 200, 'a read');
  t.equal(
    (
      await call('PUT', '/api/channels/default/destination', {
        url: 'https://shop.example/h2',
        secret: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2Vj',
      })
    ).status,
    200,
  );

  const { body } = await call('GET', '/api/audit?since=0');
  const entries = body.entries as any[];
  t.same(
    entries.map((e) => e.action),
    [
      'POST /api/operations/void',
      // An operation's entry is named by the operation, the same whichever door (src/channels/operations.ts).
      'channels.change',
      'channels.destination.pause',
      'channels.destination.set',
    ],
    'each change once, nothing for the read or the refused change',
  );
  for (const e of entries) {
    t.equal(e.actor, 'break-glass (OPERATOR_TOKEN)', `${e.action}: who`);
    t.equal(e.role, 'admin');
    t.equal(e.connection, 'shop');
  }
  const [voided, buffer, paused, dest] = entries;
  t.match(voided, {
    target: 'order 1001',
    before: { order: { id: 1001, status: 'active' } },
    after: { operation: { kind: 'void', state: 'queued' } },
  });
  t.match(buffer, { before: { channel: { buffer_units: '0' } }, after: { channel: { buffer_units: '3' } } });
  t.match(paused, { before: { destination: { paused_at: null } }, after: { destination: { paused_reason: 'maintenance' } } });
  t.notMatch(JSON.stringify(dest), /c2VjcmV0/, 'no secret in an entry');
  t.match(voided.from, /api/);
  t.same(body.cursor, entries[entries.length - 1].id);
  t.same(
    (await call('GET', `/api/audit?since=${body.cursor}`)).body,
    { entries: [], cursor: body.cursor },
    'the cursor goes on from there',
  );
  t.equal((await call('GET', '/api/audit?since=99999999999999999999')).status, 400);

  // The console's page shows them, filtered.
  const page = await fetch(`${s.base}/audit?action=destination`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const html = await page.text();
  t.equal(page.status, 200);
  t.match(html, /maintenance/);
  t.notMatch(html, /operations\/:kind/, 'the filter leaves the void out');

  // A change from the CLI: the shell's user.
  const cli = channelsCommand(s.tdb.url);
  t.equal((await cli('change', 'default', '--buffer', '4')).code, 0);
  const [last] = await listAudit(db, { limit: 1 });
  t.match(last, { action: 'channels.change', target: 'channel default', source: 'cli', role: 'admin' });
  t.equal((await listAudit(db, { limit: 2 }))[1]!.action, 'channels.destination.set', 'one entry for the change, not two');
  t.match(last!.actor, /^cli:/);

  // A destination's URL may carry its credential in the path (a Slack-style hook): kept by host only, from the CLI
  // as from the API.
  const hook = 'https://hooks.example.com/services/T000/B000/SECRETPATH';
  t.equal((await cli('destination', 'set', 'default', '--url', hook)).code, 0);
  t.equal((await call('PUT', '/api/channels/default/destination', { url: `${hook}?token=QUERYSECRET` })).status, 200);
  const both = await listAudit(db, { limit: 2 });
  t.same(
    both.map((e) => e.action),
    ['channels.destination.set', 'channels.destination.set'],
  );
  for (const e of both) t.notMatch(JSON.stringify(e), /SECRETPATH|QUERYSECRET|services\/T000/, `${e.action}: no path or query of the URL`);
  t.match(both, [{ source: 'api' }, { source: 'cli' }], 'one from each door');
  t.match(both[1]!.after, { destination: { host: 'hooks.example.com' } }, 'the CLI entry keeps the host');
});
