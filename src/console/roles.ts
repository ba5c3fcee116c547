// Who may do what: every guarded route (console page, /api, /metrics) has a least role, given in the one call that
// mounts it (`documented(router)`, src/openapi/registry.ts), so the role table is what was mounted. viewer reads
// everything but secrets; operator also replays, retries, pushes, holds, pauses and resumes, cancels; admin also
// manages connections, channels' rules and destinations, and tokens. A guarded route mounted without one (around the
// registry, or past the compiler) is refused to everyone (403); test/console/roles.test.ts lists any such route.
import type Router from '@koa/router';
import { OPERATOR_ROLES, type Role } from '../config.ts';
import { rolesOf } from '../openapi/registry.ts';

/** The roles, lowest first (the one list is the settings', src/config.ts). */
export const ROLES: readonly Role[] = OPERATOR_ROLES;
const rank = (r: Role) => ROLES.indexOf(r);

/** Whether `have` is at least `need`. */
export const allows = (have: Role, need: Role) => rank(have) >= rank(need);

/** The lower of two roles. */
export const lower = (a: Role, b: Role): Role => (rank(a) <= rank(b) ? a : b);

export const isRole = (v: unknown): v is Role => typeof v === 'string' && (ROLES as readonly string[]).includes(v);

/** The least role a route of `router` needs (HEAD as GET); undefined: it was mounted without one. */
export function leastRole(router: Router, method: string, route: string): Role | undefined {
  return rolesOf(router).get(`${method === 'HEAD' ? 'GET' : method} ${route}`);
}
