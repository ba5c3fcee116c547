// Operator access to the console, /api and /metrics. With OPERATOR_TOKEN set, a request must carry it as
// `Authorization: Bearer TOKEN` or as the password of Basic auth (any user name), or carry the `cs_operator`
// cookie of a session the console's login form opened. Without it, only demo mode on a loopback address is
// open, and only while the built-in sandbox is the only connection. Wrong tokens are throttled per address.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import { loopbackName, normalizeBaseUrl } from '../api/connections.ts';
import type { Config } from '../config.ts';
import { listConnections } from '../db/connections.ts';
import type { Db } from '../db/index.ts';
import { failureWait, recordFailure } from '../db/login-failures.ts';
import { liveToken, tokenUsed, type LiveToken } from '../db/people.ts';
import type { Role } from '../db/schema.ts';
import { closeSession, openSession, personSession, sessionLive } from '../db/sessions.ts';
import { isRole, lower } from './roles.ts';
import { SESSION_COOKIE } from '../openapi/document.ts';
import type { Runtime } from '../runtime.ts';
import type { Actor, Grant } from '../audit.ts';

const digest = (s: string) => createHash('sha256').update(s).digest();
const same = (a: string, b: string) => timingSafeEqual(digest(a), digest(b));

/** The token of an Authorization header (Bearer, or Basic's password), if any. */
function headerToken(ctx: Context): string | null {
  const auth = ctx.get('authorization');
  if (/^bearer /i.test(auth)) return auth.slice(7).trim();
  if (/^basic /i.test(auth)) {
    const decoded = Buffer.from(auth.slice(6).trim(), 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    return i >= 0 ? decoded.slice(i + 1) : null;
  }
  return null;
}

/** Which operator token a session was opened with: keyed by the token, so the table does not reveal it. */
const tokenMac = (config: Config) =>
  createHmac('sha256', config.OPERATOR_TOKEN).update('commerce-sync operator session').digest('base64url');
/** A session's row id: the digest of the cookie's secret, so a copy of the table opens no session. */
const sessionId = (cookie: string) => digest(cookie).toString('hex');

/** Personal API tokens start so (src/console/tokens.ts); only their SHA-256 is kept. */
export const TOKEN_PREFIX = 'cst_';
export const tokenDigest = (token: string) => digest(token).toString('hex');

const FAILURE_WINDOW_SECONDS = 15 * 60;

const socketAddress = (ctx: Context) => ctx.req.socket.remoteAddress ?? '';

/**
 * The client's address as the trusted proxies report it: with TRUST_PROXY hops, the X-Forwarded-For entry that
 * many from its end (each proxy appends the address it saw; entries further left are whatever the client wrote).
 * Without, the socket's.
 */
export function clientAddress(ctx: Context, trustedHops: number): string {
  if (trustedHops <= 0) return socketAddress(ctx);
  const chain = ctx
    .get('x-forwarded-for')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return chain[chain.length - trustedHops] ?? chain[0] ?? socketAddress(ctx);
}

const loopback = (ip: string) => ip === '127.0.0.1' || ip === '::1' || ip === '::ffff:127.0.0.1';

export { loopbackName };

const hostnameOf = (host: string): string | null => {
  try {
    return new URL(`http://${host.trim()}`).hostname;
  } catch {
    return null;
  }
};

/**
 * DNS rebinding: a page on the attacker's name, re-pointed at 127.0.0.1 (or at this host), is same-origin
 * with itself, so its requests pass an Origin check and carry whatever Host the attacker's name gives. Only
 * the names this console is really reached at are accepted: loopback names and the host of PUBLIC_URL (or of
 * HOST when PUBLIC_URL is empty). The raw Host is checked, and a forwarded host too when present (the app
 * trusts proxy headers, and a same-origin page may set that header).
 */
export function knownHost(ctx: Context, publicUrl: string): boolean {
  const ours = new URL(publicUrl).hostname;
  const names = [ctx.req.headers.host ?? '', ...(ctx.get('x-forwarded-host') ? ctx.get('x-forwarded-host').split(',') : [])];
  return names.every((h) => {
    const name = hostnameOf(h);
    return !!name && (loopbackName(name) || name === ours);
  });
}

const refuseHost = (ctx: Context) => {
  ctx.status = 403;
  ctx.body = {
    error: 'the Host of this request is not a name of this console: use localhost, or set PUBLIC_URL to the address it is reached at',
  };
};

/** Middleware for console routes outside the operator guard (login, logout, assets): known hosts only. */
export function requireKnownHost(publicUrl: () => string) {
  return async (ctx: Context, next: Next) => (knownHost(ctx, publicUrl()) ? next() : refuseHost(ctx));
}

export type AccessMode = 'token' | 'open-demo' | 'closed';

export interface AccessDeps {
  config: Config;
  db: Db;
  /** Read per request: the sandbox starts after mounting, and connections come and go while it runs. */
  demo: () => Runtime['demo'];
  /** Where this process is reached (PUBLIC_URL, or HOST:PORT): its host is the one non-loopback name accepted. */
  publicUrl: () => string;
}

/**
 * How the console is protected for this request. Open demo needs no OPERATOR_TOKEN, the built-in sandbox
 * running, and no connection but the sandbox's: the moment a real account is connected (by the CLI, or
 * SANDBOX=on beside COMMERCE_BASE_URL) the console closes, without a restart.
 */
export async function accessMode(deps: AccessDeps): Promise<AccessMode> {
  if (deps.config.OPERATOR_TOKEN || deps.config.OIDC_ISSUER) return 'token';
  const demo = deps.demo();
  if (!demo) return 'closed';
  const sandbox = normalizeBaseUrl(demo.baseUrl);
  return (await listConnections(deps.db)).every((c) => c.base_url === sandbox) ? 'open-demo' : 'closed';
}

/** The access mode the guard decided for this request (pages show it). */
export const accessOf = (ctx: Context): AccessMode => (ctx.state.access as AccessMode | undefined) ?? 'closed';

const throttled = (ctx: Context, seconds: number) => {
  ctx.status = 429;
  ctx.set('Retry-After', String(seconds));
  ctx.body = { error: `too many wrong operator tokens from this address: try again in ${seconds} s` };
};

// Who a request acts as, for the audit trail (src/console/audit.ts). OPERATOR_TOKEN is the break-glass
// administrator's; the open demo console is an administrator on this machine only.
const breakGlass = (config: Config, login = false): Actor => ({
  name: login ? 'break-glass (OPERATOR_TOKEN, console login)' : 'break-glass (OPERATOR_TOKEN)',
  role: 'admin',
  grant: { kind: 'break-glass', operatorMac: tokenMac(config) },
});
const DEMO: Actor = { name: 'demo (open on localhost)', role: 'admin', grant: { kind: 'demo' } };

/**
 * Who a live personal token acts as now, or null when the right it was made with is gone: a person's token acts in
 * the lower of its role and the person's role now (a person disabled or removed: none), a break-glass token only
 * while OPERATOR_TOKEN is the one it was made with, a shell's as made; a token of unknown origin never.
 */
function tokenActor(t: LiveToken, config: Config): Actor | null {
  let origin: Extract<Grant, { kind: 'token' }>['origin'];
  let role: Role = t.role;
  if (t.made_by === 'person' && t.person_role && t.person_id !== null) {
    origin = { kind: 'person', personId: t.person_id };
    role = lower(t.role, t.person_role);
  } else if (t.made_by === 'break-glass' && config.OPERATOR_TOKEN && t.operator_mac === tokenMac(config)) {
    origin = { kind: 'break-glass', operatorMac: t.operator_mac };
  } else if (t.made_by === 'cli') {
    origin = { kind: 'cli' };
  } else return null;
  return {
    name: `${t.person} (token ${t.name})`,
    role,
    grant: { kind: 'token', tokenId: t.id, expiresAt: new Date(t.expires_at), origin },
  };
}

const admitted = (ctx: Context, actor: Actor, next: Next) => {
  ctx.state.actor = actor;
  return next();
};

export type LoginResult = { ok: true; actor: Actor } | { ok: false; status: 401 | 429; retryAfter?: number; reason: string };

/**
 * Operator access of one process: the guard of its operator routes, and the login form's sessions. One per
 * process (consoleRouters, or start's /metrics), so the failure throttle sees all of its token checks.
 */
export class OperatorAccess {
  private readonly deps: AccessDeps;

  constructor(deps: AccessDeps) {
    this.deps = deps;
  }

  /**
   * A token offered by the login form or a header. A right one is never refused: a stranger's wrong tokens must not
   * shut out Prometheus or a channel behind the same proxy. Wrong ones are counted per client address in
   * PostgreSQL (every process sees the same count); past OPERATOR_LOGIN_FAILURES in 15 minutes they get 429.
   * The token is long (24 characters at least), so guessing it is out of reach whatever the answer tells.
   */
  private async check(ctx: Context, token: string): Promise<LoginResult> {
    const { db, config } = this.deps;
    if (config.OPERATOR_TOKEN && same(token, config.OPERATOR_TOKEN)) return { ok: true, actor: breakGlass(config) };
    if (token.startsWith(TOKEN_PREFIX)) {
      const personal = await liveToken(db, tokenDigest(token));
      const actor = personal && tokenActor(personal, config);
      if (actor) {
        await tokenUsed(db, personal.id);
        return { ok: true, actor };
      }
    }
    const address = clientAddress(ctx, config.TRUST_PROXY);
    const wait = await failureWait(db, address, config.OPERATOR_LOGIN_FAILURES, FAILURE_WINDOW_SECONDS);
    if (wait > 0)
      return { ok: false, status: 429, retryAfter: wait, reason: `Too many wrong tokens from this address: try again in ${wait} s.` };
    await recordFailure(db, address, FAILURE_WINDOW_SECONDS);
    return { ok: false, status: 401, reason: 'That is not the operator token.' };
  }

  /** Who the request's session cookie is: a person signed in, or the break-glass token's login; null: none. */
  private async sessionOf(ctx: Context): Promise<Actor | null> {
    const cookie = ctx.cookies.get(SESSION_COOKIE);
    if (!cookie) return null;
    const person = await personSession(this.deps.db, sessionId(cookie));
    // The lower of the sign-in's role and the person's now: a later sign-in in a lower role lowers a session opened earlier too.
    if (person && isRole(person.role) && isRole(person.person_role))
      return {
        name: person.email,
        role: lower(person.role, person.person_role),
        grant: { kind: 'person', personId: person.person_id },
      };
    if (this.deps.config.OPERATOR_TOKEN && (await sessionLive(this.deps.db, sessionId(cookie), tokenMac(this.deps.config))))
      return breakGlass(this.deps.config, true);
    return null;
  }

  /** Koa middleware guarding operator routes; leaves the mode it decided in `ctx.state.access`. */
  guard() {
    return async (ctx: Context, next: Next) => {
      const mode = await accessMode(this.deps);
      ctx.state.access = mode;
      const token = headerToken(ctx);
      // A request carrying the token is judged by it: no browser adds it to a rebound page's requests by
      // itself, and scrapers or scripts may use an internal name. Cookies and open demo are ambient: host checked.
      if (!(mode === 'token' && token !== null) && !knownHost(ctx, this.deps.publicUrl())) return refuseHost(ctx);
      if (mode === 'token') {
        if (token !== null) {
          const result = await this.check(ctx, token);
          if (result.ok) return admitted(ctx, result.actor, next);
          if (result.status === 429) return throttled(ctx, result.retryAfter!);
        } else {
          const actor = await this.sessionOf(ctx);
          if (actor) return admitted(ctx, actor, next);
        }
      } else if (mode === 'open-demo' && loopback(socketAddress(ctx))) {
        return admitted(ctx, DEMO, next);
      }
      ctx.status = 401;
      ctx.set('WWW-Authenticate', 'Bearer realm="commerce-sync"');
      ctx.body = {
        error:
          mode === 'closed'
            ? 'operator access is closed: set OPERATOR_TOKEN to use the console and API'
            : 'operator token required (Authorization: Bearer TOKEN)',
      };
    };
  }

  /**
   * The login form: a right token opens a session of OPERATOR_SESSION_HOURS (a random cookie; the table keeps its
   * digest). The cookie is Secure unless the console is reached by a loopback name over plain http (a browser
   * drops a Secure cookie there); behind a proxy that terminates TLS it is Secure whatever the proxy says.
   */
  async login(ctx: Context, token: string): Promise<LoginResult> {
    if (!this.deps.config.OPERATOR_TOKEN) return { ok: false, status: 401, reason: 'Logging in needs OPERATOR_TOKEN to be set.' };
    const result = await this.check(ctx, token);
    if (!result.ok) return result;
    if (result.actor.grant.kind !== 'break-glass')
      return { ok: false, status: 401, reason: 'A personal token is for scripts and the CLI: sign in with your account instead.' };
    await this.startSession(ctx, { tokenMac: tokenMac(this.deps.config) });
    return result;
  }

  /** A person the OpenID provider vouched for gets a session of OPERATOR_SESSION_HOURS in the role they were given. */
  async openPersonSession(ctx: Context, person: { id: number; role: Role }): Promise<void> {
    await this.startSession(ctx, { person });
  }

  private async startSession(ctx: Context, who: { tokenMac: string } | { person: { id: number; role: Role } }): Promise<void> {
    const secret = randomBytes(32).toString('base64url');
    const ttlMs = this.deps.config.OPERATOR_SESSION_HOURS * 3_600_000;
    await openSession(this.deps.db, { id: sessionId(secret), expiresAt: new Date(Date.now() + ttlMs), ...who });
    const secure = ctx.secure || !loopbackName(hostnameOf(ctx.host) ?? '');
    ctx.cookies.secure = secure; // Koa refuses a Secure cookie on a request it thinks is plain http
    ctx.cookies.set(SESSION_COOKIE, secret, { httpOnly: true, sameSite: 'strict', secure, path: '/', maxAge: ttlMs, overwrite: true });
  }

  /** Ends the session of the request's cookie (the row goes: the cookie is worthless wherever it was copied). */
  async logout(ctx: Context): Promise<void> {
    const cookie = ctx.cookies.get(SESSION_COOKIE);
    if (cookie) await closeSession(this.deps.db, sessionId(cookie));
    ctx.cookies.set(SESSION_COOKIE, null, { path: '/' });
  }
}
