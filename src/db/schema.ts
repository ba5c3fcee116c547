// Kysely table types for the schema in migrations/. numeric columns are strings (exact decimals),
// bigint ids are numbers (see the int8 parser in db/index.ts), timestamptz are Dates.
import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';
import type { Role } from '../config.ts';

type Json = unknown;
/** A column that holds a JSON object, read as one (written as anything JSON, as `Json`). */
type JsonObject = ColumnType<Record<string, unknown>, unknown, unknown>;
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type Decimal = ColumnType<string, string | number, string | number>;
type Default<T> = ColumnType<T, T | undefined, T>;
/** A timestamptz column the database fills in when omitted. */
type DefaultTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;

export interface ConnectionsTable {
  id: Generated<number>;
  name: string;
  base_url: string;
  account_id: number | null;
  account_name: string | null;
  auth_kind: 'token' | 'oauth';
  access_token_enc: string | null;
  refresh_token_enc: string | null;
  token_expires_at: Timestamp | null;
  /** When the current access token was issued (migration 0020). */
  token_refreshed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** mismatched: its service answers for another account than its mirror's (migration 0380, src/sync/account.ts). */
  status: Default<'active' | 'unauthorized' | 'lapsed' | 'disabled' | 'mismatched'>;
  status_reason: string | null;
  /** The account record as GET /accounts/current answered when connected: its id and created_at identify it. */
  raw: Json | null;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
  /** Where its webhook subscriptions deliver to, once made (migration 0060; src/receiver/subscriptions.ts). */
  webhook_address: string | null;
  /** Its subscriptions as the service listed them at the latest sync or check, and when (migration 0320). */
  webhooks: ColumnType<{ id: number; event: string; address: string }[] | null, string | null | undefined, string | null>;
  webhooks_read_at: Timestamp | null;
}

export interface WebhookDeliveriesTable {
  id: Generated<number>;
  connection_id: number;
  delivery_id: string;
  event: string | null;
  resource: string | null;
  action: string | null;
  object_id: number | null;
  event_at: Timestamp | null;
  resource_url: string | null;
  body: string;
  state: 'queued' | 'processed' | 'unhandled' | 'rejected' | 'failed';
  error: string | null;
  job_id: string | null;
  received_at: DefaultTimestamp;
  processed_at: Timestamp | null;
  /** SHA-256 of the body: a copy of a waiting delivery under a new delivery id is not stored (migrations 0330, 0370). */
  body_sha256: Buffer | null;
  /** The same as hex, written before migration 0370 (and by the release before it during an upgrade); read only. */
  body_digest: string | null;
  /** migrations/0260: the traceparent of the request that brought it, when traced. */
  traceparent: string | null;
}

interface MirrorColumns {
  connection_id: number;
  id: number;
  status: string | null;
  created_at: Timestamp | null;
  updated_at: Timestamp | null;
  raw: Json;
  synced_at: DefaultTimestamp;
}

