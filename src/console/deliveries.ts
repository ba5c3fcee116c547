// The states of a stored webhook delivery an operator can filter by (console and API). The rows are the
// deliveries store's (db/deliveries.ts).
export const deliveryStates = ['queued', 'processed', 'unhandled', 'rejected', 'failed'] as const;
