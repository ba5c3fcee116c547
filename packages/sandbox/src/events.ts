// The delivered form of an event name. The lists of events, which differ per profile, are in profile.ts.
const PLURAL: Record<string, string> = {
  company: 'companies',
  address: 'addresses',
  fulfillment_return: 'fulfillment_returns',
  purchase_order: 'purchase_orders',
  stock_transfer: 'stock_transfers',
  stock_adjustment: 'stock_adjustments',
};

/** `fulfillment.create` -> `fulfillments.create`: the form a delivery payload carries. */
export function pluralEvent(event: string): { event: string; resource: string } {
  const [noun, action] = event.split('.') as [string, string];
  const resource = PLURAL[noun] ?? `${noun}s`;
  return { event: `${resource}.${action}`, resource };
}