export interface LocationsTable extends MirrorColumns {
  name: string | null;
  holds_stock: boolean | null;
}
export interface ProductsTable extends MirrorColumns {
  name: string | null;
  brand: string | null;
  /** migrations/0250 and 0270: when the read written last happened, on the service's clock (no later, no earlier). */
  read_as_of: Timestamp | null;
  read_by: Timestamp | null;
}
export interface VariantsTable extends MirrorColumns {
  product_id: number | null;
  sku: string | null;
  name: string | null;
  composite: Default<boolean>;
  manage_stock: Default<boolean>;
  keep_selling: Default<boolean>;
  max_online: Decimal | null;
  /** migrations/0090: the service's clock at (or before) the last drain's read of it. */
  read_as_of: Timestamp | null;
}
export interface StockLevelsTable {
  connection_id: number;
  variant_id: number;
  location_id: number;
  on_hand: Decimal;
  committed: Decimal;
  incoming: Decimal;
  bin_location: string | null;
  reorder_point: Decimal | null;
  raw: Json;
  updated_at: Timestamp | null;
  synced_at: DefaultTimestamp;
}
export interface CompositionsTable {
  connection_id: number;
  bundle_id: number;
  component_id: number;
  bundle_sku: string | null;
  component_sku: string | null;
  quantity: Decimal;
  raw: Json;
  synced_at: DefaultTimestamp;
}
export interface CompaniesTable extends MirrorColumns {
  name: string | null;
  company_type: string | null;
  company_code: string | null;
  email: string | null;
}
export interface AddressesTable extends MirrorColumns {
  company_id: number | null;
  label: string | null;
  address1: string | null;
  city: string | null;
  country_code: string | null;
}
export interface ContactsTable extends MirrorColumns {
  company_id: number | null;
  first_name: string | null;
  last_name: string | null;
  email: string | null;
}
export interface CurrenciesTable extends MirrorColumns {
  iso: string | null;
  name: string | null;
  rate: Decimal | null;
}
export interface OrdersTable extends MirrorColumns {
  order_number: string | null;
  company_id: number | null;
  contact_id: number | null;
  stock_location_id: number | null;
  currency_iso: string | null;
  issued_at: string | null;
  total: Decimal | null;
}
export interface OrderLineItemsTable extends MirrorColumns {
  order_id: number;
  variant_id: number | null;
  quantity: Decimal | null;
  price: Decimal | null;
  freeform: Default<boolean>;
}
export interface FulfillmentsTable extends MirrorColumns {
  order_id: number | null;
  stock_location_id: number | null;
  packed_at: Timestamp | null;
  tracking_company: string | null;
  tracking_number: string | null;
  tracking_url: string | null;
}
export interface FulfillmentLineItemsTable extends Omit<MirrorColumns, 'status'> {
  fulfillment_id: number;
  order_line_item_id: number | null;
  variant_id: number | null;
  variant_sku: string | null;
  quantity: Decimal | null;
}
export interface FulfillmentReturnsTable extends MirrorColumns {
  order_id: number | null;
  location_id: number | null;
  credit_note_number: string | null;
}
export interface FulfillmentReturnLineItemsTable extends Omit<MirrorColumns, 'status'> {
  fulfillment_return_id: number;
  order_line_item_id: number | null;
  quantity: Decimal | null;
}
export interface PurchaseOrdersTable extends MirrorColumns {
  company_id: number | null;
  stock_location_id: number | null;
}
export interface PurchaseOrderLineItemsTable extends Omit<MirrorColumns, 'status'> {
  purchase_order_id: number;
  variant_id: number | null;
  quantity: Decimal | null;
}

export interface SyncCursorsTable {
  connection_id: number;
  resource: string;
  cursor: Timestamp | null;
  last_sweep_at: Timestamp | null;
  last_full_sweep_at: Timestamp | null;
  last_drift: Default<number>;
}

export interface SyncLogTable {
  id: Generated<number>;
  at: DefaultTimestamp;
  connection_id: number | null;
  resource: string | null;
  record_id: number | null;
  sku: string | null;
  action: string;
  before: Json | null;
  after: Json | null;
  job_id: string | null;
  delivery_id: string | null;
  request_id: string | null;
  duration_ms: number | null;
  outcome: Default<'ok' | 'skipped' | 'error' | 'warning'>;
  error: string | null;
  detail: JsonObject | null;
  /** migrations/0260: the trace the entry was written in, when traced (the console links it to TRACE_URL_TEMPLATE). */
  trace_id: Default<string | null>;
}

export interface ApiBudgetsTable {
  connection_id: number;
  request_limit: Default<number>;
  remaining: Default<number>;
  reset_at: DefaultTimestamp;
  in_flight: Default<number>;
  accounting_errors: Default<number>;
  updated_at: DefaultTimestamp;
  /** Migration 0020: reset_at came from the service and has not passed; requests sent in all. */
  reset_known: Default<boolean>;
  requests_total: Default<number>;
  /** Migration 0150: requests in flight by lease id, processes waiting by name (src/db/budgets.ts), write version. */
  leases: Default<Json>;
  waiters: Default<Json>;
  lease_seq: Default<number>;
  version: Default<number>;
  /** Migration 0390: the other spenders' rate (requests a second) and the count it is measured from (src/api/budget.ts). */
  others_rate: number | null;
  sample_remaining: number | null;
  sample_at: Timestamp | null;
  sample_own: Default<number>;
}

