// Sign-in by name (OIDC_* settings): OpenID Connect's Authorization Code flow with PKCE, state and nonce, through
// openid-client. /auth/oidc/start sends the browser to the company's provider with a short-lived flow cookie; at
// /auth/oidc/callback the code is exchanged, the ID token checked (signature, issuer, audience, nonce, expiry, by
// openid-client), the e-mail must be verified and of an allowed domain, and the groups claim must map to a role
// (OIDC_ROLES, the highest counts). Then the person is stored (src/db/people.ts) and given a console session in that
// role (src/console/auth.ts); the audit log names them by e-mail.
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import * as oidc from 'openid-client';
import { type Config, oidcDomains, parseOidcRoles } from '../config.ts';
import type { Db } from '../db/index.ts';
import { disablePerson, upsertPerson } from '../db/people.ts';
import type { Role } from '../db/schema.ts';
import type { Logger } from '../log.ts';
import { loopbackName, type OperatorAccess } from './auth.ts';
import { allows } from './roles.ts';
import { safeNext } from './web.ts';

export const START_PATH = '/auth/oidc/start';
export const CALLBACK_PATH = '/auth/oidc/callback';
/** The flow cookie: state, nonce, PKCE verifier and the page to return to, sealed (AES-256-GCM), for 10 minutes. */
export const FLOW_COOKIE = 'cs_oidc';
const FLOW_PATH = '/auth/oidc';
const FLOW_MS = 10 * 60_000;
const TIMEOUT_SECONDS = 10;
/** openid-client's codes of a provider that did not answer, or not as a provider should (the rest: a check failed). */
const UNREACHABLE = ['OAUTH_TIMEOUT', 'OAUTH_ABORT', 'OAUTH_RESPONSE_IS_NOT_CONFORM', 'OAUTH_RESPONSE_IS_NOT_JSON'];

export interface OidcDeps {
  config: Config;
  db: Db;
  log: Logger;
  /** Where this process is reached: the redirect URI registered at the provider is PUBLIC_URL/auth/oidc/callback. */
  publicUrl: () => string;
}

/** A claim's values as a list: a string is one value, a list keeps its strings, anything else none. */
const values = (claim: unknown): string[] =>
  typeof claim === 'string' ? [claim] : Array.isArray(claim) ? claim.filter((v): v is string => typeof v === 'string') : [];

/** The highest role OIDC_ROLES gives any of the claim's values (`*` gives one to everyone); null: none. */
export function roleOf(claim: unknown, roles: ReadonlyMap<string, Role>): Role | null {
  const given = [...values(claim).map((v) => roles.get(v)), roles.get('*')].filter((r): r is Role => !!r);
  return given.reduce<Role | null>((best, r) => (best && allows(best, r) ? best : r), null);
}

export type Admission = { ok: true; email: string; name: string | null; role: Role } | { ok: false; reason: string };

/** Whether the claims the provider vouched for let a person in, and in which role; the reason when not. */
export function admit(claims: Record<string, unknown>, config: Config): Admission {
  const email = typeof claims.email === 'string' ? claims.email.trim() : '';
  if (!email)
    return {
      ok: false,
      reason: 'The provider did not give your e-mail address (the email claim): it must release the email scope to commerce-sync.',
    };
  if (claims.email_verified !== true && claims.email_verified !== 'true')
    return { ok: false, reason: `Your e-mail address ${email} is not verified at the provider: verify it there, then sign in again.` };
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  const domains = oidcDomains(config.OIDC_ALLOWED_DOMAINS);
  if (domains.length && !domains.includes(domain))
    return {
      ok: false,
      reason: `${email} may not sign in here: ${domain} is not one of the e-mail domains allowed (OIDC_ALLOWED_DOMAINS).`,
    };
  const { roles } = parseOidcRoles(config.OIDC_ROLES);
  const claim = config.OIDC_ROLE_CLAIM;
  const role = roleOf(claims[claim], roles);
  if (!role) {
    const have = values(claims[claim]);
    const yours = have.length
      ? `none of your ${claim} (${have.slice(0, 10).join(', ')}${have.length > 10 ? ', ...' : ''}) has a role here`
      : `the provider gave no ${claim} claim for you`;
    return {
      ok: false,
      reason: `${email} has no role in this console: ${yours}. Roles go to ${[...roles.keys()].join(', ') || 'no group'} (OIDC_ROLES); ask an administrator to add you to one.`,
    };
  }
  const name = [claims.name, claims.preferred_username].find((v): v is string => typeof v === 'string' && v.trim() !== '');
  return { ok: true, email, name: name?.trim() ?? null, role };
}

interface Flow {
  state: string;
  nonce: string;
  verifier: string;
  next: string;
  exp: number;
}

