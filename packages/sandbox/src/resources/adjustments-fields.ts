// The resources of stock adjustments and transfers: adjustments and their lines, their reasons, transfers and
// their lines.
import { children, type ResourceDef } from './shared.ts';

export const ADJUSTMENT_RESOURCES: Record<string, ResourceDef> = {
  stock_adjustments: {
    plural: 'stock_adjustments',
    singular: 'stock_adjustment',
    writable: {
      stock_location_id: 'int',
      reason: 'string',
      stock_adjustment_reason_id: 'int',
      notes: 'string',
      adjustment_number: 'string',
    },
    required: ['stock_location_id'],
    filters: { stock_location_id: 'int', reason: 'string', stock_adjustment_reason_id: 'int' },
    defaultStatuses: null,
    includes: { stock_adjustment_line_items: children('stock_adjustment_line_items', 'stock_adjustment_line_item_ids') },
  },
  stock_adjustment_line_items: {
    plural: 'stock_adjustment_line_items',
    singular: 'stock_adjustment_line_item',
    writable: {},
    filters: { stock_adjustment_id: 'int', variant_id: 'int' },
    defaultStatuses: null,
  },
  stock_transfers: {
    plural: 'stock_transfers',
    singular: 'stock_transfer',
    writable: {
      source_location_id: 'int',
      destination_location_id: 'int',
      notes: 'string',
      adjustment_number: 'string',
      transacted_at: 'any',
    },
    required: ['source_location_id', 'destination_location_id'],
    filters: { source_location_id: 'int', destination_location_id: 'int', adjustment_number: 'string' },
    defaultStatuses: ['active', 'received'],
    includes: { stock_transfer_line_items: children('stock_transfer_line_items', 'stock_transfer_line_item_ids') },
  },
  stock_transfer_line_items: {
    plural: 'stock_transfer_line_items',
    singular: 'stock_transfer_line_item',
    writable: {},
    filters: { stock_transfer_id: 'int', variant_id: 'int' },
    defaultStatuses: null,
  },
  stock_adjustment_reasons: {
    plural: 'stock_adjustment_reasons',
    singular: 'stock_adjustment_reason',
    writable: {},
    filters: { name: 'string', reason_code: 'string', default_quantity: 'string', is_system: 'bool' },
    defaultStatuses: ['active'],
  },
};
