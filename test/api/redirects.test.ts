// Budgeted requests follow no redirect, as the token endpoint does not: a 3xx could take the Authorization header
// (the account's token) and the body anywhere. The answer is an error naming the status, and the place it points
// to hears nothing.
import { createServer } from 'node:http';
import t from 'tap';
import { ApiError, clientFor } from '../../src/api/index.ts';
import { listenLocal } from '../support/http.ts';
import { setup } from './harness.ts';

t.test('a 3xx from the service is an error, not followed, and the token goes nowhere else', async (t) => {
  const s = await setup(t, { sandbox: { variants: 2 } });
  const elsewhere: string[] = [];
  const target = await listenLocal(
    t,
    createServer((req, res) => {
      elsewhere.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
      res.end('{}');
    }),
  );
  const redirecting = await listenLocal(
    t,
    createServer((req, res) => {
      res.statusCode = req.method === 'GET' ? 302 : 307;
      res.setHeader('location', `${target}${req.url}`);
      res.end();
    }),
  );
  await s.database.db.updateTable('connections').set({ base_url: redirecting }).where('id', '=', s.connection.id).execute();
  const client = await clientFor(s.deps, { ...s.connection, base_url: redirecting }, { backoffBaseMs: 10, backoffMaxMs: 100 });
  const read = await client.get('/variants').catch((e) => e);
  t.ok(read instanceof ApiError, 'a read answered 302 fails');
  t.equal(read.status, 302);
  const write = await client.request('POST', '/products', { body: { product: { name: 'x' } } }).catch((e) => e);
  t.equal(write.status, 307, 'so does a write answered 307');
  t.same(elsewhere, [], 'the place a redirect points to gets no request (and no token)');
});
