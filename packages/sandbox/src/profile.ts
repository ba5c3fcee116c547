// The two behaviours of the sandbox. `spec`: as the spec describes the service; `documented`: as the real
// service's public documentation shows it (../shared/spec/real-service-notes.md). Facts that only fill the spec's gaps
// apply to both; this module holds everything that differs, so a reader finds every difference here.
export const PROFILES = ['spec', 'documented'] as const;
export type Profile = (typeof PROFILES)[number];

/** The spec's eight events ("Event names seen in subscription calls"). */
export const SPEC_EVENTS = [
  'product.create',
  'variant.create',
  'variant.stock_level_update',
  'order.create',
  'fulfillment.create',
  'fulfillment_return.create',
  'purchase_order.create',
  'stock_transfer.create',
] as const;

/**
 * The documented list (tradegecko/smaug: locales/webhook.en.yml), for the resources the sandbox has
 * (no channels, document themes or images). It contains every spec event.
 */
export const DOCUMENTED_EVENTS = [
  'account.update',
  'address.create',
  'address.update',
  'company.create',
  'company.update',
  'company.destroy',
  'contact.create',
  'contact.update',
  'fulfillment.create',
  'fulfillment.fulfilled',
  'fulfillment_return.create',
  'fulfillment_return.received',
  'invoice.create',
  'invoice.destroy',
  'location.create',
  'location.update',
  'order.create',
  'order.finalized',
  'order.fulfilled',
  'payment.create',
  'product.create',
  'product.destroy',
  'procurement.create',
  'purchase_order.create',
  'purchase_order.received',
  'stock_adjustment.create',
  'stock_transfer.create',
  'variant.create',
  'variant.stock_level_update',
] as const;

/** Every event the sandbox can fire; firing any other name is a bug in the sandbox. */
export const ALL_EVENTS: ReadonlySet<string> = new Set<string>(DOCUMENTED_EVENTS);

export function profileEvents(profile: Profile): ReadonlySet<string> {
  return new Set<string>(profile === 'spec' ? SPEC_EVENTS : DOCUMENTED_EVENTS);
}

/** Index pages whose `include=` the documented service ignores (tradegecko/smaug: source/includes/asides/_sideloading.md). */
const NO_LIST_SIDELOADS = new Set(['orders', 'purchase_orders']);

/** Whether a list GET of `plural` honours `include=` (single-record GETs always do). */
export function listSideloads(profile: Profile, plural: string): boolean {
  return profile === 'spec' || !NO_LIST_SIDELOADS.has(plural);
}

/**
 * Whether an update (PUT) of `plural` answers 200 with the record. The spec's table shows the updated fulfillment
 * for `PUT /fulfillments/{id}`; the documentation says every update answers 204 with no body
 * (tradegecko/smaug: source/includes/_update_request.md.erb, real-service-notes section 7).
 */
export function updateAnswersRecord(profile: Profile, plural: string): boolean {
  return profile === 'spec' && plural === 'fulfillments';
}
