// What each resource accepts and how it is listed: writable fields with their types, required fields,
// list filters, sideloads and the default status filter. The domain rules live in service.ts.
import { invalid, parseDecimal, type Row, type Store } from './store.ts';

export type FieldType = 'int' | 'string' | 'bool' | 'decimal' | 'strings' | 'date' | 'any';

export interface ResourceDef {
  plural: string;
  singular: string;
  /** Fields a create or update may set; anything else in the body is ignored (read-only or unknown). */
  writable: Record<string, FieldType>;
  required?: string[];
  /** Resource-specific list filters (field name -> type). */
  filters: Record<string, FieldType>;
  /** Sideload name -> [plural key, related records of a list of records]. */
  includes?: Record<string, (store: Store, rows: Row[]) => [string, Row[]]>;
  /** Statuses listed when `status` is absent; null: this resource has no status filter. */
  defaultStatuses: string[] | null;
  /** DELETE: 'archive' (soft), 'permanent', or absent (404). */
  deletion?: 'archive' | 'permanent';
  /** Filters on a value derived from related records (string match), e.g. a line item's order status. */
  computedFilters?: Record<string, (store: Store, row: Row) => unknown>;
  /** Order of a list without `order=`; absent: most recent first. */
  defaultOrder?: (a: Row, b: Row) => number;
}

/** Line items: by parent, then `position` (real-service-notes §6), then id. */
const byPosition =
  (parent: string) =>
  (a: Row, b: Row): number =>
    a[parent] - b[parent] || (a.position ?? 0) - (b.position ?? 0) || a.id - b.id;

const byIds = (store: Store, plural: string, ids: Iterable<unknown>): Row[] => {
  const t = store.table(plural)!;
  const out: Row[] = [];
  const seen = new Set<number>();
  for (const id of ids) {
    if (typeof id !== 'number' || seen.has(id)) continue;
    seen.add(id);
    const r = t.get(id);
    if (r) out.push(r);
  }
  return out;
};
const children =
  (plural: string, field: string) =>
  (store: Store, rows: Row[]): [string, Row[]] => [
    plural,
    byIds(
      store,
      plural,
      rows.flatMap((r) => (r[field] as number[] | undefined) ?? []),
    ),
  ];
const parent =
  (plural: string, field: string) =>
  (store: Store, rows: Row[]): [string, Row[]] => [
    plural,
    byIds(
      store,
      plural,
      rows.map((r) => r[field]),
    ),
  ];
const parents =
  (plural: string, fields: string[]) =>
  (store: Store, rows: Row[]): [string, Row[]] => [
    plural,
    byIds(
      store,
      plural,
      rows.flatMap((r) => fields.map((f) => r[f])),
    ),
  ];

const ACTIVE = ['active'];
const NOT_DELETED = ['packed', 'fulfilled', 'void', 'returning', 'received', 'draft', 'active', 'finalized'];

const addressFields: Record<string, FieldType> = {
  address1: 'string',
  address2: 'string',
  city: 'string',
  country: 'string',
  state: 'string',
  suburb: 'string',
  zip_code: 'string',
  phone_number: 'string',
  email: 'string',
  first_name: 'string',
  last_name: 'string',
  company_name: 'string',
  country_code: 'string',
  label: 'string',
};

