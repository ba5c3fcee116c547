// The one catalogue of the service's resources we deal with: for each its names, API path and key, the events
// that exist for it (the spec's and the documented ones, ../shared/spec/real-service-notes.md §2), what a delivery
// of each event makes the worker read, its live statuses, and how it is mirrored. The receiver's handled events,
// the webhook subscriptions and the sync engine's resource tables are all derived from here, so a delivery the
// receiver queues is always one the worker knows how to read.
//
// Mirrored columns are SQL expressions over the record `r` (jsonb). The record itself always goes into `raw`
// whole; the lenient casts (cs_numeric, cs_timestamptz, ... in migrations/0030_sync.sql) turn values the service
// sends oddly (null, "", "-0.0") into NULL or exact numerics instead of failing.
import { canonical, type Fields } from './records.ts';

/** Where an event exists: in the spec's list, in the service's published list, or both. */
export type Profile = 'spec' | 'documented';
export const PROFILES: readonly Profile[] = ['spec', 'documented'];

/**
 * What a delivery makes the worker read: the record; its line items; the variants it moves (from its lines, or
 * the record's variant_ids); the order or purchase order it belongs to.
 */
export type Read = 'record' | 'lines' | 'variants' | 'order' | 'purchase_order';

export interface EventSpec {
  in: readonly Profile[];
  reads: readonly Read[];
}

export interface ChildSpec {
  /** Sideload key and collection name, e.g. order_line_items. */
  key: string;
  /** Mirror table; null: read only to find the variants the parent moves (not kept). */
  table: string | null;
  /** Field holding the parent id, e.g. order_id; also the collection's filter by parent. */
  parentColumn: string;
  /** Parent fields listing the child ids, e.g. order_line_item_ids. */
  parentIdFields: string[];
  columns: Record<string, string>;
}

export interface ResourceSpec {
  /** Singular name, as subscriptions name it: variant, order, fulfillment... */
  name: string;
  /** Plural name: the collection and the response key, as deliveries name it. */
  key: string;
  path: string;
  /** Mirror table, or `other_records` for resources kept whole only (no typed columns). */
  table: string;
  columns: Record<string, string>;
  /** Line items, read with the record (sideload, or their own collection by parent id). */
  include?: ChildSpec;
  /**
   * The live states when there are more than `active`: reads ask for all of them (status[]=...), since a
   * default list returns only `active` records. Soft-deleted (`archived`) ones are read separately.
   */
  statuses?: string[];
  /** Swept by incremental sweeps too (false: full sweeps only). */
  incremental: boolean;
  /** Events that exist for it, by action. */
  events: Record<string, EventSpec>;
  /** A record field listing variant ids it moves (products: variant_ids). */
  variantIdsField?: string;
  /**
   * How soon the channel needs it, which decides its share of the read budget (src/sync/pacing.ts): `stock`
   * moves a channel quantity itself; `documents` (orders, fulfilments, receipts...) move stock only through
   * their variants, whose own events say so; `reference` (customers, addresses...) can wait for a quiet slot.
   */
  freshness: Freshness;
  /**
   * Fields of its records move without updated_at (a product's quantity sums its variants' stock): its table keeps
   * when each written read happened (read_as_of .. read_by), and at the same updated_at a read provably earlier
   * than the row's is never written (src/db/mirror.ts).
   */
  readTimes?: boolean;
  /**
   * A field that is true for a record that is a bundle (variants: `composite`): a new or changed bundle is read with
   * its makeup (the composition read), which its channel quantities are computed from.
   */
  bundleField?: string;
}

export type Freshness = 'stock' | 'documents' | 'reference';

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

const both: readonly Profile[] = ['spec', 'documented'];
const documented: readonly Profile[] = ['documented'];
const ev = (inProfiles: readonly Profile[], reads: readonly Read[]): EventSpec => ({ in: inProfiles, reads });
const RECORD: readonly Read[] = ['record'];
const WITH_VARIANTS: readonly Read[] = ['record', 'lines', 'variants'];
const OF_ORDER: readonly Read[] = ['record', 'lines', 'order', 'variants'];