export type SignIn =
  | { ok: true; next: string; email: string; role: Role }
  | { ok: false; status: 400 | 403 | 404 | 502; reason: string; next: string };

/**
 * Only a local path of reasonable length, without control characters or backslashes, is returned to; never the
 * sign-in itself (a link to start it again after signing in would loop through the provider).
 */
const localNext = (v: unknown): string => {
  const next = safeNext(v);
  const unsafe = [...next].some((c) => c.charCodeAt(0) < 32 || c.charCodeAt(0) === 127 || c === '\\');
  return next.length <= 2000 && !unsafe && !next.startsWith(`${FLOW_PATH}/`) ? next : '/';
};

/** One per console process: the provider's metadata and keys are fetched once and kept (again after a failure). */
export class OidcSignIn {
  private readonly deps: OidcDeps;
  private discovered: Promise<oidc.Configuration> | undefined;

  constructor(deps: OidcDeps) {
    this.deps = deps;
  }

  get enabled(): boolean {
    return !!this.deps.config.OIDC_ISSUER;
  }

  private redirectUri(): string {
    return `${this.deps.publicUrl().replace(/\/+$/, '')}${CALLBACK_PATH}`;
  }

  private configuration(): Promise<oidc.Configuration> {
    this.discovered ??= this.discover().catch((err) => {
      this.discovered = undefined;
      throw err;
    });
    return this.discovered;
  }

  private async discover(): Promise<oidc.Configuration> {
    const { OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET } = this.deps.config;
    const issuer = new URL(OIDC_ISSUER);
    // http only at a loopback address (src/config.ts refuses any other): a provider run beside it, as the tests do.
    const insecure = issuer.protocol === 'http:';
    const found = await oidc.discovery(issuer, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, undefined, {
      timeout: TIMEOUT_SECONDS,
      execute: insecure ? [oidc.allowInsecureRequests] : [],
    });
    // client_secret_basic is the default of OpenID Connect; _post where the provider offers only that.
    const metadata = found.serverMetadata();
    const methods = metadata.token_endpoint_auth_methods_supported;
    const auth =
      !methods || methods.includes('client_secret_basic')
        ? oidc.ClientSecretBasic(OIDC_CLIENT_SECRET)
        : oidc.ClientSecretPost(OIDC_CLIENT_SECRET);
    const configuration = new oidc.Configuration(metadata, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, auth);
    configuration.timeout = TIMEOUT_SECONDS;
    if (insecure) oidc.allowInsecureRequests(configuration);
    return configuration;
  }

  /** The provider's host, as the login page names it. */
  issuerHost(): string {
    return this.enabled ? new URL(this.deps.config.OIDC_ISSUER).host : '';
  }

