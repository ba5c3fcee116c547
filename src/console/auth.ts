// Operator access to the console, /api and /metrics. With OPERATOR_TOKEN set, a request must carry it as
// `Authorization: Bearer TOKEN`, as the password of Basic auth (any user name), or in the `cs_operator`
// cookie set by the console's login form. Without it, only demo mode on a loopback address is open.
import { timingSafeEqual, createHash } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Config } from '../config.ts';

const digest = (s: string) => createHash('sha256').update(s).digest();
const same = (a: string, b: string) => timingSafeEqual(digest(a), digest(b));

export function presentedToken(ctx: Context): string | null {
  const auth = ctx.get('authorization');
  if (/^bearer /i.test(auth)) return auth.slice(7).trim();
  if (/^basic /i.test(auth)) {
    const decoded = Buffer.from(auth.slice(6).trim(), 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    return i >= 0 ? decoded.slice(i + 1) : null;
  }
  return ctx.cookies.get('cs_operator') ?? null;
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
      const token = presentedToken(ctx);
      if (token && same(token, config.OPERATOR_TOKEN)) return next();
    } else if (mode === 'open-demo' && loopback(ctx.request.socket.remoteAddress ?? '')) {
      return next();
    }
    ctx.status = 401;
    ctx.set('WWW-Authenticate', 'Bearer realm="commerce-sync"');
    ctx.body = { error: mode === 'closed'
      ? 'operator access is closed: set OPERATOR_TOKEN to use the console and API'
      : 'operator token required (Authorization: Bearer TOKEN)' };
  };
}
