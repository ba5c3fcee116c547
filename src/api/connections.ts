// Connections (one merchant account each): adding them, finding them, and the client of one.
import { ensureBudget } from '../db/budgets.ts';
import {
  connectionByName,
  connectionOfAccount,
  getConnection,
  listConnections,
  setConnectionStatus,
  upsertConnection,
} from '../db/connections.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/index.ts';
import type { Connection } from '../db/schema.ts';
import { Client } from './client.ts';
import { ApiError } from './errors.ts';
import { errorDetails, isObject, sendUnbudgeted } from './http.ts';
import type { TokenResponse } from './oauth.ts';
import { decryptToken, encryptToken } from './secrets.ts';
import { tokenColumns } from './tokens.ts';
import type { ClientDeps, ClientOptions } from './transport.ts';
import type { ApiClient } from './types.ts';

export type { ClientDeps };
// Callers find connections here beside clientFor; the statements are the connections store's.
export { getConnection, listConnections };

/** A connection asked for that is not there (404), or none named where there is not exactly one (400). */
export class ConnectionChoiceError extends Error {
  readonly status: 400 | 404;
  constructor(status: 400 | 404, message: string) {
    super(message);
    this.status = status;
  }
}

/**
 * The connection meant: the one with this name (a number: this id), or, with none named, the only one there is.
 * The channel and push APIs and commands all choose with this.
 */
export async function chooseConnection(db: Db, connection?: string | number | null): Promise<{ id: number; name: string }> {
  if (connection !== undefined && connection !== null && connection !== '') {
    const row = typeof connection === 'number' ? await getConnection(db, connection) : await connectionByName(db, connection);
    if (!row) throw new ConnectionChoiceError(404, `no connection "${connection}" (see \`commerce-sync connections\`)`);
    return { id: row.id, name: row.name };
  }
  const all = await listConnections(db);
  if (all.length === 1) return { id: Number(all[0]!.id), name: all[0]!.name };
  throw new ConnectionChoiceError(
    400,
    all.length
      ? `several connections exist (${all.map((c) => c.name).join(', ')}): say which with connection=NAME`
      : 'no connection yet: connect an account first (`commerce-sync connect`)',
  );
}

/** The client of a connection (a row, or its id or name). Clients of one connection share its budget. */
export async function clientFor(deps: ClientDeps, connection: Connection | number | string, opts?: ClientOptions): Promise<ApiClient> {
  const row = typeof connection === 'object' ? connection : await getConnection(deps.db, connection);
  if (!row) throw new Error(`no connection named ${JSON.stringify(String(connection))}; see commerce-sync connections`);
  await ensureBudget(deps.db, row.id);
  return new Client(deps, row, opts);
}

/** Clients kept per connection for the life of a process (they carry token state); a failed lookup is retried. */
export function clientCache(deps: ClientDeps): (connectionId: number) => Promise<ApiClient> {
  const cache = new Map<number, Promise<ApiClient>>();
  return (id) => {
    let c = cache.get(id);
    if (!c) {
      c = clientFor(deps, id);
      c.catch(() => cache.delete(id));
      cache.set(id, c);
    }
    return c;
  };
}

/** Whether `url` is at a host of the list: `host` (any port), `host:port`, or `*.domain` (its subdomains). */
function listed(url: URL, entries: string[]): boolean {
  return entries.some((e) =>
    e.startsWith('*.') ? url.hostname.endsWith(e.slice(1)) : e.includes(':') ? url.host === e : url.hostname === e,
  );
}

/**
 * The base URL an operator names to connect, if credentials may go there (console and CLI alike): the client
 * secret (also the webhook signing key) goes to its token endpoint, a token to its account read. Only configured
 * service hosts (COMMERCE_SERVICE_HOSTS, the host of COMMERCE_BASE_URL, and `alsoAllowed`'s), over https unless on
 * loopback, with no credentials in the URL.
 */
