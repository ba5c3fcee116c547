// A channel order's life as one list, for the console's channel order page and `commerce-sync channels orders show`:
// its hold (made, ended) and every event told the channel (imported, packed, shipped with tracking, invoiced,
// paid, returned, voided), each with its time and what told the channel: the POST that carried it, or not yet.
// Pure: the order's view (orders.ts) in, entries out.
import type { ChannelOrderView } from './orders.ts';

export interface Tracking {
  company: string | null;
  number: string | null;
  /** As the service has it: a page shows it as a link only when it is an http(s) URL. */
  url: string | null;
}

/** How the channel heard of an entry. */
export type Told =
  | { state: 'posted'; webhook_id: string; at: string; status: number | null }
  /** Acknowledged by the destination, the record of its POST gone (retention). */
  | { state: 'acknowledged' }
  | { state: 'waiting' }
  /** No destination takes order events: the channel reads them from the feed. */
  | { state: 'feed' }
  /** The channel's own doing (its hold): nothing to tell it. */
  | { state: 'channel' };

export interface TimelineEntry {
  /** ISO 8601; an event's time is the service's, a hold's this service's. */
  at: string;
  /** The event type, or hold.created / hold.ended. */
  kind: string;
  what: string;
  /** Lines, reasons, numbers: empty when there is nothing more to say. */
  detail: string;
  tracking: Tracking | null;
  event_id: number | null;
  told: Told;
}

type Line = { sku: string | null; quantity: string };
const linesText = (lines: unknown) =>
  Array.isArray(lines) ? (lines as Line[]).map((l) => `${l.sku ?? '?'} × ${l.quantity}`).join(', ') : '';
const str = (v: unknown) => (typeof v === 'string' && v ? v : null);
const joined = (...parts: (string | null | false | undefined)[]) => parts.filter(Boolean).join('; ');

const HOLD_END: Record<string, string> = {
  committed: "Hold ended: the service's committed stock shows the order",
  cancelled: 'Hold cancelled',
  expired: 'Hold expired',
};

function describe(e: ChannelOrderView['events'][number]): Pick<TimelineEntry, 'what' | 'detail' | 'tracking'> {
  const d = (e.data ?? {}) as Record<string, unknown>;
  const tracking = (): Tracking => ({ company: str(d.tracking_company), number: str(d.tracking_number), url: str(d.tracking_url) });
  switch (e.type) {
    case 'order.imported':
      return {
        what: `Imported as order ${e.order_number ?? e.order_id ?? ''}`.trim(),
        detail: str(d.status) ? `status ${d.status}` : '',
        tracking: null,
      };
    case 'order.import_failed': {
      const problems = d.problems && typeof d.problems === 'object' ? JSON.stringify(d.problems) : null;
      return {
        what: 'Import failed',
        detail: joined(str(d.reason), problems, d.operation_id != null && `operation ${d.operation_id}`),
        tracking: null,
      };
    }
    case 'order.packed':
      return { what: `Packed (fulfilment ${d.fulfillment_id})`, detail: linesText(d.lines), tracking: null };
    case 'order.shipped':
      return { what: `Shipped (fulfilment ${d.fulfillment_id})`, detail: linesText(d.lines), tracking: tracking() };
    case 'order.tracking_updated':
      return { what: `Tracking changed (fulfilment ${d.fulfillment_id})`, detail: '', tracking: tracking() };
    case 'order.invoiced':
      return {
        what: 'Invoiced',
        detail:
          d.invoice_number != null ? `invoice ${d.invoice_number}` : str(d.invoice_status) ? `invoice status ${d.invoice_status}` : '',
        tracking: null,
      };
    case 'order.paid':
      return { what: 'Paid', detail: '', tracking: null };
    case 'order.returned':
      return {
        what: `Returned (return ${d.return_id})`,
        detail: joined(linesText(d.lines), str(d.credit_note_number) && `credit note ${d.credit_note_number}`),
        tracking: null,
      };
    case 'order.return_received':
      return { what: `Return received (return ${d.return_id})`, detail: linesText(d.lines), tracking: null };
    case 'order.voided':
      return { what: 'Voided', detail: '', tracking: null };
    default:
      return { what: e.type, detail: '', tracking: null };
  }
}

/**
 * The entries of a channel order, in the order they happened: the events in their own order (ids follow the
 * order things happened to one order), the hold's beginning and end placed among them by time.
 * `ordersDestination`: a destination takes this channel's order events (else the channel reads the feed).
 */
export function orderTimeline(view: ChannelOrderView, ordersDestination: boolean): TimelineEntry[] {
  const events: TimelineEntry[] = view.events.map((e) => ({
    at: e.at,
    kind: e.type,
    ...describe(e),
    event_id: e.id,
    told: e.post
      ? { state: 'posted', webhook_id: e.post.webhook_id, at: new Date(e.post.at).toISOString(), status: e.post.status }
      : e.sent
        ? { state: 'acknowledged' }
        : ordersDestination
          ? { state: 'waiting' }
          : { state: 'feed' },
  }));
  const holds: TimelineEntry[] = [];
  const h = view.hold;
  if (h) {
    const held = h.held.map((l) => `${l.sku ?? `variant ${l.variant_id}`} × ${l.quantity}`).join(', ');
    holds.push({
      at: new Date(h.created_at).toISOString(),
      kind: 'hold.created',
      what: `Held (${h.source})`,
      detail: joined(held, !h.ended_at && `until ${new Date(h.expires_at).toISOString().replace('T', ' ').slice(0, 19)} UTC`),
      tracking: null,
      event_id: null,
      told: { state: 'channel' },
    });
    if (h.ended_at)
      holds.push({
        at: new Date(h.ended_at).toISOString(),
        kind: 'hold.ended',
        what: HOLD_END[h.end_cause ?? ''] ?? 'Hold ended',
        detail: '',
        tracking: null,
        event_id: null,
        told: { state: 'channel' },
      });
  }
  // Merge: each hold entry goes before the first event that happened after it.
  const out: TimelineEntry[] = [];
  let i = 0;
  for (const e of events) {
    while (i < holds.length && holds[i]!.at <= e.at) out.push(holds[i++]!);
    out.push(e);
  }
  out.push(...holds.slice(i));
  return out;
}

/** What told the channel, in words (the CLI's column; the console's cell says the same). */
export function toldText(t: Told): string {
  switch (t.state) {
    case 'posted':
      return `POST ${t.webhook_id} at ${t.at.replace('T', ' ').slice(0, 19)} UTC, ${t.status === null ? 'no answer' : `HTTP ${t.status}`}`;
    case 'acknowledged':
      return 'acknowledged (the record of its POST is gone)';
    case 'waiting':
      return 'not sent yet';
    case 'feed':
      return 'not sent: no destination takes order events (the feed has it)';
    case 'channel':
      return "the channel's own";
  }
}
