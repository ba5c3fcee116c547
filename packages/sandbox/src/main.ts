#!/usr/bin/env node
// The sandbox on its own, for any integrator: `commerce-sandbox [--port 4010] [--profile spec] ...` (or
// `npm start` in this package). Every flag has an environment variable (SANDBOX_PORT...); a flag beats the
// environment, the environment beats the defaults. It shares nothing with commerce-sync's own CLI.
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { DEFAULTS, LIST_ORDERS, PROFILES, startSandbox, type ListOrder, type Profile } from './index.ts';

// flag -> [environment variable, kind, minimum]
const FLAGS = {
  host: ['SANDBOX_HOST', 'string', 0],
  port: ['SANDBOX_PORT', 'int', 0],
  seed: ['SANDBOX_SEED', 'int', 0],
  variants: ['SANDBOX_VARIANTS', 'int', 0],
  locations: ['SANDBOX_LOCATIONS', 'int', 1],
  token: ['SANDBOX_TOKEN', 'string', 0],
  'client-id': ['SANDBOX_CLIENT_ID', 'string', 0],
  'client-secret': ['SANDBOX_CLIENT_SECRET', 'string', 0],
  'admin-token': ['SANDBOX_ADMIN_TOKEN', 'string', 0],
  'time-scale': ['SANDBOX_TIME_SCALE', 'number', Number.MIN_VALUE],
  'rate-limit': ['SANDBOX_RATE_LIMIT', 'int', 1],
  'rate-window': ['SANDBOX_RATE_WINDOW', 'int', 1],
  profile: ['SANDBOX_PROFILE', 'string', 0],
  activity: ['SANDBOX_ACTIVITY', 'number', 0],
  'list-order': ['SANDBOX_LIST_ORDER', 'string', 0],
  'clock-skew': ['SANDBOX_CLOCK_SKEW', 'number', -86400],
  state: ['SANDBOX_STATE_FILE', 'string', 0],
} as const;
type Flag = keyof typeof FLAGS;

function usage(): string {
  const rows = Object.entries(FLAGS).map(([flag, [env]]) => `  --${flag.padEnd(14)} ${env}`);
  return (
    `usage: commerce-sandbox [--flag value ...]\n${rows.join('\n')}\n  --help\n--profile is ${PROFILES.join(' or ')}; ` +
    `--list-order (most recent first by) is ${LIST_ORDERS.join(' or ')}; --clock-skew is seconds the Date header runs ahead.`
  );
}

function options(argv: string[], env: NodeJS.ProcessEnv): Record<Flag, string | number | undefined> {
  const { values } = parseArgs({
    args: argv,
    options: { ...Object.fromEntries(Object.keys(FLAGS).map((f) => [f, { type: 'string' as const }])), help: { type: 'boolean' } },
  });
  if (values.help) {
    console.log(usage());
    process.exit(0);
  }
  const out = {} as Record<Flag, string | number | undefined>;
  const problems: string[] = [];
  for (const [flag, [name, kind, min]] of Object.entries(FLAGS) as [Flag, (typeof FLAGS)[Flag]][]) {
    const raw = (values as Record<string, string | undefined>)[flag] ?? env[name];
    if (raw === undefined || raw === '') continue;
    if (kind === 'string') {
      out[flag] = raw;
      continue;
    }
    const n = Number(raw);
    if (!Number.isFinite(n) || n < min || (kind === 'int' && !Number.isInteger(n)))
      problems.push(`--${flag} (${name}) must be ${kind === 'int' ? 'an integer' : 'a number'} >= ${min}, got "${raw}"`);
    else out[flag] = n;
  }
  if (out.profile !== undefined && !(PROFILES as readonly unknown[]).includes(out.profile))
    problems.push(`--profile (SANDBOX_PROFILE) must be ${PROFILES.join(' or ')}, got "${out.profile}"`);
  if (out['list-order'] !== undefined && !(LIST_ORDERS as readonly unknown[]).includes(out['list-order']))
    problems.push(`--list-order (SANDBOX_LIST_ORDER) must be ${LIST_ORDERS.join(' or ')}, got "${out['list-order']}"`);
  if (problems.length) {
    console.error(`${problems.join('\n')}\n\n${usage()}`);
    process.exit(2);
  }
  return out;
}

const o = options(process.argv.slice(2), process.env);
const sandbox = await startSandbox({
  host: o.host as string | undefined,
  port: (o.port as number | undefined) ?? DEFAULTS.port,
  seed: o.seed as number | undefined,
  variants: (o.variants as number | undefined) ?? 200,
  locations: o.locations as number | undefined,
  token: o.token as string | undefined,
  clientId: o['client-id'] as string | undefined,
  clientSecret: o['client-secret'] as string | undefined,
  adminToken: o['admin-token'] as string | undefined,
  timeScale: o['time-scale'] as number | undefined,
  rateLimit: o['rate-limit'] as number | undefined,
  rateWindowSeconds: o['rate-window'] as number | undefined,
  profile: o.profile as Profile | undefined,
  listOrder: o['list-order'] as ListOrder | undefined,
  clockSkewSeconds: o['clock-skew'] as number | undefined,
  stateFile: o.state as string | undefined,
  activity: (o.activity as number | undefined) ?? 2,
  log: pino({ level: process.env.LOG_LEVEL ?? 'info' }),
});
console.log(`sandbox listening at ${sandbox.url}`);
console.log(`privileged token: ${sandbox.token}`);
console.log(`admin API: ${sandbox.url}/__sandbox/ (Authorization: Bearer <admin token>)`);
const stop = async () => {
  process.off('SIGINT', stop);
  process.off('SIGTERM', stop);
  await sandbox.close();
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
