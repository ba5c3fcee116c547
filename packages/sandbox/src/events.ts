// Event names: the spec's list, and the extension events (documented in docs/sandbox.md) that a sandbox
// started with events: 'spec' never fires.
export const SPEC_EVENTS = [
  'product.create', 'variant.create', 'variant.stock_level_update', 'order.create', 'fulfillment.create',
  'fulfillment_return.create', 'purchase_order.create', 'stock_transfer.create',
] as const;

export const EXTENDED_EVENTS = [
  'product.update', 'product.destroy', 'variant.update', 'variant.destroy', 'order.update', 'order.destroy',
  'fulfillment.update', 'fulfillment_return.update', 'purchase_order.update', 'purchase_order.receive',
  'invoice.create', 'stock_adjustment.create', 'company.create', 'company.update', 'company.destroy',
  'address.create', 'contact.create', 'location.create', 'location.update',
] as const;

export type EventsMode = 'spec' | 'extended';

export function knownEvents(mode: EventsMode): Set<string> {
  return new Set<string>(mode === 'spec' ? SPEC_EVENTS : [...SPEC_EVENTS, ...EXTENDED_EVENTS]);
}

const PLURAL: Record<string, string> = {
  product: 'products', variant: 'variants', order: 'orders', fulfillment: 'fulfillments',
  fulfillment_return: 'fulfillment_returns', purchase_order: 'purchase_orders', stock_transfer: 'stock_transfers',
  invoice: 'invoices', stock_adjustment: 'stock_adjustments', company: 'companies', address: 'addresses',
  contact: 'contacts', location: 'locations',
};

/** `fulfillment.create` -> `fulfillments.create`: the form a delivery payload carries. */
export function pluralEvent(event: string): { event: string; resource: string } {
  const [noun, action] = event.split('.') as [string, string];
  const resource = PLURAL[noun] ?? `${noun}s`;
  return { event: `${resource}.${action}`, resource };
}