// migrations/0160_sweep_plans.sql (src/db/sweep-plans.ts)
export interface SweepPlansTable {
  connection_id: number;
  interval_minutes: number;
  due_at: Timestamp;
  requested_at: DefaultTimestamp;
  swept_at: DefaultTimestamp;
  quiet_sweeps: Default<number>;
  webhooks_checked_at: Timestamp | null;
}

export interface Database {
  connections: ConnectionsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  locations: LocationsTable;
  products: ProductsTable;
  variants: VariantsTable;
  stock_levels: StockLevelsTable;
  compositions: CompositionsTable;
  companies: CompaniesTable;
  addresses: AddressesTable;
  contacts: ContactsTable;
  currencies: CurrenciesTable;
  orders: OrdersTable;
  order_line_items: OrderLineItemsTable;
  fulfillments: FulfillmentsTable;
  fulfillment_line_items: FulfillmentLineItemsTable;
  fulfillment_returns: FulfillmentReturnsTable;
  fulfillment_return_line_items: FulfillmentReturnLineItemsTable;
  purchase_orders: PurchaseOrdersTable;
  purchase_order_line_items: PurchaseOrderLineItemsTable;
  sync_cursors: SyncCursorsTable;
  sync_log: SyncLogTable;
  api_budgets: ApiBudgetsTable;
  sweep_plans: SweepPlansTable;
  push_operations: PushOperationsTable;
  channel_orders: ChannelOrdersTable;
  console_samples: ConsoleSamplesTable;
  pending_fetches: PendingFetchesTable;
  channels: ChannelsTable;
  channel_overrides: ChannelOverridesTable;
  channel_holds: ChannelHoldsTable;
  channel_hold_lines: ChannelHoldLinesTable;
  channel_quantities: ChannelQuantitiesTable;
  channel_quantity_changes: ChannelQuantityChangesTable;
  channel_changes_staged: ChannelChangesStagedTable;
  other_records: OtherRecordsTable;
  webhook_refusals: WebhookRefusalsTable;
  console_sessions: ConsoleSessionsTable;
  alerts: AlertsTable;
  delivery_rejections: DeliveryRejectionsTable;
  channel_changes_pruned: ChannelChangesPrunedTable;
  channel_destinations: ChannelDestinationsTable;
  channel_posts: ChannelPostsTable;
  channel_order_events: ChannelOrderEventsTable;
  channel_order_events_pruned: ChannelChangesPrunedTable;
  login_failures: LoginFailuresTable;
  audit_log: AuditLogTable;
  people: PeopleTable;
  api_tokens: ApiTokensTable;
}

export type Connection = Selectable<ConnectionsTable>;
export type NewConnection = Insertable<ConnectionsTable>;
export type Delivery = Selectable<WebhookDeliveriesTable>;
export type SyncLogEntry = Insertable<SyncLogTable>;

// migrations/0050_push_operations.sql (src/push/)
export type PushKind = 'import-order' | 'ship' | 'invoice' | 'pay' | 'void' | 'return' | 'receive-purchase-order' | 'stock-count';
export type PushState = 'queued' | 'sent' | 'confirmed' | 'failed';
export interface PushOperationsTable {
  id: Generated<number>;
  connection_id: number;
  kind: PushKind;
  input: JsonObject;
  state: Default<PushState>;
  reason: string | null;
  field_errors: Json | null;
  status_code: number | null;
  request_id: string | null;
  idempotency_key: string;
  plan: Json | null;
  result: Json | null;
  order_key: string;
  attempts: Default<number>;
  locked_until: Timestamp | null;
  job_id: string | null;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
  sent_at: Timestamp | null;
  finished_at: Timestamp | null;
}
export interface ChannelOrdersTable {
  connection_id: number;
  channel: string;
  channel_order_id: string;
  order_id: number;
  operation_id: number | null;
  created_at: DefaultTimestamp;
  /** migrations/0200: keys of the order events told the channel, and when the order is read back next. */
  announced: Default<string[]>;
  watch_at: Timestamp | null;
}
export type PushOperation = Selectable<PushOperationsTable>;

