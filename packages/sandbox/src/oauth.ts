// OAuth 2.0 Authorization Code with Refresh Token (draft 22 style) plus privileged tokens. Tokens live in
// memory; access tokens expire after `expiresIn` sandbox seconds, refresh tokens rotate on use.
import { randomBytes } from 'node:crypto';
import type { Clock } from './clock.ts';
import { ApiFail } from './store.ts';

export interface Token {
  kind: 'privileged' | 'access' | 'refresh' | 'code';
  appId: number;
  accountId: number;
  access: 'full' | 'read';
  expiresAt: number | null;
  redirectUri?: string;
  refresh?: string;
}

export interface OAuthOptions {
  clientId: string;
  clientSecret: string;
  expiresIn: number;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export class Tokens {
  readonly byValue = new Map<string, Token>();
  private readonly clock: Clock;
  private readonly opts: OAuthOptions;
  constructor(clock: Clock, opts: OAuthOptions) {
    this.clock = clock;
    this.opts = opts;
  }

  addPrivileged(value: string, access: 'full' | 'read' = 'full', appId = 1): void {
    this.byValue.set(value, { kind: 'privileged', appId, accountId: 1, access, expiresAt: null });
  }

  /** The token behind an `Authorization: Bearer` header, or a 401. */
  authenticate(header: string | undefined): Token {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!m) throw new ApiFail(401, 'Missing access token: send Authorization: Bearer <ACCESS_TOKEN>');
    const t = this.byValue.get(m[1]!);
    if (!t || (t.kind !== 'privileged' && t.kind !== 'access')) throw new ApiFail(401, 'The access token is invalid');
    if (t.expiresAt !== null && this.clock.now() >= t.expiresAt) throw new ApiFail(401, 'The access token expired');
    return t;
  }

  revoke(value: string): boolean {
    return this.byValue.delete(value);
  }

  authorizePage(q: URLSearchParams): { status: number; html: string } {
    const clientId = q.get('client_id') ?? '';
    const redirect = q.get('redirect_uri') ?? '';
    if (clientId !== this.opts.clientId)
      return {
        status: 400,
        html: page('Unknown application', `<p>No application is registered with client_id "${escapeHtml(clientId)}".</p>`),
      };
    if (!/^https?:\/\//.test(redirect) || !URL.canParse(redirect))
      return { status: 400, html: page('Bad redirect', '<p>redirect_uri must be an http(s) URL.</p>') };
    if (q.get('response_type') !== 'code')
      return { status: 400, html: page('Unsupported response type', '<p>response_type must be "code".</p>') };
    const hidden = ['client_id', 'redirect_uri', 'state', 'scope', 'response_type']
      .filter((k) => q.get(k) !== null)
      .map((k) => `<input type="hidden" name="${k}" value="${escapeHtml(q.get(k)!)}">`)
      .join('');
    return {
      status: 200,
      html: page(
        'Authorize application',
        `<p>The application <b>${escapeHtml(clientId)}</b> asks for access to the account <b>Sandbox Trading Co.</b>.</p>
<form method="post" action="/oauth/authorize">${hidden}
<button type="submit" name="decision" value="approve" id="approve">Authorize</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button></form>`,
      ),
    };
  }

  /** The form POST of the authorize page: a redirect to redirect_uri with `code`, or `error=access_denied`. */
  decide(form: URLSearchParams): string {
    const redirect = form.get('redirect_uri') ?? '';
    if (form.get('client_id') !== this.opts.clientId || !/^https?:\/\//.test(redirect) || !URL.canParse(redirect)) {
      throw new ApiFail(400, 'invalid_request');
    }
    const url = new URL(redirect);
    const state = form.get('state');
    if (form.get('decision') === 'approve') {
      const code = randomBytes(16).toString('hex');
      this.byValue.set(code, {
        kind: 'code',
        appId: 1,
        accountId: 1,
        access: 'full',
        expiresAt: this.clock.now() + 600_000,
        redirectUri: redirect,
      });
      url.searchParams.set('code', code);
    } else {
      url.searchParams.set('error', 'access_denied');
      url.searchParams.set('error_description', 'The resource owner denied the request.');
    }
    if (state !== null) url.searchParams.set('state', state);
    return url.toString();
  }

  /** POST /oauth/token. Errors are 400/401 with `{"error", "error_description"}`. */
  token(body: Record<string, any>): Record<string, unknown> {
    const fail = (status: number, error: string, description: string) => new OAuthFail(status, error, description);
    if (body.client_id !== this.opts.clientId || body.client_secret !== this.opts.clientSecret)
      throw fail(401, 'invalid_client', 'Client authentication failed.');
    const grant = body.grant_type;
    let accountId = 1,
      appId = 1,
      access: 'full' | 'read' = 'full';
    if (grant === 'authorization_code') {
      const code = this.byValue.get(String(body.code ?? ''));
      if (code?.kind !== 'code' || (code.expiresAt !== null && this.clock.now() >= code.expiresAt))
        throw fail(400, 'invalid_grant', 'The authorization code is invalid, expired or already used.');
      if (body.redirect_uri !== code.redirectUri)
        throw fail(400, 'invalid_grant', 'redirect_uri does not match the one of the authorization request.');
      this.byValue.delete(String(body.code));
      ({ accountId, appId, access } = code);
    } else if (grant === 'refresh_token') {
      const value = String(body.refresh_token ?? '');
      const rt = this.byValue.get(value);
      if (rt?.kind !== 'refresh') throw fail(400, 'invalid_grant', 'The refresh token is invalid, revoked or already used.');
      // Rotation: the old refresh token and the access token issued with it stop working.
      this.byValue.delete(value);
      for (const [k, t] of this.byValue) if (t.kind === 'access' && t.refresh === value) this.byValue.delete(k);
      ({ accountId, appId, access } = rt);
    } else {
      throw fail(400, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token.');
    }
    const accessToken = randomBytes(24).toString('hex');
    const refreshToken = randomBytes(24).toString('hex');
    const now = this.clock.now();
    this.byValue.set(refreshToken, { kind: 'refresh', appId, accountId, access, expiresAt: null });
    this.byValue.set(accessToken, {
      kind: 'access',
      appId,
      accountId,
      access,
      expiresAt: now + this.opts.expiresIn * 1000,
      refresh: refreshToken,
    });
    // expires_in in real seconds, so a client's own clock agrees with the sandbox under a time scale.
    const realSeconds = this.clock.manual ? this.opts.expiresIn : Math.max(1, Math.ceil(this.opts.expiresIn / this.clock.scale));
    return {
      access_token: accessToken,
      token_type: 'bearer',
      expires_in: realSeconds,
      refresh_token: refreshToken,
      scope: 'public',
      created_at: Math.floor(now / 1000),
    };
  }
}

export class OAuthFail extends Error {
  readonly status: number;
  readonly error: string;
  constructor(status: number, error: string, description: string) {
    super(description);
    this.status = status;
    this.error = error;
  }
}

function page(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;
}
