// A database connection dropping under a transaction (PostgreSQL restarted, a failover, a proxy timing out)
// must fail that transaction, not end the process: pg emits 'error' on a checked-out client, and with no
// listener that 'error' kills a receiver or worker outright.
import t from 'tap';
import { fileURLToPath } from 'node:url';
import { testDatabase } from '../support/db.ts';
import { runNode } from '../support/processes.ts';

t.test('a connection lost in the middle of a transaction fails the transaction, the process lives', async (t) => {
  const tdb = await testDatabase(t);
  const script = fileURLToPath(new URL('./fixtures/pool-drop.ts', import.meta.url));
  const { code, both: out } = await runNode([script], { PATH: process.env.PATH, DATABASE_URL: tdb.url });
  t.equal(code, 0, 'the process survived the dropped connection', { output: out.slice(-1500) });
  const result = code === 0 ? JSON.parse(out.trim().split('\n').pop()!) : null;
  t.match(result, { outcome: /^failed: /, after: 1 }, 'the transaction failed and the pool serves the next query');
});