/** 0040_console_samples.sql: per-minute samples the console's charts draw (budget, lag, waiting deliveries). */
export interface ConsoleSamplesTable {
  connection_id: number;
  at: Timestamp;
  budget_remaining: number | null;
  budget_limit: number | null;
  lag_seconds: Default<number>;
  queued_deliveries: Default<number>;
  /** 0070_console_queue_samples.sql: jobs waiting in the work queues (dead letters excluded). */
  queued_jobs: Default<number>;
}

// migrations/0030_sync.sql (src/sync/, src/stock/; described in docs/sync.md)
export interface PendingFetchesTable {
  connection_id: number;
  resource: string;
  id: number;
  seq: Default<number>;
  marks: Default<number>;
  delivery_row_ids: Default<number[]>;
  reason: string | null;
  first_marked_at: DefaultTimestamp;
  marked_at: DefaultTimestamp;
  claimed_until: Timestamp | null;
  attempts: Default<number>;
}
export interface ChannelQuantitiesTable {
  connection_id: number;
  /** migrations/0130_channels.sql: the channel (existing rows: the connection's `default`). */
  channel_id: number;
  variant_id: number;
  sku: string | null;
  status: string | null;
  quantity: Decimal | null;
  tracked: boolean;
  backorderable: boolean;
  bundle: Default<boolean>;
  listed: Default<boolean>;
  stock: Json;
  last_change_id: number | null;
  computed_at: DefaultTimestamp;
}
export interface ChannelQuantityChangesTable {
  id: Generated<number>;
  at: DefaultTimestamp;
  connection_id: number;
  channel_id: number;
  variant_id: number;
  sku: string | null;
  before_quantity: Decimal | null;
  before_tracked: boolean | null;
  quantity: Decimal | null;
  tracked: boolean;
  backorderable: boolean;
  listed: Default<boolean>;
  cause: string;
  delivery_id: string | null;
  delivery_row_id: number | null;
  job_id: string | null;
  detail: JsonObject | null;
  /** migrations/0350: the trace context of the write that made it (its POST continues that trace). */
  traceparent: Default<string | null>;
}
// migrations/0190_channel_change_staging.sql: a change until its transaction commits (then it is in the table above).
export interface ChannelChangesStagedTable extends Omit<ChannelQuantityChangesTable, 'id' | 'listed'> {
  staged: Generated<number>;
  listed: boolean;
}
export interface OtherRecordsTable extends MirrorColumns {
  resource: string;
}

