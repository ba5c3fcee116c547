// A sandbox's account kept in a file (SandboxOptions.stateFile), so that a sandbox started again resumes the same
// account, as a real service's account outlives any client: its records and their ids, stock, webhook
// subscriptions, idempotency keys, clock and where its activity is. Written every few seconds while it runs
// (marked unclean) and at close (clean), each time whole to a temporary file renamed over the last, so a kill leaves
// the previous state. A state read back unclean may lack the last seconds' records: ids and numbers then go on
// STATE_GAP further, so none is given twice (a real service never reuses one).
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { Decimal } from 'decimal.js';
import type { StoreState } from './store.ts';

export const STATE_VERSION = 1;
/** How far ids, document numbers and sequences jump after an unclean stop. */
export const STATE_GAP = 1000;

export interface SandboxState {
  version: number;
  /** Written at close: nothing happened after it. */
  clean: boolean;
  /** The sandbox clock when saved: a resumed clock does not run backwards. */
  clock: number;
  store: StoreState;
  activity: { rng: number; labels: number };
  idempotent: [string, unknown][];
}

// JSON keeps neither Maps, Sets nor Decimals (whose toJSON is a string): each is written as a one-key object.
function encode(this: unknown, key: string, value: unknown): unknown {
  const raw = (this as Record<string, unknown>)[key];
  if (raw instanceof Decimal) return { $decimal: raw.toString() };
  if (raw instanceof Map) return { $map: [...raw.entries()] };
  if (raw instanceof Set) return { $set: [...raw] };
  return value;
}

function decode(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const o = value as Record<string, unknown>;
  if (typeof o.$decimal === 'string') return new Decimal(o.$decimal);
  if (Array.isArray(o.$map)) return new Map(o.$map as [unknown, unknown][]);
  if (Array.isArray(o.$set)) return new Set(o.$set);
  return value;
}

/** Serializes a state; the same text for the same state, so an unchanged one need not be written again. */
export const stateText = (state: SandboxState): string => JSON.stringify(state, encode);

export function writeState(file: string, text: string): void {
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, file);
}

/** The state in `file`; null when there is none. A file of another version or unreadable is an error, not a new account. */
export function readState(file: string): SandboxState | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  let state: SandboxState;
  try {
    state = JSON.parse(text, decode) as SandboxState;
  } catch (err) {
    throw new Error(`sandbox state ${file} is not readable JSON (${(err as Error).message}): move it away to start a new account`);
  }
  if (state.version !== STATE_VERSION)
    throw new Error(
      `sandbox state ${file} is version ${state.version}, this sandbox reads ${STATE_VERSION}: move it away to start a new account`,
    );
  return state;
}
