// What we mirror, and how: for each resource its list path, response key, sideloads, mirror table and
// the typed columns, each a SQL expression over the record `r` (jsonb). The record itself always goes
// into `raw` whole; the lenient casts (cs_numeric, cs_timestamptz, ... in migrations/0030_sync.sql) turn
// values the service sends oddly (null, "", "-0.0") into NULL or exact numerics instead of failing.

export interface ChildSpec {
  /** Sideload key and collection name, e.g. order_line_items. */
  key: string;
  table: string;
  /** Column holding the parent id, e.g. order_id; taken from the child or from the parent's *_ids list. */
  parentColumn: string;
  /** Parent fields listing the child ids, e.g. order_line_item_ids. */
  parentIdFields: string[];
  columns: Record<string, string>;
}

export interface ResourceSpec {
  /** Singular name, as deliveries name it: variant, order, fulfillment... */
  name: string;
  path: string;
  key: string;
  table: string;
  columns: Record<string, string>;
  include?: ChildSpec;
  /**
   * The live states (spec, "States and transitions") when there are more than `active`: reads ask for all of
   * them (status[]=...), since a default list returns only `active` records. Soft-deleted (`archived`) ones
   * are read separately.
   */
  statuses?: string[];
  /** Swept by incremental sweeps too (false: full sweeps only). */
  incremental: boolean;
}

const base = {
  id: `cs_bigint(r->>'id')`,
  status: `r->>'status'`,
  created_at: `cs_timestamptz(r->>'created_at')`,
  updated_at: `cs_timestamptz(r->>'updated_at')`,
};
const childBase = { id: base.id, created_at: base.created_at, updated_at: base.updated_at };
const big = (f: string) => `cs_bigint(r->>'${f}')`;
const num = (f: string) => `cs_numeric(r->>'${f}')`;
const txt = (f: string) => `r->>'${f}'`;
const bool = (f: string, dflt: boolean) => `COALESCE(cs_bool(r->'${f}'), ${dflt})`;

export const orderLineItems: ChildSpec = {
  key: 'order_line_items', table: 'order_line_items', parentColumn: 'order_id', parentIdFields: ['order_line_item_ids'],
  columns: { ...childBase, status: base.status, variant_id: big('variant_id'), quantity: num('quantity'), price: num('price'), freeform: bool('freeform', false) },
};
export const fulfillmentLineItems: ChildSpec = {
  key: 'fulfillment_line_items', table: 'fulfillment_line_items', parentColumn: 'fulfillment_id', parentIdFields: ['fulfillment_line_item_ids'],
  columns: { ...childBase, order_line_item_id: big('order_line_item_id'), variant_id: big('variant_id'), variant_sku: txt('variant_sku'), quantity: num('quantity') },
};
export const fulfillmentReturnLineItems: ChildSpec = {
  key: 'fulfillment_return_line_items', table: 'fulfillment_return_line_items', parentColumn: 'fulfillment_return_id',
  parentIdFields: ['fulfillment_return_line_item_ids'],
  columns: { ...childBase, order_line_item_id: big('order_line_item_id'), quantity: num('quantity') },
};
export const purchaseOrderLineItems: ChildSpec = {
  key: 'purchase_order_line_items', table: 'purchase_order_line_items', parentColumn: 'purchase_order_id',
  parentIdFields: ['purchase_order_line_item_ids', 'purchase_line_item_ids'],
  columns: { ...childBase, variant_id: big('variant_id'), quantity: num('quantity') },
};

