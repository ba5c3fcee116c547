// Delivery authentication: X-Service-Signature is the Base64 HMAC-SHA256 of the raw body bytes, keyed with
// the application's client secret. Both the current and the previous secret are accepted (rotation).
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Config } from '../config.ts';

/** The secrets a delivery may be signed with, current first; empty ones are left out. */
export function signingSecrets(config: Config): string[] {
  return [config.COMMERCE_CLIENT_SECRET, config.COMMERCE_CLIENT_SECRET_PREVIOUS].filter((s) => s !== '');
}

/**
 * True when `header` (surrounding whitespace ignored) is the signature of `raw` under one of `secrets`.
 * Compared as bytes in constant time; a truncated, padded or otherwise altered value never matches.
 */
export function verifySignature(raw: Buffer, header: string | undefined, secrets: string[]): boolean {
  if (!header) return false;
  const given = Buffer.from(header.trim(), 'latin1');
  let ok = false;
  for (const secret of secrets) {
    const expected = Buffer.from(createHmac('sha256', secret).update(raw).digest('base64'), 'latin1');
    // Lengths are public (a Base64 SHA-256 is always 44 characters); only equal lengths are compared.
    if (given.length === expected.length && timingSafeEqual(given, expected)) ok = true;
  }
  return ok;
}
