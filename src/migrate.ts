// `commerce-sync migrate`: our migrations (src/db/migrate.ts) and pg-boss's schema, then exit. A command of its own
// at the top: it drives both the database and the queues. Like the long-running processes it waits for a database
// that is away (Compose starting it before PostgreSQL, a Job scheduled before its database: src/db/wait.ts).
import type { CommandModule } from './command.ts';
import { openDatabase } from './db/index.ts';
import { whileDatabaseAway } from './db/wait.ts';
import { startBoss, stopBoss } from './queue/boss.ts';

export const commands: CommandModule['commands'] = {
  migrate: {
    summary: "Apply database migrations (ours and pg-boss's) and exit. Each runs once, in its own transaction.",
    async run({ config, log, out }) {
      const once = async () => {
        const database = await openDatabase(config, log, { migrate: false });
        try {
          const { migrate } = await import('./db/migrate.ts');
          const result = await migrate(database.url);
          const boss = await startBoss(database.url, log, { supervise: false, schedule: false, max: 2 });
          await stopBoss(boss, false);
          return result;
        } finally {
          await database.close();
        }
      };
      const result = config.DATABASE_URL ? await whileDatabaseAway(config.DATABASE_URL, log, once) : await once();
      out(result.applied.length ? `applied: ${result.applied.join(', ')}` : 'schema is up to date');
      out(`${result.applied.length + result.skipped.length} migrations in all; pg-boss schema ready`);
    },
  },
};