export function serviceHostUrl(
  config: Pick<Config, 'COMMERCE_SERVICE_HOSTS' | 'COMMERCE_BASE_URL'>,
  raw: string,
  alsoAllowed: string[] = [],
): string {
  const baseUrl = normalizeBaseUrl(raw);
  const url = new URL(baseUrl);
  const hosts = [
    ...config.COMMERCE_SERVICE_HOSTS.split(','),
    ...[config.COMMERCE_BASE_URL, ...alsoAllowed].filter(Boolean).map((u) => new URL(u).host),
  ]
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  if (url.username || url.password || !listed(url, hosts))
    throw new Error(
      `${url.host} is not a configured service host: only the hosts in COMMERCE_SERVICE_HOSTS (and COMMERCE_BASE_URL's) get the client secret or a token`,
    );
  if (url.protocol !== 'https:' && !loopbackName(url.hostname))
    throw new Error('the service address must use https (plain http only on loopback): the client secret and tokens travel to it');
  return baseUrl;
}

/** A name that always means this machine: localhost (and *.localhost, RFC 6761), 127.0.0.0/8, [::1]. */
export const loopbackName = (hostname: string) =>
  hostname === 'localhost' || hostname.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(hostname) || hostname === '[::1]';

export function normalizeBaseUrl(baseUrl: string): string {
  const trimmed = baseUrl.trim().replace(/\/+$/, '');
  if (!/^https?:\/\/[^\s/]+/.test(trimmed) || !URL.canParse(trimmed))
    throw new Error(`--base-url ${JSON.stringify(baseUrl)} is not an http(s) URL`);
  return trimmed;
}

const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export function slugName(accountName: string | null | undefined, accountId: number): string {
  const slug = (accountName ?? '')
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[-_]+|-+$/g, '')
    .slice(0, 50);
  return NAME.test(slug) ? slug : `account-${accountId}`;
}

/** The account a token belongs to, from GET /accounts/current: `raw` is the account record as it came. */
export interface Account {
  id: number;
  name: string | null;
  raw: unknown;
}

/**
 * What tells one account from another: its id alone does not (an account restored or reset, a sandbox started
 * anew keep theirs), its id with its creation time does. Null parts where the record has none.
 */
export function accountIdentity(raw: unknown): { id: number | null; created_at: string | null } {
  const a = isObject(raw) ? raw : {};
  return { id: typeof a.id === 'number' ? a.id : null, created_at: typeof a.created_at === 'string' ? a.created_at : null };
}

/** Why the account `now` is not the one `kept` was made from; null when it is, or when `kept` cannot tell. */
export function otherAccount(kept: unknown, now: unknown): string | null {
  const k = accountIdentity(kept);
  const n = accountIdentity(now);
  if (k.id !== null && n.id !== null && k.id !== n.id) return `account ${n.id}, not ${k.id}`;
  if (k.created_at && n.created_at && Date.parse(k.created_at) !== Date.parse(n.created_at))
    return `account ${n.id} created ${n.created_at}, not the one created ${k.created_at}`;
  return null;
}

/**
 * GET /accounts/current with a token. It is sent before the connection (and so its budget) exists: one
 * request at connect time.
 */
export async function fetchAccount(baseUrl: string, token: string, timeoutMs: number): Promise<Account> {
  const path = '/accounts/current';
  const { res, text, body } = await sendUnbudgeted(baseUrl + path, {
    method: 'GET',
    path,
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
    timeoutMs,
    failed: `cannot reach ${baseUrl}`,
  });
  if (!res.ok) {
    const { message, fieldErrors } = errorDetails(body, text);
    throw new ApiError(res.status === 401 ? 'the service refused the token' : null, {
      status: res.status,
      method: 'GET',
      path,
      requestId: res.headers.get('x-request-id'),
      serviceMessage: message,
      fieldErrors,
    });
  }
  const account = isObject(body) ? (body.account ?? body) : body;
  if (!isObject(account) || typeof account.id !== 'number')
    throw new ApiError('the answer has no account id', {
      status: res.status,
      method: 'GET',
      path,
      requestId: res.headers.get('x-request-id'),
    });
  return { id: account.id, name: typeof account.name === 'string' ? account.name : null, raw: account };
}

interface Credentials {
  auth_kind: 'token' | 'oauth';
  access_token_enc: string;
  refresh_token_enc: string | null;
  token_expires_at: Date | null;
  token_refreshed_at: Date | null;
}

/**
 * Stores a connection: by `name` when given (replacing its account and tokens), else the existing connection
 * of the same base URL and account, else a new one named after the account. A stored connection is active again.
 */
