// The resources of fulfillment returns: returns and their lines.
import { NOT_DELETED, children, type ResourceDef } from './shared.ts';

export const RETURN_RESOURCES: Record<string, ResourceDef> = {
  fulfillment_returns: {
    plural: 'fulfillment_returns',
    singular: 'fulfillment_return',
    writable: {
      order_id: 'int',
      location_id: 'int',
      delivery_type: 'string',
      exchange_rate: 'decimal',
      notes: 'string',
      received_at: 'any',
      tracking_company: 'string',
      tracking_number: 'string',
      tracking_url: 'string',
      status: 'string',
    },
    required: ['order_id'],
    filters: { order_id: 'int', company_id: 'int', location_id: 'int', credit_note_number: 'string' },
    defaultStatuses: NOT_DELETED,
    includes: { fulfillment_return_line_items: children('fulfillment_return_line_items', 'fulfillment_return_line_item_ids') },
    deletion: 'archive',
  },
  fulfillment_return_line_items: {
    plural: 'fulfillment_return_line_items',
    singular: 'fulfillment_return_line_item',
    writable: {},
    filters: { fulfillment_return_id: 'int', order_line_item_id: 'int' },
    defaultStatuses: null,
  },
};