export const orderLineItems: ChildSpec = {
  key: 'order_line_items',
  table: 'order_line_items',
  parentColumn: 'order_id',
  parentIdFields: ['order_line_item_ids'],
  columns: {
    ...childBase,
    status: base.status,
    variant_id: big('variant_id'),
    quantity: num('quantity'),
    price: num('price'),
    freeform: bool('freeform', false),
  },
};
export const fulfillmentLineItems: ChildSpec = {
  key: 'fulfillment_line_items',
  table: 'fulfillment_line_items',
  parentColumn: 'fulfillment_id',
  parentIdFields: ['fulfillment_line_item_ids'],
  columns: {
    ...childBase,
    order_line_item_id: big('order_line_item_id'),
    variant_id: big('variant_id'),
    variant_sku: txt('variant_sku'),
    quantity: num('quantity'),
  },
};
export const fulfillmentReturnLineItems: ChildSpec = {
  key: 'fulfillment_return_line_items',
  table: 'fulfillment_return_line_items',
  parentColumn: 'fulfillment_return_id',
  parentIdFields: ['fulfillment_return_line_item_ids'],
  columns: { ...childBase, order_line_item_id: big('order_line_item_id'), quantity: num('quantity') },
};
export const purchaseOrderLineItems: ChildSpec = {
  key: 'purchase_order_line_items',
  table: 'purchase_order_line_items',
  parentColumn: 'purchase_order_id',
  parentIdFields: ['purchase_order_line_item_ids', 'purchase_line_item_ids'],
  columns: { ...childBase, variant_id: big('variant_id'), quantity: num('quantity') },
};
const movedLines = (key: string, parentColumn: string): ChildSpec => ({
  key,
  table: null,
  parentColumn,
  parentIdFields: [`${key.replace(/s$/, '')}_ids`],
  columns: {},
});

const kept = { table: 'other_records', columns: {}, incremental: false, freshness: 'reference' } as const;

