// Operator access to the console, /api and /metrics. With OPERATOR_TOKEN set, a request must carry it as
// `Authorization: Bearer TOKEN` or as the password of Basic auth (any user name), or carry the `cs_operator`
// cookie set by the console's login form. Without it, only demo mode on a loopback address is open.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Config } from '../config.ts';

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

export type AccessMode = 'token' | 'open-demo' | 'closed';

/** How the console is protected, given config and whether the sandbox demo is running. */
export function accessMode(config: Config, demo: boolean): AccessMode {
  if (config.OPERATOR_TOKEN) return 'token';
  return demo ? 'open-demo' : 'closed';
}

/** Koa middleware guarding operator routes. `demo()` is read per request: demo mode can start after mounting. */
export function requireOperator(config: Config, demo: () => boolean) {
  return async (ctx: Context, next: Next) => {
    const mode = accessMode(config, demo());
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
