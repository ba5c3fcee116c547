// OAuth 2.0 (draft 22) calls of the spec: the authorize URL, and POST {base_url}/oauth/token for the
// authorization code and refresh grants. The token call carries no bearer token and no rate-budget slot.
import type { Config } from '../config.ts';
import { ApiError } from './errors.ts';
import { errorDetails, isObject, sendUnbudgeted } from './http.ts';

export interface TokenResponse {
  access_token: string;
  refresh_token: string | null;
  expires_in: number | null;
  scope?: string;
  token_type?: string;
}

export function authorizeUrl(authBase: string, clientId: string, redirectUri: string, state: string): string {
  const u = new URL(`${authBase.replace(/\/+$/, '')}/oauth/authorize`);
  u.searchParams.set('response_type', 'code');
  u.searchParams.set('client_id', clientId);
  u.searchParams.set('redirect_uri', redirectUri);
  u.searchParams.set('state', state);
  return u.toString();
}

/** POSTs a grant to the token endpoint. Refusals (4xx) are not retryable; no answer or 5xx is. */
export async function requestToken(
  config: Pick<Config, 'COMMERCE_CLIENT_ID' | 'COMMERCE_CLIENT_SECRET' | 'API_TIMEOUT_MS'>,
  baseUrl: string,
  grant:
    | { grant_type: 'authorization_code'; code: string; redirect_uri: string }
    | { grant_type: 'refresh_token'; refresh_token: string; redirect_uri?: string },
): Promise<TokenResponse> {
  const path = '/oauth/token';
  const body = { client_id: config.COMMERCE_CLIENT_ID, client_secret: config.COMMERCE_CLIENT_SECRET, ...grant };
  const {
    res,
    text,
    body: parsed,
  } = await sendUnbudgeted(baseUrl.replace(/\/+$/, '') + path, {
    method: 'POST',
    path,
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body,
    timeoutMs: config.API_TIMEOUT_MS,
    failed: 'token request failed',
  });
  const requestId = res.headers.get('x-request-id');
  if (!res.ok) {
    const { message, fieldErrors } = errorDetails(parsed, text);
    throw new ApiError(null, {
      status: res.status,
      method: 'POST',
      path,
      requestId,
      serviceMessage: message,
      fieldErrors,
      retryable: res.status >= 500 || res.status === 429,
    });
  }
  const token = isObject(parsed) ? parsed : null;
  if (!token || typeof token.access_token !== 'string' || !token.access_token) {
    throw new ApiError('token response has no access_token', { status: res.status, method: 'POST', path, requestId });
  }
  const expires = token.expires_in === null || token.expires_in === undefined ? null : Number(token.expires_in);
  return {
    access_token: token.access_token,
    refresh_token: typeof token.refresh_token === 'string' && token.refresh_token ? token.refresh_token : null,
    expires_in: expires !== null && Number.isFinite(expires) && expires > 0 ? expires : null,
    // Passed on as they came (strings in OAuth 2.0; nothing here reads them).
    scope: token.scope as string | undefined,
    token_type: token.token_type as string | undefined,
  };
}
