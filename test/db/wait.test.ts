// Waiting for the database at start (src/db/wait.ts): which errors mean "away" (tried again) and which end the start
// at once, the address named in log lines, the backoff, one log line per interval, and a stop while waiting.
// test/reliability/start-order.test.ts runs it in real processes.
import t from 'tap';
import { MigrationError } from '../../src/db/migrate.ts';
import { databaseAddress, databaseAway, whileDatabaseAway } from '../../src/db/wait.ts';
import { captureLogger } from '../support/log.ts';

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

t.test('away: refused, cut, restarting, a name not there yet; not: credentials, a missing database, a bad migration', async (t) => {
  const refused = Object.assign(new AggregateError([pgError('ECONNREFUSED', 'connect ECONNREFUSED ::1:5432')], ''), {
    code: 'ECONNREFUSED',
  });
  for (const [what, err] of [
    ['refused on every address', refused],
    ['cut', new Error('Connection terminated unexpectedly')],
    ['starting up', pgError('57P03', 'the database system is starting up')],
    ['shut down under it', pgError('57P01', 'terminating connection due to immediate shutdown command')],
    ['too many connections', pgError('53300', 'sorry, too many clients already')],
    ['a name not there yet', pgError('ENOTFOUND', 'getaddrinfo ENOTFOUND db')],
    ['a migration cut off', new MigrationError('0001_x.sql', new Error('Connection terminated unexpectedly'))],
  ] as const)
    t.ok(databaseAway(err), `${what}: waited for`);
  for (const [what, err] of [
    ['a wrong password', pgError('28P01', 'password authentication failed for user "app"')],
    ['a missing database', pgError('3D000', 'database "nope" does not exist')],
    ['no pg_hba entry', pgError('28000', 'no pg_hba.conf entry for host')],
    ['a migration that fails', new MigrationError('0001_x.sql', pgError('42601', 'syntax error at or near "CREAT"'))],
    ['anything else', new Error('boom')],
  ] as const)
    t.notOk(databaseAway(err), `${what}: not waited for`);
});

t.test('the address in log lines is HOST:PORT, never the credentials', async (t) => {
  t.equal(databaseAddress('postgres://app:s3cret@db.internal:6543/app'), 'db.internal:6543');
  t.equal(databaseAddress('postgres://app:s3cret@db/app'), 'db:5432');
  t.equal(databaseAddress('postgresql:///app?host=/var/run/postgresql'), '/var/run/postgresql:5432');
  t.equal(databaseAddress('not a url'), 'DATABASE_URL');
});

t.test('tries again with backoff while the database is away, one line per interval, then goes on', async (t) => {
  const { log, lines } = captureLogger('info');
  const reasons: (string | null)[] = [];
  const at: number[] = [];
  const started = Date.now();
  const result = await whileDatabaseAway(
    'postgres://app:s3cret@db:5432/app',
    log,
    async () => {
      at.push(Date.now() - started);
      if (at.length < 5) throw pgError('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.1:5432');
      return 'started';
    },
    { firstDelayMs: 10, maxDelayMs: 40, logEveryMs: 60_000, onWait: (r) => reasons.push(r) },
  );
  t.equal(result, 'started');
  const gaps = at.slice(1).map((a, i) => a - at[i]!);
  t.ok(
    gaps.every((g, i) => g >= [10, 20, 40, 40][i]! - 2),
    `waits 10, 20, 40, 40 ms (at most maxDelayMs) between tries: ${gaps}`,
  );
  const warned = lines().filter((l) => l.level === 40);
  t.equal(warned.length, 1, 'one waiting line in the interval, not one per try');
  t.equal(warned[0]!.msg, 'waiting for PostgreSQL at db:5432: connect ECONNREFUSED 10.0.0.1:5432; retrying');
  t.match(lines().at(-1)!.msg, /PostgreSQL at db:5432 answers; started/);
  t.notMatch(JSON.stringify(lines()), /s3cret/, 'no password in the log');
  t.equal(reasons.at(-1), null, 'not waiting once the last try is under way');
  t.match(reasons[1]!, /^starting: waiting for the database at db:5432 \(connect ECONNREFUSED/, 'the reason /readyz gives');
});

t.test('anything but the database away ends it at once; a stop ends the wait at once', async (t) => {
  const { log } = captureLogger('silent');
  let tries = 0;
  await t.rejects(
    whileDatabaseAway('postgres://db/app', log, async () => {
      tries++;
      throw pgError('28P01', 'password authentication failed for user "app"');
    }),
    /password authentication failed/,
  );
  t.equal(tries, 1, 'tried once');

  let stop!: () => void;
  const stopping = new Promise<void>((r) => {
    stop = r;
  });
  let stopped = false;
  const t0 = Date.now();
  const waiting = whileDatabaseAway(
    'postgres://db/app',
    log,
    async () => {
      throw pgError('ECONNREFUSED', 'connect ECONNREFUSED');
    },
    {
      firstDelayMs: 60_000,
      stopping,
      check: () => {
        if (stopped) throw new Error('interrupted');
      },
    },
  );
  setTimeout(() => {
    stopped = true;
    stop();
  }, 50);
  await t.rejects(waiting, /interrupted/, 'the check after the wait ends it');
  t.ok(Date.now() - t0 < 5000, `within ${Date.now() - t0} ms, not the minute's wait`);
});
