// What a delivery body must be: a JSON object with `event` (string) and `object_id` (integer), per the
// spec's Events section. `timestamp` (seconds) and `resource_url` are kept when they have the right type and
// ignored otherwise: refusing a real delivery over an optional field would get the subscription deleted. What is
// kept must be text PostgreSQL can store: an `event` with a NUL or a lone surrogate (JSON escapes `\u0000`,
// `\ud800`) is refused like any malformed one (the body itself is stored as it came: valid UTF-8 text).
import { unstorable } from '../inputs.ts';
import { normaliseEvent, type NormalisedEvent } from './events.ts';

export interface DeliveryPayload extends NormalisedEvent {
  event: string;
  objectId: number;
  eventAt: Date | null;
  resourceUrl: string | null;
}

/** `text`: the body decoded (once, here), as stored. */
export type ParseResult = { ok: true; payload: DeliveryPayload; text: string } | { ok: false; reason: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

function integer(v: unknown): number | null {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'string' && /^\d{1,15}$/.test(v)) return Number(v);
  return null;
}

export function parseDelivery(raw: Buffer): ParseResult {
  let body: unknown;
  let text: string;
  try {
    text = utf8.decode(raw);
    body = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `not JSON: ${(err as Error).message}` };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { ok: false, reason: 'not a JSON object' };
  const b = body as Record<string, unknown>;
  if (typeof b.event !== 'string' || !b.event.trim() || b.event.length > 200) return { ok: false, reason: 'event missing or not a string' };
  const unfit = unstorable(b.event);
  if (unfit) return { ok: false, reason: `event has ${unfit}` };
  const objectId = integer(b.object_id);
  if (objectId === null || objectId < 0) return { ok: false, reason: 'object_id missing or not an integer' };
  const seconds = integer(b.timestamp);
  const eventAt = seconds === null || seconds > 8_640_000_000_000 ? null : new Date(seconds * 1000);
  const resourceUrl = typeof b.resource_url === 'string' && !unstorable(b.resource_url) ? b.resource_url : null;
  return { ok: true, payload: { event: b.event, objectId, eventAt, resourceUrl, ...normaliseEvent(b.event) }, text };
}

/** The service retries a delivery for 3 days; one stamped earlier than that (and this margin) is a replay. */
export const RETRY_HORIZON_SECONDS = 3 * 86_400;
const HORIZON_MARGIN_SECONDS = 3600;

/**
 * Why a delivery's timestamp refuses it, or null. Only the body is signed, so an old delivery sent again under
 * a new X-Service-Delivery would be stored and processed again: one older than the service ever retries is
 * refused, and one more than `maxFutureSeconds` ahead of our clock (0: nothing is checked, for a sandbox whose
 * clock runs fast or is set by hand). No timestamp: nothing to judge.
 */
export function timestampRefusal(
  eventAt: Date | null,
  nowMs: number,
  maxFutureSeconds: number,
): { reason: 'stale' | 'future'; message: string } | null {
  if (!eventAt || maxFutureSeconds === 0) return null;
  const ageSeconds = Math.round((nowMs - eventAt.getTime()) / 1000);
  if (ageSeconds > RETRY_HORIZON_SECONDS + HORIZON_MARGIN_SECONDS)
    return { reason: 'stale', message: `timestamp ${eventAt.toISOString()} is older than the service retries a delivery (3 days)` };
  if (-ageSeconds > maxFutureSeconds)
    return {
      reason: 'future',
      message: `timestamp ${eventAt.toISOString()} is ${-ageSeconds} s ahead of this machine's clock (more than WEBHOOK_MAX_FUTURE_SECONDS)`,
    };
  return null;
}