export const RESOURCES: Record<string, ResourceDef> = {
  addresses: {
    plural: 'addresses',
    singular: 'address',
    writable: { company_id: 'int', ...addressFields },
    required: ['company_id', 'address1'],
    filters: { company_id: 'int', label: 'string' },
    defaultStatuses: ACTIVE,
    includes: { company: parent('companies', 'company_id'), companies: parent('companies', 'company_id') },
    deletion: 'permanent',
  },
  companies: {
    plural: 'companies',
    singular: 'company',
    writable: {
      name: 'string',
      company_type: 'string',
      status: 'string',
      assignee_id: 'int',
      default_ledger_account_id: 'int',
      default_payment_method_id: 'int',
      default_payment_term_id: 'int',
      default_stock_location_id: 'int',
      default_tax_type_id: 'int',
      company_code: 'string',
      default_discount_rate: 'decimal',
      default_price_list_id: 'string',
      default_tax_rate: 'decimal',
      description: 'string',
      email: 'string',
      fax: 'string',
      phone_number: 'string',
      tax_number: 'string',
      website: 'string',
      tags: 'strings',
      default_price_type_id: 'string',
    },
    required: ['name', 'company_type'],
    filters: {
      assignee_id: 'int',
      default_ledger_account_id: 'int',
      default_payment_method_id: 'int',
      default_payment_term_id: 'int',
      default_stock_location_id: 'int',
      default_tax_type_id: 'int',
      company_code: 'string',
      company_type: 'string',
      default_price_list_id: 'string',
      default_document_theme_id: 'int',
      email: 'string',
      default_price_type_id: 'string',
    },
    defaultStatuses: ACTIVE,
    includes: { addresses: children('addresses', 'address_ids'), contacts: children('contacts', 'contact_ids') },
    deletion: 'permanent',
  },
  contacts: {
    plural: 'contacts',
    singular: 'contact',
    writable: {
      company_id: 'int',
      first_name: 'string',
      last_name: 'string',
      email: 'string',
      fax: 'string',
      location: 'string',
      mobile: 'string',
      notes: 'string',
      phone_number: 'string',
      position: 'string',
      online_ordering: 'bool',
      phone: 'string',
    },
    required: ['company_id', 'first_name'],
    filters: { company_id: 'int', online_ordering: 'bool', email: 'string' },
    defaultStatuses: ACTIVE,
    includes: { company: parent('companies', 'company_id') },
    deletion: 'permanent',
  },
  currencies: {
    plural: 'currencies',
    singular: 'currency',
    writable: {
      iso: 'string',
      delimiter: 'string',
      name: 'string',
      separator: 'string',
      symbol: 'string',
      format: 'string',
      precision: 'int',
      rate: 'decimal',
      subunit: 'int',
    },
    required: ['iso'],
    filters: { iso: 'string' },
    defaultStatuses: ACTIVE,
    deletion: 'archive',
  },
  locations: {
    plural: 'locations',
    singular: 'location',
    writable: { ...addressFields, holds_stock: 'bool' },
    required: ['label'],
    filters: { holds_stock: 'bool', label: 'string' },
    defaultStatuses: ACTIVE,
    deletion: 'archive',
  },
  products: {
    plural: 'products',
    singular: 'product',
    writable: {
      name: 'string',
      brand: 'string',
      description: 'string',
      image_url: 'string',
      product_type: 'string',
      supplier: 'string',
      vendor: 'string',
      tags: 'string',
      opt1: 'string',
      opt2: 'string',
      opt3: 'string',
      status: 'string',
    },
    required: ['name'],
    filters: { product_type: 'string', brand: 'string', supplier: 'string', vendor: 'string', name: 'string' },
    defaultStatuses: ACTIVE,
    includes: { variants: children('variants', 'variant_ids') },
    deletion: 'archive',
  },
  variants: {
    plural: 'variants',
    singular: 'variant',
    writable: {
      product_id: 'int',
      name: 'string',
      sku: 'string',
      description: 'string',
      buy_price: 'decimal',
      retail_price: 'decimal',
      wholesale_price: 'decimal',
      composite: 'bool',
      manage_stock: 'bool',
      keep_selling: 'bool',
      max_online: 'decimal',
      is_online: 'bool',
      online_ordering: 'bool',
      sellable: 'bool',
      taxable: 'bool',
      opt1: 'string',
      opt2: 'string',
      opt3: 'string',
      upc: 'string',
      supplier_code: 'string',
      weight: 'decimal',
      position: 'int',
      last_cost_price: 'decimal',
    },
    required: ['product_id'],
    filters: {
      product_id: 'int',
      sku: 'string',
      composite: 'bool',
      manage_stock: 'bool',
      keep_selling: 'bool',
      upc: 'string',
      supplier_code: 'string',
    },
    defaultStatuses: ACTIVE,
    includes: { product: parent('products', 'product_id'), products: parent('products', 'product_id') },
    deletion: 'archive',
  },
  orders: {
    plural: 'orders',
    singular: 'order',
    writable: {
      company_id: 'int',
      contact_id: 'int',
      assignee_id: 'int',
      shipping_address_id: 'int',
      billing_address_id: 'int',
      stock_location_id: 'int',
      status: 'string',
      issued_at: 'date',
      ship_at: 'date',
      currency_iso: 'string',
      email: 'string',
      phone_number: 'string',
      notes: 'string',
      reference_number: 'string',
      order_number: 'string',
      tags: 'strings',
      tax_type: 'string',
      source_url: 'string',
      source_id: 'int',
      source: 'string',
      url: 'string',
      tracking_number: 'string',
    },
    filters: {
      company_id: 'int',
      contact_id: 'int',
      assignee_id: 'int',
      stock_location_id: 'int',
      currency_id: 'int',
      order_number: 'string',
      payment_status: 'string',
      invoice_status: 'string',
      fulfillment_status: 'string',
      packed_status: 'string',
      shipping_address_id: 'int',
      billing_address_id: 'int',
      source_id: 'int',
      reference_number: 'string',
    },
    defaultStatuses: ACTIVE,
    includes: {
      order_line_items: children('order_line_items', 'order_line_item_ids'),
      shipping_address: parent('addresses', 'shipping_address_id'),
      billing_address: parent('addresses', 'billing_address_id'),
      addresses: parents('addresses', ['shipping_address_id', 'billing_address_id']),
      company: parent('companies', 'company_id'),
      companies: parent('companies', 'company_id'),
      fulfillments: children('fulfillments', 'fulfillment_ids'),
      invoices: children('invoices', 'invoice_ids'),
      currency: parent('currencies', 'currency_id'),
      currencies: parent('currencies', 'currency_id'),
      contact: parent('contacts', 'contact_id'),
      contacts: parent('contacts', 'contact_id'),
    },
    deletion: 'archive',
  },
  order_line_items: {
    plural: 'order_line_items',
    singular: 'order_line_item',
    writable: {
      order_id: 'int',
      variant_id: 'int',
      quantity: 'decimal',
      price: 'decimal',
      discount: 'decimal',
      freeform: 'bool',
      label: 'string',
      position: 'int',
      tax_type_id: 'int',
      tax_rate_override: 'decimal',
      line_type: 'string',
      image_url: 'string',
    },
    required: ['order_id', 'quantity'],
    filters: { order_id: 'int', variant_id: 'int', freeform: 'bool' },
    defaultStatuses: null,
    includes: {
      variant: parent('variants', 'variant_id'),
      variants: parent('variants', 'variant_id'),
      order: parent('orders', 'order_id'),
      orders: parent('orders', 'order_id'),
    },
    deletion: 'permanent',
    computedFilters: { order_status: (store, row) => store.orders.get(row.order_id)?.status },
    defaultOrder: byPosition('order_id'),
  },
  fulfillments: {
    plural: 'fulfillments',
    singular: 'fulfillment',
    writable: {
      order_id: 'int',
      status: 'string',
      packed_at: 'date',
      shipped_at: 'any',
      received_at: 'any',
      stock_location_id: 'int',
      shipping_address_id: 'int',
      billing_address_id: 'int',
      tracking_company: 'string',
      tracking_number: 'string',
      tracking_url: 'string',
      delivery_type: 'string',
      notes: 'string',
      exchange_rate: 'decimal',
    },
    required: ['order_id'],
    filters: { order_id: 'int', stock_location_id: 'int', tracking_number: 'string' },
    defaultStatuses: NOT_DELETED,
    includes: {
      fulfillment_line_items: children('fulfillment_line_items', 'fulfillment_line_item_ids'),
      order: parent('orders', 'order_id'),
      orders: parent('orders', 'order_id'),
    },
    deletion: 'archive',
  },
  fulfillment_line_items: {
    plural: 'fulfillment_line_items',
    singular: 'fulfillment_line_item',
    writable: {},
    filters: { fulfillment_id: 'int', order_line_item_id: 'int', variant_id: 'int' },
    defaultStatuses: null,
  },
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
  invoices: {
    plural: 'invoices',
    singular: 'invoice',
    writable: { notes: 'string', due_at: 'date', invoiced_at: 'date', payment_term_id: 'int', order_id: 'int' },
    required: ['order_id'],
    filters: { order_id: 'int', invoice_number: 'string' },
    defaultStatuses: null,
    includes: { invoice_line_items: children('invoice_line_items', 'invoice_line_item_ids') },
    deletion: 'permanent',
  },
  invoice_line_items: {
    plural: 'invoice_line_items',
    singular: 'invoice_line_item',
    writable: {},
    filters: { invoice_id: 'int', order_line_item_id: 'int' },
    defaultStatuses: null,
  },
  purchase_orders: {
    plural: 'purchase_orders',
    singular: 'purchase_order',
    writable: {
      company_id: 'int',
      supplier_address_id: 'int',
      billing_address_id: 'int',
      stock_location_id: 'int',
      status: 'string',
      order_number: 'string',
      reference_number: 'string',
      notes: 'string',
      email: 'string',
      due_at: 'date',
      currency_iso: 'string',
      tax_treatment: 'string',
      default_price_list_id: 'string',
    },
    filters: {
      company_id: 'int',
      stock_location_id: 'int',
      procurement_status: 'string',
      order_number: 'string',
      supplier_address_id: 'int',
    },
    defaultStatuses: ACTIVE,
    includes: {
      purchase_order_line_items: children('purchase_order_line_items', 'purchase_order_line_item_ids'),
      company: parent('companies', 'company_id'),
      companies: parent('companies', 'company_id'),
      procurements: children('procurements', 'procurement_ids'),
    },
    deletion: 'archive',
  },
  purchase_order_line_items: {
    plural: 'purchase_order_line_items',
    singular: 'purchase_order_line_item',
    writable: {
      purchase_order_id: 'int',
      variant_id: 'int',
      quantity: 'decimal',
      price: 'decimal',
      label: 'string',
      freeform: 'bool',
      position: 'int',
      tax_type_id: 'int',
    },
    required: ['purchase_order_id', 'quantity'],
    filters: { purchase_order_id: 'int', variant_id: 'int', procurement_id: 'int' },
    defaultStatuses: null,
    includes: { variants: parent('variants', 'variant_id'), variant: parent('variants', 'variant_id') },
    deletion: 'permanent',
    defaultOrder: byPosition('purchase_order_id'),
  },
  procurements: {
    plural: 'procurements',
    singular: 'procurement',
    writable: {},
    filters: { purchase_order_id: 'int' },
    defaultStatuses: null,
  },
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
  webhooks: {
    plural: 'webhooks',
    singular: 'webhook',
    writable: { address: 'string', event: 'string' },
    required: ['address', 'event'],
    filters: { event: 'string', address: 'string', oauth_application_id: 'int' },
    defaultStatuses: null,
    deletion: 'permanent',
  },
  payments: {
    plural: 'payments',
    singular: 'payment',
    writable: {},
    filters: { invoice_id: 'int', payment_method_id: 'int', reference: 'string' },
    defaultStatuses: ['active'],
  },
  stock_adjustment_reasons: {
    plural: 'stock_adjustment_reasons',
    singular: 'stock_adjustment_reason',
    writable: {},
    filters: { name: 'string', reason_code: 'string', default_quantity: 'string', is_system: 'bool' },
    defaultStatuses: ['active'],
  },
  users: { plural: 'users', singular: 'user', writable: {}, filters: { email: 'string' }, defaultStatuses: ACTIVE },
  payment_terms: { plural: 'payment_terms', singular: 'payment_term', writable: {}, filters: {}, defaultStatuses: ACTIVE },
  payment_methods: { plural: 'payment_methods', singular: 'payment_method', writable: {}, filters: {}, defaultStatuses: null },
  tax_types: { plural: 'tax_types', singular: 'tax_type', writable: {}, filters: { code: 'string' }, defaultStatuses: ACTIVE },
};