/** Every resource, mirrored in its own table or kept whole in other_records. */
export const catalog: Record<string, ResourceSpec> = {
  variant: {
    name: 'variant',
    freshness: 'stock',
    path: '/variants',
    key: 'variants',
    table: 'variants',
    incremental: true,
    columns: {
      ...base,
      product_id: big('product_id'),
      sku: txt('sku'),
      name: txt('name'),
      composite: bool('composite', false),
      manage_stock: bool('manage_stock', true),
      keep_selling: bool('keep_selling', false),
      max_online: num('max_online'),
    },
    events: { create: ev(both, RECORD), stock_level_update: ev(both, RECORD) },
    bundleField: 'composite',
  },
  product: {
    name: 'product',
    freshness: 'reference',
    path: '/products',
    key: 'products',
    table: 'products',
    incremental: true,
    // Documented: a product can be disabled (real-service-notes §5); read it, or a full sweep marks it gone.
    statuses: ['active', 'disabled'],
    variantIdsField: 'variant_ids',
    readTimes: true,
    columns: { ...base, name: txt('name'), brand: txt('brand') },
    // product.destroy archives its variants, and no variant event says so in the documented list.
    events: { create: ev(both, RECORD), destroy: ev(documented, ['record', 'variants']) },
  },
  location: {
    name: 'location',
    freshness: 'reference',
    path: '/locations',
    key: 'locations',
    table: 'locations',
    incremental: true,
    columns: { ...base, name: `COALESCE(r->>'name', r->>'label')`, holds_stock: `cs_bool(r->'holds_stock')` },
    events: { create: ev(documented, RECORD), update: ev(documented, RECORD) },
  },
  order: {
    name: 'order',
    freshness: 'documents',
    path: '/orders',
    key: 'orders',
    table: 'orders',
    incremental: true,
    include: orderLineItems,
    statuses: ['draft', 'active', 'finalized', 'fulfilled', 'void', 'deleted'],
    columns: {
      ...base,
      order_number: txt('order_number'),
      company_id: big('company_id'),
      contact_id: big('contact_id'),
      stock_location_id: big('stock_location_id'),
      currency_iso: txt('currency_iso'),
      issued_at: txt('issued_at'),
      total: num('total'),
    },
    events: { create: ev(both, WITH_VARIANTS), finalized: ev(documented, WITH_VARIANTS), fulfilled: ev(documented, WITH_VARIANTS) },
  },
  fulfillment: {
    name: 'fulfillment',
    // Paced with stock: a shipment moves stock, and it is what a channel waits for (order.shipped).
    freshness: 'stock',
    path: '/fulfillments',
    key: 'fulfillments',
    table: 'fulfillments',
    incremental: true,
    include: fulfillmentLineItems,
    statuses: ['packed', 'fulfilled', 'void', 'deleted'],
    columns: {
      ...base,
      order_id: big('order_id'),
      stock_location_id: big('stock_location_id'),
      packed_at: `cs_timestamptz(r->>'packed_at')`,
      tracking_company: txt('tracking_company'),
      tracking_number: txt('tracking_number'),
      tracking_url: txt('tracking_url'),
    },
    events: { create: ev(both, OF_ORDER), fulfilled: ev(documented, OF_ORDER) },
  },
  fulfillment_return: {
    name: 'fulfillment_return',
    freshness: 'documents',
    path: '/fulfillment_returns',
    key: 'fulfillment_returns',
    table: 'fulfillment_returns',
    incremental: true,
    include: fulfillmentReturnLineItems,
    // Never `active`: a default list would return none of them.
    statuses: ['returning', 'received', 'void', 'deleted'],
    columns: { ...base, order_id: big('order_id'), location_id: big('location_id'), credit_note_number: txt('credit_note_number') },
    events: { create: ev(both, OF_ORDER), received: ev(documented, OF_ORDER) },
  },
  purchase_order: {
    name: 'purchase_order',
    freshness: 'documents',
    path: '/purchase_orders',
    key: 'purchase_orders',
    table: 'purchase_orders',
    incremental: true,
    include: purchaseOrderLineItems,
    statuses: ['draft', 'active', 'received', 'void', 'deleted'],
    columns: { ...base, company_id: big('company_id'), stock_location_id: big('stock_location_id') },
    events: { create: ev(both, WITH_VARIANTS), received: ev(documented, WITH_VARIANTS) },
  },
  company: {
    name: 'company',
    freshness: 'reference',
    path: '/companies',
    key: 'companies',
    table: 'companies',
    incremental: true,
    statuses: ['active', 'disabled'],
    columns: { ...base, name: txt('name'), company_type: txt('company_type'), company_code: txt('company_code'), email: txt('email') },
    events: { create: ev(documented, RECORD), update: ev(documented, RECORD), destroy: ev(documented, RECORD) },
  },
  address: {
    name: 'address',
    freshness: 'reference',
    path: '/addresses',
    key: 'addresses',
    table: 'addresses',
    incremental: true,
    columns: {
      ...base,
      company_id: big('company_id'),
      label: txt('label'),
      address1: txt('address1'),
      city: txt('city'),
      country_code: txt('country_code'),
    },
    events: { create: ev(documented, RECORD), update: ev(documented, RECORD) },
  },
  contact: {
    name: 'contact',
    freshness: 'reference',
    path: '/contacts',
    key: 'contacts',
    table: 'contacts',
    incremental: true,
    columns: { ...base, company_id: big('company_id'), first_name: txt('first_name'), last_name: txt('last_name'), email: txt('email') },
    events: { create: ev(documented, RECORD), update: ev(documented, RECORD) },
  },
  currency: {
    name: 'currency',
    freshness: 'reference',
    path: '/currencies',
    key: 'currencies',
    table: 'currencies',
    incremental: true,
    columns: { ...base, iso: txt('iso'), name: txt('name'), rate: num('rate') },
    events: {},
  },
  // Kept whole; their events matter for what they move or change elsewhere.
  stock_adjustment: {
    ...kept,
    name: 'stock_adjustment',
    freshness: 'documents',
    path: '/stock_adjustments',
    key: 'stock_adjustments',
    include: movedLines('stock_adjustment_line_items', 'stock_adjustment_id'),
    events: { create: ev(documented, WITH_VARIANTS) },
  },
  stock_transfer: {
    ...kept,
    name: 'stock_transfer',
    freshness: 'documents',
    path: '/stock_transfers',
    key: 'stock_transfers',
    include: movedLines('stock_transfer_line_items', 'stock_transfer_id'),
    // Documented: created active, moves stock when received (real-service-notes §5).
    statuses: ['active', 'received'],
    events: { create: ev(both, WITH_VARIANTS) },
  },
  procurement: {
    // A purchase order's receipt: reading its purchase order reads the lines' variants.
    ...kept,
    name: 'procurement',
    freshness: 'documents',
    path: '/procurements',
    key: 'procurements',
    events: { create: ev(documented, ['record', 'purchase_order']) },
  },
  invoice: {
    // An invoice changes its order's invoice_status.
    ...kept,
    name: 'invoice',
    freshness: 'documents',
    path: '/invoices',
    key: 'invoices',
    events: { create: ev(documented, ['record', 'order']), destroy: ev(documented, RECORD) },
  },
  invoice_line_item: { ...kept, name: 'invoice_line_item', path: '/invoice_line_items', key: 'invoice_line_items', events: {} },
  image: { ...kept, name: 'image', path: '/images', key: 'images', events: {} },
  note: { ...kept, name: 'note', path: '/notes', key: 'notes', events: {} },
  payment_method: { ...kept, name: 'payment_method', path: '/payment_methods', key: 'payment_methods', events: {} },
  payment_term: { ...kept, name: 'payment_term', path: '/payment_terms', key: 'payment_terms', events: {} },
  tax_type: { ...kept, name: 'tax_type', path: '/tax_types', key: 'tax_types', events: {} },
  tax_component: { ...kept, name: 'tax_component', path: '/tax_components', key: 'tax_components', events: {} },
  user: { ...kept, name: 'user', path: '/users', key: 'users', events: {} },
};