// migrations/0130_channels.sql (src/db/channels.ts; what they mean: src/stock/, docs/channels.md)
export interface ChannelsTable {
  id: Generated<number>;
  connection_id: number;
  name: string;
  /** null: every location counts. */
  location_ids: number[] | null;
  buffer_units: ColumnType<string, string | number | undefined, string | number>;
  buffer_percent: Decimal | null;
  cap_max_online: Default<boolean>;
  /** What the first process with settings fills in: 'locations', 'buffer' (a migrated default channel). */
  adopt_settings: Default<string[]>;
  /** Fingerprint of the rules the stored quantities follow. */
  applied_rules: string | null;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
}
export type ChannelOverrideMode = 'exclude' | 'zero' | 'fixed' | 'buffer';
export interface ChannelOverridesTable {
  channel_id: number;
  sku: string;
  mode: ChannelOverrideMode;
  quantity: Decimal | null;
  buffer_units: Decimal | null;
  buffer_percent: Decimal | null;
  updated_at: DefaultTimestamp;
}
export type HoldEnd = 'committed' | 'cancelled' | 'expired';
export interface ChannelHoldsTable {
  id: Generated<number>;
  connection_id: number;
  channel: string;
  channel_order_id: string;
  source: 'api' | 'cli' | 'import';
  /** The lines as asked: [{sku, quantity}], each quantity an exact decimal string (createHold). */
  lines: ColumnType<{ sku: string; quantity: string }[], unknown, unknown>;
  order_id: number | null;
  /** Service clock: its committed stock includes the order from then on. */
  order_at: Timestamp | null;
  clock_margin_ms: Default<number>;
  created_at: DefaultTimestamp;
  expires_at: Timestamp;
  ended_at: Timestamp | null;
  end_cause: HoldEnd | null;
}
export interface ChannelHoldLinesTable {
  id: Generated<number>;
  hold_id: number;
  connection_id: number;
  variant_id: number;
  sku: string | null;
  /** The SKU as ordered: a bundle's, on each of its components' lines. */
  ordered_sku: string;
  quantity: Decimal;
  ended_at: Timestamp | null;
  end_cause: HoldEnd | null;
}

// migrations/0080_webhook_refusals.sql (src/db/refusals.ts; src/receiver/subscriptions.ts decides when to ask again)
export interface WebhookRefusalsTable {
  connection_id: number;
  event: string;
  /** The service URL that refused (a refusal of another URL does not count). */
  base_url: string;
  reason: string | null;
  refused_at: DefaultTimestamp;
}

// migrations/0100_console_sessions.sql (src/console/auth.ts)
export interface ConsoleSessionsTable {
  /** SHA-256 (hex) of the cookie's secret. */
  id: string;
  /** The break-glass token's session: an HMAC keyed by OPERATOR_TOKEN (a new token ends it). Null for a person's. */
  token_mac: string | null;
  /** A person's session (migration 0230): who, and the role of that sign-in. */
  person_id: number | null;
  role: string | null;
  created_at: DefaultTimestamp;
  expires_at: Date;
}

// migrations/0110_retention.sql (src/db/channels.ts; src/sync/retention.ts decides what goes)
export interface ChannelChangesPrunedTable {
  one: Default<boolean>;
  /** The newest channel_quantity_changes id retention deleted: every id up to it is gone. */
  through_id: number;
  pruned_at: DefaultTimestamp;
}

// migrations/0120_alerts.sql (src/db/alerts.ts; what opens and resolves an alert: src/alerts/)
export type AlertSeverity = 'critical' | 'warning';
export interface AlertsTable {
  id: Generated<number>;
  /** condition + subject, e.g. `signature:shop`: at most one open alert per key. */
  key: string;
  condition: string;
  connection_id: number | null;
  severity: AlertSeverity;
  /** What is wrong and which setting or action fixes it. */
  message: string;
  count: Default<number>;
  opened_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
  resolved_at: Timestamp | null;
  reopened: Default<number>;
  notified_open_at: Timestamp | null;
  notified_resolved_at: Timestamp | null;
  notify_attempts: Default<number>;
  notify_next_at: Timestamp | null;
  notify_claimed_until: Timestamp | null;
  notify_error: string | null;
}

export interface DeliveryRejectionsTable {
  connection_name: string;
  reason: string;
  minute: Timestamp;
  count: number;
  last_at: Timestamp;
}

// migrations/0140_channel_destinations.sql (src/channels/dispatch.ts)
export interface ChannelDestinationsTable {
  channel_id: number;
  url: string;
  /** `whsec_` secrets, current first, space-separated, encrypted (src/api/secrets.ts). */
  secrets: string;
  cursor: Default<number>;
  batch_through: number | null;
  claimed_until: Date | null;
  next_attempt_at: Date | null;
  paused_at: Date | null;
  paused_reason: string | null;
  /** What the destination wants: 'stock', 'orders' or both (migrations/0200). */
  kinds: Default<DestinationKind[]>;
  /** The last order event id acknowledged, and the last of the POST of order events in flight. */
  order_cursor: Default<number>;
  order_batch_through: number | null;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
  /** How its POSTs go (migrations/0340): the host of the latest, POSTs failed in a row, since when, the last answer. */
  host: string | null;
  failures: Default<number>;
  failing_since: Timestamp | null;
  last_attempt_at: Timestamp | null;
  last_status: number | null;
  last_error: string | null;
  last_success_at: Timestamp | null;
}