/** Day-first or year-first date strings, or an ISO timestamp; rendered as YYYY-MM-DD. */
export function parseDate(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const s = v.trim();
  let m = /^(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:[T ].*)?$/.exec(s);
  let y: number, mo: number, d: number;
  if (m) [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  else if ((m = /^(\d{1,2})[-/.](\d{1,2})[-/.](\d{4})$/.exec(s))) [d, mo, y] = [Number(m[1]), Number(m[2]), Number(m[3])];
  else return null;
  const date = new Date(Date.UTC(y, mo - 1, d));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d) return null;
  return date.toISOString().slice(0, 10);
}

/** Picks the writable fields of a request body, converting and checking their types (422 on a bad value). */
export function pickFields(def: ResourceDef, body: Record<string, unknown>, opts: { create: boolean }): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const errors: Record<string, string[]> = {};
  for (const [field, type] of Object.entries(def.writable)) {
    if (!(field in body)) continue;
    const v = body[field];
    if (v === null) {
      out[field] = null;
      continue;
    }
    const bad = (msg: string) => {
      (errors[field] ??= []).push(msg);
    };
    switch (type) {
      case 'int':
        if (typeof v === 'number' && Number.isInteger(v)) out[field] = v;
        else if (typeof v === 'string' && /^\d+$/.test(v)) out[field] = Number(v);
        else bad('is not a number');
        break;
      case 'string':
        if (typeof v === 'string') out[field] = v;
        else if (typeof v === 'number' || typeof v === 'boolean') out[field] = String(v);
        else bad('is invalid');
        break;
      case 'bool':
        if (typeof v === 'boolean') out[field] = v;
        else if (v === 'true' || v === 'false') out[field] = v === 'true';
        else bad('is not a boolean');
        break;
      case 'decimal': {
        const d = parseDecimal(v);
        if (d) out[field] = d.toString();
        else bad('is not a number');
        break;
      }
      case 'strings':
        if (Array.isArray(v) && v.every((x) => typeof x === 'string')) out[field] = v;
        else if (typeof v === 'string')
          out[field] = v
            .split(',')
            .map((x) => x.trim())
            .filter(Boolean);
        else bad('is invalid');
        break;
      case 'date': {
        const d = parseDate(v);
        if (d) out[field] = d;
        else bad('is not a valid date');
        break;
      }
      default:
        out[field] = v;
    }
  }
  if (opts.create) {
    for (const field of def.required ?? []) {
      const v = field in out ? out[field] : body[field];
      if (v === undefined || v === null || v === '') (errors[field] ??= []).push("can't be blank");
    }
  }
  if (Object.keys(errors).length) throw invalid(errors);
  return out;
}