  /**
   * Where to send the browser to sign in: the provider's authorization endpoint, or, when the console was reached at
   * another name than PUBLIC_URL's, first that name (the flow cookie must be sent back to the redirect URI's host).
   */
  async start(ctx: Context): Promise<{ ok: true; url: string } | { ok: false; status: 404 | 502; reason: string; next: string }> {
    const next = localNext(ctx.query.next);
    if (!this.enabled)
      return { ok: false, status: 404, reason: 'Sign-in by name is not set up here (OIDC_ISSUER is empty): use the operator token.', next };
    const ours = new URL(this.redirectUri());
    if (ctx.hostname !== ours.hostname && ctx.query.via !== 'public')
      return { ok: true, url: `${ours.origin}${START_PATH}?${new URLSearchParams({ next, via: 'public' })}` };
    let configuration: oidc.Configuration;
    try {
      configuration = await this.configuration();
    } catch (err) {
      this.deps.log.warn({ err: (err as Error).message, issuer: this.deps.config.OIDC_ISSUER }, 'OpenID provider discovery failed');
      return {
        ok: false,
        status: 502,
        reason: `The OpenID provider at ${this.issuerHost()} could not be reached (${describe(err)}): try again, or use the break-glass operator token.`,
        next,
      };
    }
    const flow: Flow = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier: oidc.randomPKCECodeVerifier(),
      next,
      exp: Date.now() + FLOW_MS,
    };
    const claim = this.deps.config.OIDC_ROLE_CLAIM;
    // The role claim is often released by a scope of its own name (groups); ask for it when the provider has one.
    const scopes = ['openid', 'email', 'profile', ...(configuration.serverMetadata().scopes_supported?.includes(claim) ? [claim] : [])];
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: this.redirectUri(),
      scope: scopes.join(' '),
      state: flow.state,
      nonce: flow.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: 'S256',
    });
    this.setFlowCookie(ctx, this.seal(flow), FLOW_MS);
    return { ok: true, url: url.href };
  }

  /** The provider sent the browser back: checks everything, and opens the person's session when all holds. */
  async callback(ctx: Context, access: OperatorAccess): Promise<SignIn> {
    const flow = this.unseal(ctx.cookies.get(FLOW_COOKIE));
    this.setFlowCookie(ctx, null, 0); // one use
    const next = flow?.next ?? '/';
    const refuse = (status: 400 | 403 | 404 | 502, reason: string): SignIn => {
      this.deps.log.warn({ reason, status }, 'sign-in through the OpenID provider refused');
      return { ok: false, status, reason, next };
    };
    if (!this.enabled) return refuse(404, 'Sign-in by name is not set up here (OIDC_ISSUER is empty): use the operator token.');
    if (!flow) return refuse(400, 'This sign-in was not started in this browser, or took longer than 10 minutes: sign in again.');
    let claims: Record<string, unknown>;
    try {
      const configuration = await this.configuration();
      const tokens = await oidc.authorizationCodeGrant(configuration, new URL(`${this.redirectUri()}${ctx.search}`), {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
      const idToken = tokens.claims()!;
      claims = { ...idToken };
      // Many providers put only the subject in the ID token of a code flow: the rest is at the userinfo endpoint.
      const missing = ['email', 'email_verified', this.deps.config.OIDC_ROLE_CLAIM].some((k) => claims[k] === undefined);
      if (missing && configuration.serverMetadata().userinfo_endpoint)
        claims = { ...(await oidc.fetchUserInfo(configuration, tokens.access_token, idToken.sub)), ...idToken };
    } catch (err) {
      if (err instanceof oidc.AuthorizationResponseError)
        return refuse(
          403,
          `The OpenID provider did not sign you in: ${err.error}${err.error_description ? ` (${err.error_description})` : ''}.`,
        );
      if (err instanceof oidc.ResponseBodyError)
        return refuse(400, `The OpenID provider refused this sign-in's code (${err.error}): sign in again.`);
      // A state, nonce, issuer, signature or expiry that does not check out: this answer is not to be trusted.
      if (err instanceof oidc.ClientError && !UNREACHABLE.includes(err.code ?? ''))
        return refuse(400, `The OpenID provider's answer did not check out (${describe(err)}): sign in again.`);
      return refuse(502, `The OpenID provider at ${this.issuerHost()} could not be reached (${describe(err)}): try again.`);
    }
    const admission = admit(claims, this.deps.config);
    const subject = `${String(claims.iss)}#${String(claims.sub)}`;
    if (!admission.ok) {
      // The provider vouched for who this is and they may no longer come in: what they opened or made ends now.
      await disablePerson(this.deps.db, subject);
      return refuse(403, admission.reason);
    }
    const person = await upsertPerson(this.deps.db, { subject, email: admission.email, name: admission.name, role: admission.role });
    await access.openPersonSession(ctx, { id: person.id, role: admission.role });
    this.deps.log.info({ person: admission.email, role: admission.role, subject }, 'signed in through the OpenID provider');
    return { ok: true, next, email: admission.email, role: admission.role };
  }

  // The flow cookie is sealed with a key derived from the client secret: every console process shares it, and only
  // they can read or make one. SameSite=Lax: the provider's redirect back is a cross-site top-level navigation.
  private key(): Buffer {
    return createHmac('sha256', this.deps.config.OIDC_CLIENT_SECRET).update('commerce-sync sign-in flow cookie').digest();
  }

  private seal(flow: Flow): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key(), iv).setAAD(Buffer.from(FLOW_COOKIE));
    const body = Buffer.concat([cipher.update(JSON.stringify(flow), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  }

  private unseal(cookie: string | undefined): Flow | null {
    if (!cookie || !this.enabled) return null;
    try {
      const raw = Buffer.from(cookie, 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', this.key(), raw.subarray(0, 12)).setAAD(Buffer.from(FLOW_COOKIE));
      decipher.setAuthTag(raw.subarray(12, 28));
      const flow = JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as Flow;
      return flow.exp > Date.now() ? { ...flow, next: localNext(flow.next) } : null;
    } catch {
      return null;
    }
  }

  private setFlowCookie(ctx: Context, value: string | null, maxAge: number): void {
    let hostname = '';
    try {
      hostname = new URL(`http://${ctx.host}`).hostname;
    } catch {}
    // Secure unless reached by a loopback name over plain http, as the session cookie (src/console/auth.ts).
    const secure = ctx.secure || !loopbackName(hostname);
    ctx.cookies.secure = secure;
    ctx.cookies.set(FLOW_COOKIE, value, { httpOnly: true, sameSite: 'lax', secure, path: FLOW_PATH, maxAge, overwrite: true });
  }
}

/** An error in a few words for a page: openid-client's message and the cause's. */
function describe(err: unknown): string {
  const e = err as Error & { cause?: unknown };
  const cause = e.cause instanceof Error ? `: ${e.cause.message}` : '';
  return `${e.message ?? String(err)}${cause}`.slice(0, 300);
}
