#!/usr/bin/env node
// The one entry point: commerce-sync <command> [options]. Each command lives with the code it drives;
// this file only knows where, so `--help` stays fast and modules load on demand.
import { parseArgs } from 'node:util';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from './config.ts';
import { createLogger } from './log.ts';
import { UsageError, type CommandModule, type CommandSpec } from './command.ts';

// name -> module (relative to src/) and one-line summary, in the order help lists them.
const registry: [string, string, string][] = [
  ['start', 'start.ts', 'run receiver, workers and console (and the sandbox when no account is connected)'],
  ['migrate', 'db/cli.ts', "apply database migrations (ours and pg-boss's) and exit"],
  ['receiver', 'receiver/cli.ts', 'run the webhook receiver alone'],
  ['worker', 'sync/cli.ts', 'run the workers alone (sync, reconciliation, push)'],
  ['sandbox', 'demo/cli.ts', 'run the simulator of the Commerce Operations Service'],
  ['connect', 'api/cli.ts', 'add a connection to a merchant account (privileged token or OAuth)'],
  ['connections', 'api/cli.ts', 'list connections and their status'],
  ['api', 'api/cli.ts', 'call the service through the rate-budgeted client and print the JSON answer'],
  ['webhooks', 'receiver/cli.ts', 'list or sync webhook subscriptions (webhooks list, webhooks sync)'],
  ['deliveries', 'receiver/cli.ts', 'list stored webhook deliveries and their state'],
  ['reconcile', 'sync/cli.ts', 'run a reconciliation sweep now'],
  ['stock', 'stock/cli.ts', 'print mirrored stock per location and the channel quantity'],
  ['push', 'push/cli.ts', 'push an operation to the service (import-order, ship, invoice, pay, void, return, receive, stock-count)'],
  ['logs', 'console/cli.ts', 'show or follow the sync log'],
  ['status', 'console/cli.ts', 'per connection: health, lag, budget, queue depths'],
];

const available = registry.filter(([, mod]) => existsSync(fileURLToPath(new URL(mod, import.meta.url))));

function mainHelp(): string {
  const width = Math.max(...available.map(([n]) => n.length));
  return [
    'Usage: commerce-sync <command> [options]',
    '',
    'Commands:',
    ...available.map(([n, , s]) => `  ${n.padEnd(width)}  ${s}`),
    '',
    "Run `commerce-sync <command> --help` for a command's options. Settings come from config/default.json and",
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

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(mainHelp());
    return name ? 0 : 2;
  }
  const entry = available.find(([n]) => n === name);
  if (!entry) {
    console.error(`commerce-sync: unknown command "${name}"\n`);
    console.error(mainHelp());
    return 2;
  }
  const mod = (await import(`./${entry[1]}`)) as CommandModule;
  const spec = mod.commands[name]!;
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
  const log = createLogger(config.LOG_LEVEL, { destination: process.stderr, pretty: process.stderr.isTTY });
  try {
    const code = await spec.run({
      name,
      values: parsed.values as never,
      positionals: parsed.positionals,
      config,
      log,
      out: (line) => process.stdout.write(`${line}\n`),
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
