// The one sender of webhooks we make ourselves: alerts (src/alerts/notify.ts) and the channel deliveries
// (src/channels/dispatch.ts). It POSTs a JSON body to a URL, signed per the Standard Webhooks specification (standardwebhooks.com):
//
//   webhook-id: <id>            the message's id, the same on every retry of it (receivers deduplicate by it)
//   webhook-timestamp: <secs>   when this attempt was signed, integer seconds since the epoch
//   webhook-signature: v1,<b64> base64 HMAC-SHA256 of "<id>.<timestamp>.<body>", keyed with the bytes a
//                               `whsec_<base64>` secret encodes; one per secret, space-separated, while a secret rotates
//
// Each attempt has a timeout; redirects are never followed (a 3xx is a failure: a redirect could take the body, and
// the signature that vouches for it, anywhere). Network errors, timeouts, 429 and 5xx are retried with backoff
// (doubling, with jitter) up to `attempts`; any other answer outside 2xx is final. Error texts never hold the URL,
// which may carry a token (a Slack incoming webhook's path is its secret).
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { type AllowedHosts, checkLiteral, DestinationRefused, guardedLookup } from './address-guard.ts';
import { createHmac, randomBytes } from 'node:crypto';
import { injectTrace } from '../telemetry/spans.ts';

export interface OutboundMessage {
  url: string;
  /** webhook-id: stable across retries of the same message. */
  id: string;
  /** The JSON text sent, byte for byte what is signed. */
  body: string;
  /** `whsec_...` secrets, current first; none: no webhook-signature header (a Slack-style URL that is its own secret). */
  secrets?: string[];
  headers?: Record<string, string>;
}

export interface SendPolicy {
  /** Per attempt (default 10 s). */
  timeoutMs?: number;
  /** Attempts in all (default 3). */
  attempts?: number;
  /** Wait before the second attempt; doubles each time (default 1 s), at most `maxBackoffMs`. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** The clock, for tests (ms since the epoch). */
  now?: () => number;
  /** Hosts that may be internal addresses (OUTBOUND_ALLOWED_HOSTS); every other internal address is refused. */
  allowHosts?: AllowedHosts;
}

export interface SendOutcome {
  ok: boolean;
  /** The last answer's status; null when none came (network error, timeout). */
  status: number | null;
  attempts: number;
  /** Why the last attempt failed; null on success. */
  error: string | null;
}

const SECRET_PREFIX = 'whsec_';

/** The key bytes of a `whsec_<base64>` secret (a secret without the prefix is taken as base64 too). */
export function secretKey(secret: string): Buffer {
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  return Buffer.from(b64, 'base64');
}

/** A well-formed secret: `whsec_` and base64 of 24 to 64 bytes (the specification asks for 24 at least). */
export function validSecret(secret: string): boolean {
  if (!secret.startsWith(SECRET_PREFIX)) return false;
  const b64 = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) return false;
  const n = Buffer.from(b64, 'base64').length;
  return n >= 24 && n <= 64;
}

/** A fresh secret: `whsec_` and base64 of 24 random bytes. */
export function newSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(24).toString('base64')}`;
}

/** Secrets listed in one setting, separated by spaces or commas (current first, then those being rotated out). */
export function parseSecrets(setting: string): string[] {
  return setting.split(/[\s,]+/).filter(Boolean);
}

/** The webhook-signature header value: `v1,<base64>` per secret, space-separated. */
export function signatureHeader(secrets: string[], id: string, timestampSeconds: number, body: string): string {
  return secrets
    .map((s) => `v1,${createHmac('sha256', secretKey(s)).update(`${id}.${timestampSeconds}.${body}`, 'utf8').digest('base64')}`)
    .join(' ');
}

/** Whether a URL is a Slack incoming webhook (which takes `{"text": ...}` and no signature). */
export function isSlackUrl(url: string): boolean {
  try {
    return new URL(url).hostname === 'hooks.slack.com';
  } catch {
    return false;
  }
}

/** Only the host of a URL, for logs and messages (the path or query may be a secret). */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(invalid URL)';
  }
}

const retryable = (status: number | null) => status === null || status === 429 || status >= 500;

// Coarse on purpose: what an operator (or whoever may set a destination) sees must not map a network's ports.
function describe(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; message?: string };
  if (err instanceof DestinationRefused) return e.message!;
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  return 'network error';
}

/** One POST over http(s), never following a redirect, connecting only where the address guard allows. */
function post(url: string, body: string, headers: Record<string, string>, timeoutMs: number, allow: AllowedHosts) {
  return new Promise<{ status: number; retryAfter: string | null }>((resolve, reject) => {
    const target = new URL(url);
    checkLiteral(target, allow);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      target,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: guardedLookup(allow, target) as never,
        signal: AbortSignal.timeout(timeoutMs),
      },
      (res) => {
        // The answer's body is not ours to read: drop it, so the socket is free.
        res.resume();
        const retryAfter = res.headers['retry-after'];
        resolve({ status: res.statusCode ?? 0, retryAfter: typeof retryAfter === 'string' ? retryAfter : null });
      },
    );
    req.on('error', (err) => reject(err instanceof Error && 'cause' in err && err.cause instanceof DestinationRefused ? err.cause : err));
    req.end(body);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** POSTs the message, signed, retrying as the header says. Never throws for what the destination does. */
export async function sendWebhook(msg: OutboundMessage, policy: SendPolicy = {}): Promise<SendOutcome> {
  const timeoutMs = policy.timeoutMs ?? 10_000;
  const attempts = Math.max(1, policy.attempts ?? 3);
  const now = policy.now ?? Date.now;
  let backoff = policy.backoffMs ?? 1000;
  let outcome: SendOutcome = { ok: false, status: null, attempts: 0, error: 'not sent' };
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const timestamp = Math.floor(now() / 1000);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'commerce-sync',
      'webhook-id': msg.id,
      'webhook-timestamp': String(timestamp),
      ...msg.headers,
    };
    if (msg.secrets?.length) headers['webhook-signature'] = signatureHeader(msg.secrets, msg.id, timestamp, msg.body);
    // Traced, the receiver's tracing continues ours (traceparent, tracestate); untraced, nothing is added.
    injectTrace(headers);
    let status: number | null = null;
    let retryAfterMs = 0;
    try {
      const res = await post(msg.url, msg.body, headers, timeoutMs, policy.allowHosts ?? []);
      status = res.status;
      const ra = Number(res.retryAfter);
      if (Number.isFinite(ra) && ra > 0) retryAfterMs = ra * 1000;
      if (status >= 200 && status < 300) return { ok: true, status, attempts: attempt, error: null };
      outcome = {
        ok: false,
        status,
        attempts: attempt,
        error: status >= 300 && status < 400 ? `answered ${status} (redirects are not followed)` : `answered ${status}`,
      };
    } catch (err) {
      outcome = { ok: false, status: null, attempts: attempt, error: describe(err, timeoutMs) };
      if (err instanceof DestinationRefused) break; // asking again changes nothing
    }
    if (!retryable(status) || attempt === attempts) break;
    const max = policy.maxBackoffMs ?? 30_000;
    await sleep(Math.min(max, Math.max(retryAfterMs, backoff * (0.75 + Math.random() * 0.5))));
    backoff *= 2;
  }
  return outcome;
}