export const resources: Record<string, ResourceSpec> = {
  variant: {
    name: 'variant', path: '/variants', key: 'variants', table: 'variants', incremental: true,
    columns: {
      ...base, product_id: big('product_id'), sku: txt('sku'), name: txt('name'),
      composite: bool('composite', false), manage_stock: bool('manage_stock', true), keep_selling: bool('keep_selling', false),
      max_online: num('max_online'),
    },
  },
  product: {
    name: 'product', path: '/products', key: 'products', table: 'products', incremental: true,
    columns: { ...base, name: txt('name'), brand: txt('brand') },
  },
  location: {
    name: 'location', path: '/locations', key: 'locations', table: 'locations', incremental: true,
    columns: { ...base, name: `COALESCE(r->>'name', r->>'label')`, holds_stock: `cs_bool(r->'holds_stock')` },
  },
  order: {
    name: 'order', path: '/orders', key: 'orders', table: 'orders', incremental: true, include: orderLineItems,
    statuses: ['draft', 'active', 'finalized', 'fulfilled', 'void', 'deleted'],
    columns: {
      ...base, order_number: txt('order_number'), company_id: big('company_id'), contact_id: big('contact_id'),
      stock_location_id: big('stock_location_id'), currency_iso: txt('currency_iso'), issued_at: txt('issued_at'), total: num('total'),
    },
  },
  fulfillment: {
    name: 'fulfillment', path: '/fulfillments', key: 'fulfillments', table: 'fulfillments', incremental: true, include: fulfillmentLineItems,
    statuses: ['packed', 'fulfilled', 'void', 'deleted'],
    columns: {
      ...base, order_id: big('order_id'), stock_location_id: big('stock_location_id'), packed_at: `cs_timestamptz(r->>'packed_at')`,
      tracking_company: txt('tracking_company'), tracking_number: txt('tracking_number'), tracking_url: txt('tracking_url'),
    },
  },
  fulfillment_return: {
    name: 'fulfillment_return', path: '/fulfillment_returns', key: 'fulfillment_returns', table: 'fulfillment_returns', incremental: true,
    include: fulfillmentReturnLineItems,
    columns: { ...base, order_id: big('order_id'), location_id: big('location_id'), credit_note_number: txt('credit_note_number') },
  },
  purchase_order: {
    name: 'purchase_order', path: '/purchase_orders', key: 'purchase_orders', table: 'purchase_orders', incremental: true,
    include: purchaseOrderLineItems, statuses: ['draft', 'active', 'received', 'void', 'deleted'],
    columns: { ...base, company_id: big('company_id'), stock_location_id: big('stock_location_id') },
  },
  company: {
    name: 'company', path: '/companies', key: 'companies', table: 'companies', incremental: true, statuses: ['active', 'disabled'],
    columns: { ...base, name: txt('name'), company_type: txt('company_type'), company_code: txt('company_code'), email: txt('email') },
  },
  address: {
    name: 'address', path: '/addresses', key: 'addresses', table: 'addresses', incremental: true,
    columns: { ...base, company_id: big('company_id'), label: txt('label'), address1: txt('address1'), city: txt('city'), country_code: txt('country_code') },
  },
  contact: {
    name: 'contact', path: '/contacts', key: 'contacts', table: 'contacts', incremental: true,
    columns: { ...base, company_id: big('company_id'), first_name: txt('first_name'), last_name: txt('last_name'), email: txt('email') },
  },
  currency: {
    name: 'currency', path: '/currencies', key: 'currencies', table: 'currencies', incremental: true,
    columns: { ...base, iso: txt('iso'), name: txt('name'), rate: num('rate') },
  },
};

/** Line items are also collections of their own; a full sweep reads them directly so none is lost. */
export const childCollections: ChildSpec[] = [orderLineItems, fulfillmentLineItems, fulfillmentReturnLineItems, purchaseOrderLineItems];

/** Resources we keep whole in other_records only (full sweeps; a 404 means the account has none). */
export const otherResources: Record<string, string> = {
  invoice: 'invoices', invoice_line_item: 'invoice_line_items', image: 'images', note: 'notes',
  payment_method: 'payment_methods', payment_term: 'payment_terms', tax_type: 'tax_types',
  tax_component: 'tax_components', user: 'users', stock_transfer: 'stock_transfers', stock_adjustment: 'stock_adjustments',
};

/** Composition reads: GET /variants/composition?ids=<bundle ids>. */
export const composition = { name: 'composition', path: '/variants/composition', key: 'composition' } as const;

/** Every resource name a pending fetch may carry. */
export const fetchable = new Set([...Object.keys(resources), composition.name]);

/** Accepts the plural and singular spellings deliveries use (fulfillments.create, fulfillment.create). */
export function resourceName(raw: string | null | undefined): string | null {
  if (!raw) return null;
  const r = raw.toLowerCase();
  if (resources[r] || otherResources[r]) return r;
  for (const spec of Object.values(resources)) if (spec.key === r) return spec.name;
  for (const [name, key] of Object.entries(otherResources)) if (key === r) return name;
  return r;
}
