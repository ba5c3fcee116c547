#!/usr/bin/env node
// The one entry point: commerce-sync <command> [options]. Each command lives with the code it drives; this
// file only knows where. The modules are imported on demand, so `--help` stays fast, through literal import()
// calls: a module that moves or loses its `commands` is a type error here, not a missing command.
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.ts';
import { createLogger } from './log.ts';
import { UsageError, type CommandModule, type CommandSpec } from './command.ts';
import { tracesWanted } from './telemetry/tracing.ts';
import { watchEnds, writerTo } from './shutdown.ts';

type Load = () => Promise<CommandModule>;
const start: Load = () => import('./start.ts');
const migrate: Load = () => import('./migrate.ts');
const receiver: Load = () => import('./receiver/cli.ts');
const worker: Load = () => import('./worker/cli.ts');
const sandbox: Load = () => import('./demo/cli.ts');
const api: Load = () => import('./connect.ts');
const stock: Load = () => import('./stock/cli.ts');
const channels: Load = () => import('./channels/cli.ts');
const push: Load = () => import('./push/cli.ts');
const operator: Load = () => import('./console/cli.ts');
const tokens: Load = () => import('./console/tokens-cli.ts');

// name, module, one-line summary, in the order help lists them.
const available: [string, Load, string][] = [
  ['start', start, 'run receiver, workers and console (and the sandbox when no account is connected)'],
  ['migrate', migrate, "apply database migrations (ours and pg-boss's) and exit"],
  ['receiver', receiver, 'run the webhook receiver alone'],
  ['worker', worker, 'run the workers alone (sync, reconciliation, push)'],
  ['sandbox', sandbox, 'run the simulator of the Commerce Operations Service'],
  ['connect', api, 'add a connection to a merchant account (privileged token or OAuth)'],
  ['connections', api, 'list connections and their status'],
  ['reset-mirror', api, "start a connection's mirror afresh from the account it reaches now"],
  ['api', api, 'call the service through the rate-budgeted client and print the JSON answer'],
  ['webhooks', receiver, 'list or sync webhook subscriptions (webhooks list, webhooks sync)'],
  ['deliveries', receiver, 'list stored webhook deliveries and their state'],
  ['replay', receiver, 'queue a stored delivery again, or send a dead letter back to its queue'],
  ['reconcile', worker, 'run a reconciliation sweep now'],
  ['stock', stock, 'print mirrored stock per location and the channel quantity'],
  ['channels', channels, 'manage sales channels: rules, overrides, stock held for channel orders, deliveries'],
  ['push', push, 'push an operation to the service (import-order, ship, invoice, pay, void, return, receive, stock-count)'],
  ['logs', operator, 'show or follow the sync log'],
  ['status', operator, 'per connection: health, lag, budget, queue depths'],
  ['audit', operator, 'who changed what, through the console, the API or the CLI'],
  ['tokens', tokens, 'personal API tokens for scripts and the CLI: list, create, revoke'],
];

function mainHelp(): string {
  const width = Math.max(...available.map(([n]) => n.length));
  return [
    'Usage: commerce-sync <command> [options]',
    '',
    'Commands:',
    ...available.map(([n, , s]) => `  ${n.padEnd(width)}  ${s}`),
    '',
    "Run `commerce-sync <command> --help` for a command's options, `commerce-sync --version` for the release and",
    'the schema version (its latest migration). Settings come from config/default.json and',
    'environment variables (see README.md).',
  ].join('\n');
}

export function commandHelp(name: string, spec: CommandSpec): string {
  const opts = Object.entries(spec.options ?? {});
  const rows = opts.map(([k, o]) => [
    `${o.short ? `-${o.short}, ` : ''}--${k}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`,
    o.description,
  ]);
  rows.push(['-h, --help', 'show this help']);
  const width = Math.max(...rows.map(([a]) => a!.length));
  return [
    `Usage: commerce-sync ${name}${spec.args ? ` ${spec.args}` : ''}${opts.length ? ' [options]' : ''}`,
    '',
    spec.summary,
    '',
    'Options:',
    ...rows.map(([a, b]) => `  ${a!.padEnd(width)}  ${b}`),
    ...(spec.details ? ['', spec.details] : []),
  ].join('\n');
}

/** The release (package.json) and the schema it migrates to (its latest migration): `0.2.0 (schema 0340_...)`. */
async function version(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  const { listMigrations } = await import('./db/migrate.ts');
  const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  const schema = (await listMigrations()).at(-1)?.replace(/\.sql$/, '') ?? 'none';
  return `commerce-sync ${pkg.version} (schema ${schema})`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(mainHelp());
    return name ? 0 : 2;
  }
  if (name === '--version' || name === '-v') {
    console.log(await version());
    return 0;
  }
  const entry = available.find(([n]) => n === name);
  if (!entry) {
    console.error(`commerce-sync: unknown command "${name}"\n`);
    console.error(mainHelp());
    return 2;
  }
  // Before the command's modules load: the SDK instruments pg as it is first imported.
  const stopTracing = tracesWanted(process.env) ? await (await import('./telemetry/tracing.ts')).startTracing() : null;
  try {
    return await run(name, rest, await entry[1]());
  } finally {
    // Spans still batched go out before the process ends (a kill -9 loses them, as it loses log lines).
    await stopTracing?.();
  }
}

/** Parses the command's options, loads the configuration and runs it; answers the exit code. */
async function run(name: string, rest: string[], module: CommandModule): Promise<number> {
  const spec = module.commands[name];
  if (!spec) throw new Error(`the module of ${name} has no such command`);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      // Node 24's parseArgs rejects keys present with an undefined value: pass only what is set.
      options: {
        ...Object.fromEntries(
          Object.entries(spec.options ?? {}).map(([k, o]) => [
            k,
            {
              type: o.type,
              ...(o.short ? { short: o.short } : {}),
              ...(o.multiple ? { multiple: o.multiple } : {}),
            },
          ]),
        ),
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: spec.positionals ?? false,
      strict: true,
    });
  } catch (err) {
    console.error(`commerce-sync ${name}: ${(err as Error).message}\n`);
    console.error(commandHelp(name, spec));
    return 2;
  }
  if (parsed.values.help) {
    console.log(commandHelp(name, spec));
    return 0;
  }
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const p of err.problems) console.error(`config: ${p}`);
      return 2;
    }
    throw err;
  }
  const log = createLogger(config.LOG_LEVEL, { destination: writerTo(process.stderr), pretty: process.stderr.isTTY });
  const stdout = writerTo(process.stdout);
  try {
    const code = await spec.run({
      name,
      values: parsed.values as never,
      positionals: parsed.positionals,
      config,
      log,
      out: (line) => stdout.write(`${line}\n`),
    });
    return code ?? 0;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`commerce-sync ${name}: ${err.message}\n`);
      console.error(commandHelp(name, spec));
      return 2;
    }
    throw err;
  }
}

// A closed output or (under npm) a parent gone ends the command quietly: src/shutdown.ts.
watchEnds();
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(`commerce-sync: ${err instanceof Error ? err.message : String(err)}`);
    if (process.env.LOG_LEVEL === 'debug' || process.env.LOG_LEVEL === 'trace') console.error(err);
    process.exitCode = 1;
  },
);
