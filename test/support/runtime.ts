// A runtime for tests, built by the factory `start` uses (src/runtime.ts), on a test database the test owns:
// stopped at teardown (the database stays the test's).
import type { Config } from '../../src/config.ts';
import type { Logger } from '../../src/log.ts';
import { mount as mountConsole } from '../../src/console/role.ts';
import { mount as mountReceiver } from '../../src/receiver/role.ts';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../src/runtime.ts';
import type { Server } from '../../src/server.ts';
import type { TestDatabase } from './db.ts';
import type { Teardown } from './teardown.ts';

export async function testRuntime(
  t: Teardown,
  tdb: Pick<TestDatabase, 'url' | 'pool' | 'db'>,
  config: Config,
  log: Logger,
  opts: Omit<RuntimeOptions, 'database'> & { databaseUrl?: string } = {},
): Promise<Runtime> {
  const { databaseUrl, ...rest } = opts;
  const rt = await createRuntime(config, log, {
    ...rest,
    database: { url: databaseUrl ?? tdb.url, pool: tdb.pool, db: tdb.db, close: async () => {} },
    boss: { supervise: false, schedule: false, max: 3, ...(databaseUrl ? { url: tdb.url } : {}), ...rest.boss },
  });
  t.teardown(() => rt.stop());
  return rt;
}

/**
 * The console role (and with `receiver`, the receiver role) on a test runtime listening on a free port, as
 * `start` mounts them. Its live streams end before the runtime stops, so the server closes at once.
 */
export async function testConsole(
  t: Teardown,
  tdb: Pick<TestDatabase, 'url' | 'pool' | 'db'>,
  config: Config,
  log: Logger,
  opts: { receiver?: boolean; demo?: Runtime['demo'] } = {},
): Promise<{ rt: Runtime; server: Server }> {
  const rt = await testRuntime(t, tdb, config, log);
  rt.demo = opts.demo ?? false;
  // Teardowns run last first: this one before the runtime's stop.
  t.teardown(async () => {
    for (const step of rt.onStop.splice(0).reverse()) await step();
  });
  if (opts.receiver) await mountReceiver(rt);
  await mountConsole(rt);
  const server = await rt.listen(0);
  return { rt, server };
}
