// Connecting accounts from the console: the OAuth authorization-code flow (start: a signed `state` and a
// browser-bound nonce cookie; callback: the code exchanged for tokens), a privileged token, disabling, and
// the status and webhook subscriptions of a connection. The API's own functions do the work (src/api,
// src/receiver/subscriptions.ts); this module only holds what the browser round trip needs. No token or
// secret is ever put in a page.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { addOAuthConnection, addTokenConnection, getConnection, serviceHostUrl } from '../api/connections.ts';
import { authorizeUrl, requestToken } from '../api/oauth.ts';
import { tokenKey } from '../api/secrets.ts';
import { setStatus } from '../api/tokens.ts';
import type { Connection } from '../db/schema.ts';
import { markOurs, syncWebhooks } from '../receiver/subscriptions.ts';
import type { ConsoleDeps } from './web.ts';

/** How long an authorization may take from the console's redirect to the service's redirect back. */
const STATE_TTL_MS = 15 * 60_000;
export const OAUTH_COOKIE = 'cs_oauth';
export const CALLBACK_PATH = '/connections/oauth/callback';

interface State {
  baseUrl: string;
  name?: string;
  nonce: string;
  expires: number;
}

const sign = (deps: ConsoleDeps, body: string) =>
  createHmac('sha256', tokenKey(deps.config)).update(`oauth-state\u0000${body}`).digest('base64url');

export class ConnectError extends Error {}

/**
 * The base URL a connect form names, if credentials may go there: the client secret (also the webhook signing
 * key) goes to its token endpoint, a token to its account read, and what it answers is shown. Only configured
 * service hosts (src/api/connections.ts serviceHostUrl; the demo sandbox's too).
 */
export function serviceBaseUrl(deps: ConsoleDeps, raw: string): string {
  const demo = deps.demo();
  try {
    return serviceHostUrl(deps.config, raw, demo ? [demo.baseUrl] : []);
  } catch (err) {
    throw new ConnectError((err as Error).message);
  }
}

/** The authorize URL to send the browser to, and the nonce to set as a cookie (ties the callback to this browser). */
export function startOAuth(deps: ConsoleDeps, input: { baseUrl: string; name?: string }): { url: string; nonce: string } {
  if (!deps.config.COMMERCE_CLIENT_ID || !deps.config.COMMERCE_CLIENT_SECRET) {
    throw new ConnectError(
      "OAuth needs COMMERCE_CLIENT_ID and COMMERCE_CLIENT_SECRET (the registered application's keys); use a privileged token instead",
    );
  }
  const baseUrl = serviceBaseUrl(deps, input.baseUrl);
  const nonce = randomBytes(16).toString('base64url');
  const body = Buffer.from(
    JSON.stringify({ baseUrl, name: input.name || undefined, nonce, expires: Date.now() + STATE_TTL_MS } satisfies State),
  ).toString('base64url');
  return { url: authorizeUrl(baseUrl, deps.config.COMMERCE_CLIENT_ID, redirectUri(deps), `${body}.${sign(deps, body)}`), nonce };
}

export const redirectUri = (deps: ConsoleDeps) => `${deps.publicUrl().replace(/\/+$/, '')}${CALLBACK_PATH}`;

/** Checks the state the service handed back, exchanges the code and saves the connection; then its webhooks. */
export async function finishOAuth(
  deps: ConsoleDeps,
  q: { state?: string; code?: string; error?: string; error_description?: string },
  nonce: string | undefined,
): Promise<Connection> {
  if (q.error)
    throw new ConnectError(
      `the service did not authorize commerce-sync: ${q.error}${q.error_description ? ` (${q.error_description})` : ''}`,
    );
  const [body, mac] = (q.state ?? '').split('.');
  const expected = body ? sign(deps, body) : '';
  if (!body || !mac || mac.length !== expected.length || !timingSafeEqual(Buffer.from(mac), Buffer.from(expected)))
    throw new ConnectError('the authorization came back with a state this console did not issue; start again');
  const state = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as State;
  if (state.expires < Date.now()) throw new ConnectError('the authorization took too long; start again');
  if (!nonce || nonce !== state.nonce)
    throw new ConnectError('the authorization was started in another browser; start again from this one');
  if (!q.code) throw new ConnectError('the service sent no authorization code');
  serviceBaseUrl(deps, state.baseUrl); // still allowed (the settings may have changed since it was issued)
  try {
    const tokens = await requestToken(deps.config, state.baseUrl, {
      grant_type: 'authorization_code',
      code: q.code,
      redirect_uri: redirectUri(deps),
    });
    const connection = await addOAuthConnection(deps, { baseUrl: state.baseUrl, tokens, name: state.name });
    await subscribe(deps, connection);
    return connection;
  } catch (err) {
    if (err instanceof ConnectError) throw err;
    throw new ConnectError(`connecting failed: ${(err as Error).message}`);
  }
}

export async function connectWithToken(deps: ConsoleDeps, input: { baseUrl: string; token: string; name?: string }): Promise<Connection> {
  const baseUrl = serviceBaseUrl(deps, input.baseUrl);
  try {
    const connection = await addTokenConnection(deps, { baseUrl, token: input.token, name: input.name || undefined });
    await subscribe(deps, connection);
    return connection;
  } catch (err) {
    throw new ConnectError(`connecting failed: ${(err as Error).message}`);
  }
}

/** Points the account's webhooks at this console; a failure is logged, the connection stays (webhooks sync can redo it). */
async function subscribe(deps: ConsoleDeps, connection: Connection): Promise<void> {
  try {
    await syncWebhooks(deps, connection, deps.publicUrl());
  } catch (err) {
    deps.log.warn({ err, connection: connection.name }, 'webhooks not registered after connecting from the console');
  }
}

export async function disableConnection(deps: ConsoleDeps, name: string): Promise<Connection | undefined> {
  const c = await getConnection(deps.db, name);
  if (c) await setStatus(deps.db, c, 'disabled', 'disabled by an operator in the console');
  return c;
}

export interface ConnectionStatus {
  connection: Pick<
    Connection,
    | 'id'
    | 'name'
    | 'base_url'
    | 'account_id'
    | 'account_name'
    | 'auth_kind'
    | 'status'
    | 'status_reason'
    | 'token_expires_at'
    | 'created_at'
    | 'updated_at'
  >;
  webhooks: { id: number; event: string; address: string; ours: boolean }[] | null;
  /** When the service listed them (the latest subscription sync or check). */
  webhooksReadAt: Date | null;
  webhooksError: string | null;
}

/**
 * A connection as the console shows it: no token columns, and its subscriptions as the service listed them at the
 * latest sync or check. A page view asks the service nothing: it would spend the merchant's rate budget on a look.
 */
export async function connectionStatus(deps: ConsoleDeps, name: string): Promise<ConnectionStatus | null> {
  const c = await getConnection(deps.db, name);
  if (!c) return null;
  const {
    access_token_enc: _a,
    refresh_token_enc: _r,
    raw: _raw,
    token_refreshed_at: _t,
    webhooks: listed,
    webhooks_read_at: readAt,
    ...connection
  } = c;
  if (!listed)
    return {
      connection,
      webhooks: null,
      webhooksReadAt: null,
      webhooksError: `not listed yet: the subscription check lists them every ${deps.config.WEBHOOK_CHECK_MINUTES} minutes, \`commerce-sync webhooks sync\` at once`,
    };
  return { connection, webhooks: markOurs(deps.config, deps.publicUrl(), listed), webhooksReadAt: readAt, webhooksError: null };
}
