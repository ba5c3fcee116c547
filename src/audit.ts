// The audit trail of changes people make (migration 0220): every change through the console or the JSON API
// (a request other than GET or HEAD that the operator guard let in and that succeeded) and every changing CLI
// command is an entry: who and in which role, what (the route or command), on which connection and record, when,
// from where, and the values before and after. A route that knows the values before its change leaves them in
// `ctx.state.audit`; the values after are its answer (or, for a form, what was submitted). Secrets are never kept.
// A request's entry is written by the console's guard (src/console/audit.ts), a command's by the command.
import { userInfo } from 'node:os';
import type { Context } from 'koa';
import { insertAudit } from './db/audit.ts';
import type { Db } from './db/index.ts';

/**
 * Where an actor's right comes from, which a token it makes inherits (src/console/tokens.ts): a person signed in,
 * the break-glass OPERATOR_TOKEN (an HMAC keyed by it), this machine's shell, the open demo console (which makes no
 * tokens), or a personal token (whose own origin the child takes, with the token as its parent).
 */
export type Grant =
  | { kind: 'person'; personId: number }
  | { kind: 'break-glass'; operatorMac: string }
  | { kind: 'cli' }
  | { kind: 'demo' }
  | { kind: 'token'; tokenId: number; expiresAt: Date; origin: Exclude<Grant, { kind: 'token' } | { kind: 'demo' }> };

/** Who a request or command acts as. */
export interface Actor {
  name: string;
  role: 'admin' | 'operator' | 'viewer';
  grant: Grant;
}

/** What a route adds to its entry: the values before, and the connection and record it changed. */
export interface AuditNote {
  /** An operation wrote the request's entry itself (auditChange): the guard writes none. */
  written?: boolean;
  before?: unknown;
  /** The values after, where the answer is not them (a redirect). */
  after?: unknown;
  connection?: { id: number; name: string };
  target?: string;
  /** A GET that changed something (the OAuth callback that creates a connection): audited like any change. */
  changedOnGet?: boolean;
}

/** A route notes what its entry should say (merged with what an earlier note said). */
export function noteAudit(ctx: Context, note: AuditNote): void {
  ctx.state.audit = { ...(ctx.state.audit as AuditNote | undefined), ...note };
}

const SECRET = /secret|token|password|authorization|cookie|^key$/i;
// Where we POST (a destination, a webhook) may carry its credential in the path or query (a Slack-style hook):
// kept by host only, as a destination is shown everywhere else.
const ENDPOINT = /^url$|webhook_url$/i;
const MAX_JSON = 64 * 1024;

/** A URL by its scheme and host only; text that is no URL is kept out whole. */
function hostOnly(v: unknown): string {
  try {
    const u = new URL(String(v));
    return `${u.protocol}//${u.host}${u.pathname !== '/' || u.search ? '/[redacted]' : ''}`;
  } catch {
    return '[redacted]';
  }
}

/** The value with every secret-looking field replaced, and capped in size (a 1 MB answer is noted as such). */
export function redact(value: unknown): unknown {
  const field = (k: string, x: unknown): unknown => (SECRET.test(k) ? '[redacted]' : ENDPOINT.test(k) && x ? hostOnly(x) : walk(x));
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object' && !(v instanceof Date)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, field(k, x)]));
    return v;
  };
  const out = walk(value);
  const text = JSON.stringify(out ?? null);
  return text.length > MAX_JSON ? { truncated: true, bytes: text.length } : out;
}

export const auditJson = (v: unknown) => (v === undefined ? null : JSON.stringify(redact(v)));

/** The actor of a command run at this machine's shell. */
export const cliActor = (): Actor => ({ name: `cli:${userInfo().username}`, role: 'admin', grant: { kind: 'cli' } });

/** Who acts and through which door: what an audit entry says besides the change. */
export interface Caller {
  actor: Actor;
  source: 'api' | 'console' | 'cli';
  /** The client's address (a request's), null for a command at this machine's shell. */
  address: string | null;
}

/** A command run at this machine's shell. */
export const cliCaller = (): Caller => ({ actor: cliActor(), source: 'cli', address: null });

/**
 * The caller of a request the operator guard let in (it leaves `ctx.state.caller`): the operation called with it
 * writes the request's entry itself, the same entry whichever door, so the guard writes none.
 */
export function callerOf(ctx: Context): Caller {
  noteAudit(ctx, { written: true });
  // Only a route mounted outside the guard (a test's bare router) has none: its entry says so rather than guess.
  return (
    (ctx.state.caller as Caller | undefined) ?? {
      actor: { name: 'unknown (no operator guard)', role: 'viewer', grant: { kind: 'demo' } },
      source: ctx.path.startsWith('/api/') ? 'api' : 'console',
      address: ctx.ip || null,
    }
  );
}

/** An operator's change, as one entry: the same shape whichever door (API, console, CLI) it came through. */
export interface Change {
  /** What was done, named by the operation (`channels.override.set`), not by a door's route or verb. */
  action: string;
  connection?: { id: number; name: string } | null;
  target?: string | null;
  before?: unknown;
  after?: unknown;
}

export async function auditChange(db: Db, caller: Caller, change: Change): Promise<void> {
  await insertAudit(db, {
    actor: caller.actor.name,
    role: caller.actor.role,
    action: change.action,
    connection_id: change.connection?.id ?? null,
    connection: change.connection?.name ?? null,
    target: change.target ?? null,
    before: auditJson(change.before),
    after: auditJson(change.after),
    source: caller.source,
    address: caller.address,
  });
}

/** A changing CLI command's entry (a command not yet an operation of its feature). */
export const auditCommand = (db: Db, change: Change): Promise<void> => auditChange(db, cliCaller(), change);
