// Who may do what: every guarded route (console page, /api, /metrics) and the least role it needs. viewer reads
// everything but secrets; operator also replays, retries, pushes, holds, pauses and resumes, cancels; admin also
// manages connections, channels' rules and destinations, and tokens. A route missing from this table is refused to
// everyone (403): adding a route means deciding who may use it (test/console/roles.test.ts walks them all).
import { OPERATOR_ROLES, type Role } from '../config.ts';

/** The roles, lowest first (the one list is the settings', src/config.ts). */
export const ROLES: readonly Role[] = OPERATOR_ROLES;
const rank = (r: Role) => ROLES.indexOf(r);

/** Whether `have` is at least `need`. */
export const allows = (have: Role, need: Role) => rank(have) >= rank(need);

/** The lower of two roles. */
export const lower = (a: Role, b: Role): Role => (rank(a) <= rank(b) ? a : b);

export const isRole = (v: unknown): v is Role => typeof v === 'string' && (ROLES as readonly string[]).includes(v);

const viewer = (...paths: string[]) => paths.map((p) => [`GET ${p}`, 'viewer'] as const);

export const ROUTE_ROLES: ReadonlyMap<string, Role> = new Map<string, Role>([
  ...viewer(
    '/',
    '/variants',
    '/variants/:connection/:id',
    '/channels',
    '/channels/:id/orders/:order',
    '/orders',
    '/orders/:connection/:id',
    '/operations',
    '/operations/:id',
    '/logs',
    '/tail',
    '/deliveries',
    '/dead-letters',
    '/connections',
    '/connections/:name',
    '/audit',
    '/metrics',
    '/api/overview',
    '/api/status',
    '/api/alerts',
    '/api/queues',
    '/api/logs',
    '/api/tail',
    '/api/deliveries',
    '/api/deliveries/:id',
    '/api/dead-letters',
    '/api/variants',
    '/api/variants/:connection/:id',
    '/api/variants/:connection/:id/channels',
    '/api/orders',
    '/api/orders/:connection/:id',
    '/api/operations',
    '/api/operations/:id',
    '/api/connections/:connection/series',
    '/api/channel-stock',
    '/api/channels',
    '/api/channels/:name',
    '/api/channels/:name/overrides',
    '/api/channels/:name/holds',
    '/api/channels/:name/stock',
    '/api/channels/:name/order-events',
    '/api/channels/:name/orders/:order',
    '/api/channels/:name/destination',
    '/api/audit',
    '/api/openapi.json',
  ),
  // Day-to-day work on the account: replays, retries, pushes, holds, pausing a destination, cancelling an order.
  ['POST /api/deliveries/:id/replay', 'operator'],
  ['POST /deliveries/:id/replay', 'operator'],
  ['POST /api/dead-letters/:queue/:id/replay', 'operator'],
  ['POST /dead-letters/:queue/:id/replay', 'operator'],
  ['POST /api/operations/:id/retry', 'operator'],
  ['POST /operations/:id/retry', 'operator'],
  ['POST /api/operations/:kind', 'operator'],
  ['POST /orders/:connection/:id/ship', 'operator'],
  ['POST /api/channels/:name/holds', 'operator'],
  ['DELETE /api/channels/:name/holds/:order', 'operator'],
  ['POST /api/channels/:name/destination/:action', 'operator'],
  ['POST /channels/:id/destination/pause', 'operator'],
  ['POST /channels/:id/destination/resume', 'operator'],
  ['POST /api/channels/:name/orders/:order/cancel', 'operator'],
  ['POST /channels/:id/orders/:order/cancel', 'operator'],
  // The account's set-up: connections, channels and their rules and destinations, who may do what.
  ['POST /connections/token', 'admin'],
  ['POST /connections/oauth', 'admin'],
  ['GET /connections/oauth/callback', 'admin'],
  ['POST /connections/:name/disable', 'admin'],
  ['POST /api/channels', 'admin'],
  ['PATCH /api/channels/:name', 'admin'],
  ['DELETE /api/channels/:name', 'admin'],
  ['PUT /api/channels/:name/overrides/:sku', 'admin'],
  ['DELETE /api/channels/:name/overrides/:sku', 'admin'],
  ['PUT /api/channels/:name/destination', 'admin'],
  ['DELETE /api/channels/:name/destination', 'admin'],
  ['GET /api/tokens', 'admin'],
  ['POST /api/tokens', 'admin'],
  ['DELETE /api/tokens/:id', 'admin'],
  ['GET /api/people', 'admin'],
  ['DELETE /api/people/:id', 'admin'],
]);

/** The least role a route needs (HEAD as GET); undefined: not in the table. */
export function leastRole(method: string, route: string): Role | undefined {
  return ROUTE_ROLES.get(`${method === 'HEAD' ? 'GET' : method} ${route}`);
}
