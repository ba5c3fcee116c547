// `commerce-sync start`: the receiver, workers and console in one process (the roles in ROLES, src/process.ts),
// with the embedded PostgreSQL when DATABASE_URL is unset and the demo sandbox when no account is connected.
import type { CommandModule } from './command.ts';
import { runRoles, type Role } from './process.ts';

export const commands: CommandModule['commands'] = {
  start: {
    summary:
      'Run the receiver, workers and console in one process (the roles in ROLES). With no DATABASE_URL an ' +
      'embedded PostgreSQL starts under DATA_DIR; with no connected account the sandbox runs as a demo.',
    run: (ctx) => runRoles(ctx, ctx.config.ROLES.split(',') as Role[], { demo: true }),
  },
};
