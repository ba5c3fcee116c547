// Operator access to the console, /api and /metrics. With OPERATOR_TOKEN set, a request must carry it as
// `Authorization: Bearer TOKEN` or as the password of Basic auth (any user name), or carry the `cs_operator`
// cookie set by the console's login form. Without it, only demo mode on a loopback address is open, and
// only while the built-in sandbox is the only connection.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import { normalizeBaseUrl } from '../api/connections.ts';
import type { Config } from '../config.ts';
import { listConnections } from '../db/connections.ts';
import type { Db } from '../db/index.ts';
import type { Runtime } from '../runtime.ts';

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

/**
 * The value of the login cookie: derived from the operator token, never the token itself, so a cookie that
 * leaks (a browser profile, a proxy log) does not give away the API token. Changing the token logs everyone out.
 */
export function sessionCookie(config: Config): string {
  return createHmac('sha256', config.OPERATOR_TOKEN).update('commerce-sync operator session').digest('base64url');
}

function authorized(ctx: Context, config: Config): boolean {
  const token = headerToken(ctx);
  if (token !== null) return same(token, config.OPERATOR_TOKEN);
  const cookie = ctx.cookies.get('cs_operator');
  return !!cookie && same(cookie, sessionCookie(config));
}

/** Whether `token` is the configured operator token (constant time). */
export function tokenMatches(config: Config, token: string): boolean {
  return config.OPERATOR_TOKEN !== '' && same(token, config.OPERATOR_TOKEN);
}

const loopback = (ip: string) => ip === '127.0.0.1' || ip === '::1' || ip === '::ffff:127.0.0.1';

/** A name that always means this machine: localhost (and *.localhost, RFC 6761), 127.0.0.0/8, [::1]. */
export const loopbackName = (hostname: string) =>
  hostname === 'localhost' || hostname.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(hostname) || hostname === '[::1]';

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
  const ours = hostnameOf(new URL(publicUrl).host);
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
  if (deps.config.OPERATOR_TOKEN) return 'token';
  const demo = deps.demo();
  if (!demo) return 'closed';
  const sandbox = normalizeBaseUrl(demo.baseUrl);
  return (await listConnections(deps.db)).every((c) => c.base_url === sandbox) ? 'open-demo' : 'closed';
}

/** The access mode the guard decided for this request (pages show it). */
export const accessOf = (ctx: Context): AccessMode => (ctx.state.access as AccessMode | undefined) ?? 'closed';

/** Koa middleware guarding operator routes; leaves the mode it decided in `ctx.state.access`. */
export function requireOperator(deps: AccessDeps) {
  const { config } = deps;
  return async (ctx: Context, next: Next) => {
    const mode = await accessMode(deps);
    ctx.state.access = mode;
    // A request carrying the token is judged by it: no browser adds it to a rebound page's requests by
    // itself, and scrapers or scripts may use an internal name. Cookies and open demo are ambient: host checked.
    if (!(mode === 'token' && headerToken(ctx) !== null) && !knownHost(ctx, deps.publicUrl())) return refuseHost(ctx);
    if (mode === 'token') {
      if (authorized(ctx, config)) return next();
    } else if (mode === 'open-demo' && loopback(ctx.request.socket.remoteAddress ?? '')) {
      return next();
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