export type DestinationKind = 'stock' | 'orders';
export interface ChannelPostsTable {
  id: Generated<number>;
  channel_id: number;
  webhook_id: string;
  first_change: number;
  last_change: number;
  changes: number;
  ok: boolean;
  status: number | null;
  error: string | null;
  attempts: number;
  ms: number;
  /** stock: first/last_change are channel_quantity_changes ids; orders: channel_order_events ids. */
  kind: Default<DestinationKind>;
  at: DefaultTimestamp;
}

// migrations/0200_channel_order_events.sql (src/db/channel-order-events.ts; what they mean: src/channels/order-events.ts)
export type OrderEventType =
  | 'order.imported'
  | 'order.import_failed'
  | 'order.packed'
  | 'order.shipped'
  | 'order.tracking_updated'
  | 'order.invoiced'
  | 'order.paid'
  | 'order.voided'
  | 'order.returned'
  | 'order.return_received';
export interface ChannelOrderEventsTable {
  id: Generated<number>;
  connection_id: number;
  channel_id: number;
  channel_order_id: string;
  order_id: number | null;
  order_number: string | null;
  type: OrderEventType;
  key: string;
  at: Timestamp;
  data: Json;
  recorded_at: DefaultTimestamp;
  /** migrations/0350: the trace context of the write (or push outcome) that recorded it. */
  traceparent: Default<string | null>;
}

// migrations/0210_login_failures.sql (src/db/login-failures.ts)
export interface LoginFailuresTable {
  address: string;
  at: DefaultTimestamp;
}

// migrations/0220_audit_log.sql (src/db/audit.ts; who writes it: src/console/audit.ts)
export interface AuditLogTable {
  id: Generated<number>;
  at: DefaultTimestamp;
  actor: string;
  role: string;
  action: string;
  connection_id: number | null;
  connection: string | null;
  target: string | null;
  before: Json | null;
  after: Json | null;
  source: 'console' | 'api' | 'cli';
  address: string | null;
}

// migrations/0230_people_and_tokens.sql (src/db/people.ts; who gets in with which role: src/console/auth.ts)
export type { Role };
export interface PeopleTable {
  id: Generated<number>;
  /** The OpenID provider's `sub`, qualified by its issuer. */
  subject: string;
  email: string;
  name: string | null;
  role: Role;
  created_at: DefaultTimestamp;
  last_seen_at: Timestamp | null;
  /** Refused at their latest sign-in (no role, or no longer allowed): their sessions and tokens end (migration 0300). */
  disabled_at: Timestamp | null;
}
/** Where a token's right comes from (migration 0300); 'unknown' is never admitted. */
export type TokenOrigin = 'person' | 'break-glass' | 'cli' | 'unknown';
export interface ApiTokensTable {
  id: Generated<number>;
  name: string;
  /** Who the token acts for: a person's e-mail, or the break-glass operator. */
  person: string;
  role: Role;
  /** SHA-256 of the token (hex); the token itself is shown once. */
  digest: string;
  created_at: DefaultTimestamp;
  expires_at: Timestamp;
  revoked_at: Timestamp | null;
  last_used_at: Timestamp | null;
  made_by: TokenOrigin;
  /** The person whose role bounds it (made_by 'person'). */
  person_id: number | null;
  /** The break-glass token it was made with, as an HMAC keyed by it (made_by 'break-glass'). */
  operator_mac: string | null;
  /** The token it was made with: it ends with that one. */
  parent_id: number | null;
}
