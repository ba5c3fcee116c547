// `commerce-sync start`: the receiver, workers and console in one process (the roles in ROLES, run by
// src/process.ts), with the embedded PostgreSQL when DATABASE_URL is unset and the demo sandbox when no account is
// connected.
import type { CommandModule } from './command.ts';
import * as consoleRole from './console/role.ts';
import { runRoles, type RoleName } from './process.ts';
import * as receiverRole from './receiver/role.ts';
import * as workerRole from './worker/role.ts';

/** Each role and the modules that mount it. */
const ROLES = { receiver: [receiverRole], worker: workerRole.modules, console: [consoleRole] };

export const commands: CommandModule['commands'] = {
  start: {
    summary:
      'Run the receiver, workers and console in one process (the roles in ROLES). With no DATABASE_URL an ' +
      'embedded PostgreSQL starts under DATA_DIR; with no connected account the sandbox runs as a demo.',
    run: (ctx) => runRoles(ctx, Object.fromEntries((ctx.config.ROLES.split(',') as RoleName[]).map((r) => [r, ROLES[r]])), { demo: true }),
  },
};