async function saveConnection(db: Db, baseUrl: string, account: Account, creds: Credentials, name?: string): Promise<Connection> {
  if (name !== undefined && !NAME.test(name))
    throw new Error(`--name ${JSON.stringify(name)}: use lowercase letters, digits, - and _ (at most 63, starting with a letter or digit)`);
  const values = {
    base_url: baseUrl,
    account_id: account.id,
    account_name: account.name,
    ...creds,
    status: 'active' as const,
    status_reason: null,
    raw: JSON.stringify(account.raw),
  };
  let target = name;
  if (target !== undefined) {
    // A name keeps meaning one account: its mirror rows, budget and webhooks belong to that account.
    const existing = await connectionByName(db, target);
    if (existing && (existing.base_url !== baseUrl || (existing.account_id !== null && existing.account_id !== account.id))) {
      throw new Error(`connection ${target} is account ${existing.account_id} at ${existing.base_url}; choose another --name`);
    }
  } else {
    const same = await connectionOfAccount(db, baseUrl, account.id);
    if (same) target = same.name;
    else {
      target = slugName(account.name, account.id);
      const taken = await connectionByName(db, target);
      if (taken) target = `${target.slice(0, 50)}-${account.id}`;
    }
  }
  // The same id at the same address is not enough: a mirror is never applied to another account (src/sync/account.ts).
  const other = otherAccount((await connectionByName(db, target))?.raw, account.raw);
  if (other)
    throw new Error(
      `connection ${target}'s mirror was made from another account than this token reaches (${other}): ` +
        `choose another --name, or start its mirror afresh with commerce-sync reset-mirror ${target}`,
    );
  const row = await upsertConnection(db, { name: target, ...values });
  await ensureBudget(db, row.id);
  return row;
}

/** Adds (or refreshes) a connection with a privileged access token; GETs /accounts/current first. */
export async function addTokenConnection(deps: ClientDeps, input: { baseUrl: string; token: string; name?: string }): Promise<Connection> {
  const baseUrl = normalizeBaseUrl(input.baseUrl);
  if (!input.token.trim()) throw new Error('--token is empty');
  const account = await fetchAccount(baseUrl, input.token.trim(), deps.config.API_TIMEOUT_MS);
  const key = deps.clients.key(deps.config);
  const row = await saveConnection(
    deps.db,
    baseUrl,
    account,
    {
      auth_kind: 'token',
      access_token_enc: encryptToken(key, input.token.trim()),
      refresh_token_enc: null,
      token_expires_at: null,
      token_refreshed_at: new Date(),
    },
    input.name,
  );
  deps.log.info({ connection: row.name, account: row.account_id }, 'connection saved');
  return row;
}

/** Adds (or refreshes) a connection from the token response of the authorization code grant. */
export async function addOAuthConnection(
  deps: ClientDeps,
  input: { baseUrl: string; tokens: TokenResponse; name?: string },
): Promise<Connection> {
  const baseUrl = normalizeBaseUrl(input.baseUrl);
  const account = await fetchAccount(baseUrl, input.tokens.access_token, deps.config.API_TIMEOUT_MS);
  const row = await saveConnection(
    deps.db,
    baseUrl,
    account,
    { auth_kind: 'oauth', ...tokenColumns(deps.clients.key(deps.config), input.tokens, new Date()) },
    input.name,
  );
  deps.log.info({ connection: row.name, account: row.account_id }, 'connection saved');
  return row;
}

/**
 * A lapsed connection sends nothing (402 stops the budget), so nothing would ever notice the merchant renewed.
 * The worker probes each lapsed connection now and then with one GET /accounts/current (outside the budget,
 * which is idle while lapsed): an answer makes the connection active again. Returns the names resumed.
 */
export async function probeLapsed(deps: ClientDeps): Promise<string[]> {
  const lapsed = await listConnections(deps.db, 'lapsed');
  const resumed: string[] = [];
  for (const c of lapsed) {
    if (!c.access_token_enc) continue;
    try {
      await fetchAccount(c.base_url, decryptToken(deps.clients.key(deps.config), c.access_token_enc), deps.config.API_TIMEOUT_MS);
    } catch (err) {
      deps.log.debug({ connection: c.name, status: (err as ApiError).status }, 'lapsed connection still refused');
      continue;
    }
    await setConnectionStatus(deps.db, c.id, 'active', null, 'lapsed');
    deps.log.info({ connection: c.name }, 'the service answers again: lapsed connection is active again');
    resumed.push(c.name);
  }
  return resumed;
}
