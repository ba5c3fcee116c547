// The contract between src/cli.ts and each command module: a module exports `commands`, a map of
// name to CommandSpec. Options are node:util parseArgs options plus a description for --help.
import type { Config } from './config.ts';
import type { Logger } from './log.ts';

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  description: string;
  /** Shown in help as the placeholder, e.g. URL, N, FILE. */
  value?: string;
}

export interface CommandContext {
  name: string;
  values: Record<string, string | boolean | string[] | boolean[] | undefined>;
  positionals: string[];
  config: Config;
  log: Logger;
  out: (line: string) => void;
}

export interface CommandSpec {
  summary: string;
  /** Usage line after `commerce-sync <name>`, e.g. `[METHOD] PATH`. */
  args?: string;
  /** Extra help text after the options. */
  details?: string;
  options?: Record<string, OptionSpec>;
  positionals?: boolean;
  /** Commands that only print help or manage config do not need it loaded. */
  needsConfig?: boolean;
  // biome-ignore lint/suspicious/noConfusingVoidType: a command that returns nothing exits 0, one that returns a number exits with it
  run(ctx: CommandContext): Promise<number | void>;
}

export type CommandModule = { commands: Record<string, CommandSpec> };

/** A usage problem in a command's arguments: printed with the command's help, exit 2. */
export class UsageError extends Error {}

/** Lines of a plain-text table: columns padded to their widest cell, two spaces apart. */
export function formatTable(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows.map((r) =>
    r
      .map((cell, c) => cell.padEnd(widths[c]!))
      .join('  ')
      .trimEnd(),
  );
}

/** A string option `--name VALUE` with its letter (repeatable with `multiple`). */
export function stringOption(short: string, value: string, description: string, multiple = false): OptionSpec {
  return { type: 'string', short, multiple, value, description };
}

/** Options several commands share (the same flag, letter and placeholder everywhere); each names what it does there. */
export const sharedOptions = {
  connection: (description = 'only this connection'): OptionSpec => ({
    type: 'string',
    short: 'c',
    multiple: false,
    value: 'NAME',
    description,
  }),
  limit: (description = 'how many (default 50)'): OptionSpec => ({ type: 'string', short: 'n', multiple: false, value: 'N', description }),
  json: (description = 'print JSON'): OptionSpec => ({ type: 'boolean', short: 'j', multiple: false, description }),
};
