// `commerce-sync sandbox`: runs the simulator until Ctrl-C. Every option has an environment variable
// (config/default.json); a flag beats the environment.
import { stringOption, UsageError, type CommandSpec } from '../command.ts';
import { untilStopped } from '../shutdown.ts';
import { PROFILES, startSandbox, type Profile } from '@commerce-sync/sandbox';

const num = (name: string, v: string | undefined, fallback: number, min: number, integer: boolean): number => {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n)))
    throw new UsageError(`--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got "${v}"`);
  return n;
};

export const commands: Record<string, CommandSpec> = {
  sandbox: {
    summary: 'Run the simulator of the Commerce Operations Service (prints its base URL and privileged token).',
    options: {
      host: stringOption('H', 'H', 'address to bind (SANDBOX_HOST, default 127.0.0.1)'),
      port: stringOption('p', 'P', 'port, 0 = a free one (SANDBOX_PORT)'),
      seed: stringOption('s', 'N', 'catalog seed (SANDBOX_SEED)'),
      variants: stringOption('n', 'N', 'seeded variants, 0 = empty account (SANDBOX_VARIANTS)'),
      locations: stringOption('l', 'N', 'seeded stock locations (SANDBOX_LOCATIONS)'),
      token: stringOption('t', 'T', 'privileged access token (SANDBOX_TOKEN)'),
      'client-id': stringOption('i', 'ID', 'OAuth client id (COMMERCE_CLIENT_ID)'),
      'client-secret': stringOption('S', 'S', 'OAuth client secret and webhook signing key (SANDBOX_CLIENT_SECRET)'),
      'admin-token': stringOption('a', 'T', 'admin API token (SANDBOX_ADMIN_TOKEN)'),
      'time-scale': stringOption('x', 'X', 'sandbox time runs X times faster (SANDBOX_TIME_SCALE)'),
      'rate-limit': stringOption('r', 'N', 'requests per window (SANDBOX_RATE_LIMIT)'),
      'rate-window': stringOption('w', 'S', 'rate window in sandbox seconds (SANDBOX_RATE_WINDOW)'),
      profile: stringOption('P', 'spec|documented', 'behave as the spec says or as the real service is documented (SANDBOX_PROFILE)'),
      activity: stringOption('A', 'PER_SECOND', 'merchant operations per second (SANDBOX_ACTIVITY)'),
      state: stringOption('f', 'FILE', 'keep the account in FILE: resumed from it at start, written while running and at stop'),
    },
    details: 'The admin API lives under <url>/__sandbox/ (Authorization: Bearer <admin token>); see docs/sandbox.md.',
    async run({ values, config, log, out }) {
      const s = (k: string) => values[k] as string | undefined;
      const profile = s('profile') ?? config.SANDBOX_PROFILE;
      if (!(PROFILES as readonly string[]).includes(profile))
        throw new UsageError(`--profile must be ${PROFILES.join(' or ')}, got "${profile}"`);
      const sandbox = await startSandbox({
        host: s('host') ?? config.SANDBOX_HOST,
        port: num('port', s('port'), config.SANDBOX_PORT, 0, true),
        seed: num('seed', s('seed'), config.SANDBOX_SEED, 0, true),
        variants: num('variants', s('variants'), config.SANDBOX_VARIANTS, 0, true),
        locations: num('locations', s('locations'), config.SANDBOX_LOCATIONS, 1, true),
        token: s('token') ?? config.SANDBOX_TOKEN,
        clientId: s('client-id') ?? config.COMMERCE_CLIENT_ID,
        clientSecret: s('client-secret') ?? config.SANDBOX_CLIENT_SECRET,
        adminToken: s('admin-token') ?? config.SANDBOX_ADMIN_TOKEN,
        timeScale: num('time-scale', s('time-scale'), config.SANDBOX_TIME_SCALE, Number.MIN_VALUE, false),
        rateLimit: num('rate-limit', s('rate-limit'), config.SANDBOX_RATE_LIMIT, 1, true),
        rateWindowSeconds: num('rate-window', s('rate-window'), config.SANDBOX_RATE_WINDOW, 1, true),
        profile: profile as Profile,
        activity: num('activity', s('activity'), config.SANDBOX_ACTIVITY, 0, false),
        stateFile: s('state'),
        log: log.child({ role: 'sandbox' }),
      });
      out(`sandbox listening at ${sandbox.url}`);
      out(`privileged token: ${sandbox.token}`);
      out(`admin API: ${sandbox.url}/__sandbox/ (Authorization: Bearer <admin token>)`);
      await untilStopped();
      await sandbox.close();
    },
  },
};