/** Resources mirrored in tables of their own: the sync engine's resource table. */
export const resources: Record<string, ResourceSpec> = Object.fromEntries(
  Object.entries(catalog).filter(([, s]) => s.table !== 'other_records'),
);

/** Resources kept whole in other_records only (full sweeps; a 404 means the account has none). */
export const otherResources: ResourceSpec[] = Object.values(catalog).filter((s) => s.table === 'other_records');

/** Mirrored line items are also collections of their own; a full sweep reads them directly so none is lost. */
export const childCollections: ChildSpec[] = Object.values(resources).flatMap((s) => (s.include?.table ? [s.include] : []));

/** Composition reads: GET /variants/composition?ids=<bundle ids>. */
export const composition = { name: 'composition', path: '/variants/composition', key: 'composition' } as const;

/** Resources a delivery may name that the worker reads: every resource with events. */
export const HANDLED_RESOURCES: ReadonlySet<string> = new Set(
  Object.values(catalog)
    .filter((s) => Object.keys(s.events).length)
    .map((s) => s.name),
);

/** The events we subscribe every connection to: every event of a handled resource, spec's and documented. */
export const SUBSCRIBED_EVENTS: readonly string[] = Object.values(catalog).flatMap((s) =>
  Object.keys(s.events).map((action) => `${s.name}.${action}`),
);

/** Events of the spec's own list (a service behaving as the spec says refuses the others). */
export const eventsIn = (profile: Profile): string[] =>
  Object.values(catalog).flatMap((s) =>
    Object.entries(s.events)
      .filter(([, e]) => e.in.includes(profile))
      .map(([action]) => `${s.name}.${action}`),
  );

/**
 * What a delivery of `resource.action` makes the worker read. An action the catalogue does not list (an
 * older or extended service may send `variant.update`) is read like the resource's first event: re-reading
 * the record is always right.
 */
export function readsFor(resource: string, action: string | null | undefined): readonly Read[] {
  const spec = catalog[resource];
  if (!spec) return [];
  const events = Object.values(spec.events);
  if (!events.length) return [];
  return (action && spec.events[action]?.reads) || events[0]!.reads;
}

/** Where a variant record carries its stock: per location (current revision), or the older per-location maps. */
const STOCK_FIELDS = ['locations', 'stock_levels', 'committed_stock_levels', 'incoming_stock_levels'];
/** The statuses a soft deletion leaves (a `destroy` event announces them). */
const DELETED = ['archived', 'deleted'];

/**
 * Whether an event of `action` announces a record's change from `before` (the mirror's copy; undefined: new to
 * it) to `after` (as read; undefined: gone from the service). Events tell of a record created or destroyed, of a
 * variant's stock levels, of any change (`update`, where one exists), and of a status reached, named after it
 * (order.finalized, fulfillment.fulfilled, purchase_order.received). Most changes have none: an order voided or
 * paid, a variant's price, a shipment's tracking, a product disabled (real-service-notes section 2).
 */
export function announces(action: string, before: Fields | undefined, after: Fields | undefined): boolean {
  if (!before) return action === 'create';
  if (!after) return action === 'destroy';
  switch (action) {
    case 'create':
      return false;
    case 'update':
      return true;
    case 'destroy':
      return DELETED.includes(String(after.status)) && !DELETED.includes(String(before.status));
    case 'stock_level_update':
      return STOCK_FIELDS.some((f) => canonical(before[f]) !== canonical(after[f]));
    default:
      return after.status === action && before.status !== action;
  }
}

/** Accepts the plural and singular spellings deliveries use (fulfillments, fulfillment). */
export function resourceName(raw: string | null | undefined): string | null {
  if (!raw) return null;
  const r = raw.toLowerCase();
  if (catalog[r]) return r;
  for (const spec of Object.values(catalog)) if (spec.key === r) return spec.name;
  return r;
}

/**
 * A channel's own order read back (src/channels/order-events.ts: a void, tracking added later), as a pending
 * fetch of its own: read as an order, paced with stock, since the channel waits for it as for its quantities.
 */
export const CHANNEL_ORDER = 'channel_order';

/** The catalogue resource a pending fetch's resource name is read as. */
export const readAs = (resource: string): string => (resource === CHANNEL_ORDER ? 'order' : resource);

/** The freshness of a resource name a pending fetch may carry (composition: a bundle's makeup, stock). */
export function freshnessOf(resource: string): Freshness {
  return resource === 'composition' || resource === CHANNEL_ORDER ? 'stock' : (catalog[resource]?.freshness ?? 'reference');
}

/** The pending-fetch resources of stock freshness: their drains are claimed first (drain_pairs.tier 0). */
export const STOCK_RESOURCES: readonly string[] = [...Object.keys(catalog), composition.name, CHANNEL_ORDER].filter(
  (r) => freshnessOf(r) === 'stock',
);
