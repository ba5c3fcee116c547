-- First schema. Mirror rows are keyed by (connection_id, id) where id is the service's record id;
-- each keeps the typed columns queries use plus the record as received (raw).
-- Quantities and money: numeric. Timestamps: timestamptz. Ids: bigint.

CREATE TABLE connections (
  id                bigserial PRIMARY KEY,
  name              text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  base_url          text NOT NULL,
  account_id        bigint,
  account_name      text,
  auth_kind         text NOT NULL CHECK (auth_kind IN ('token', 'oauth')),
  access_token_enc  text,
  refresh_token_enc text,
  token_expires_at  timestamptz,
  status            text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'unauthorized', 'lapsed', 'disabled')),
  status_reason     text,
  raw               jsonb,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
  id              bigserial PRIMARY KEY,
  connection_id   bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  delivery_id     text NOT NULL,           -- X-Service-Delivery, or sha256 of the body when absent
  event           text,                    -- as delivered (plural form)
  resource        text,                    -- normalised singular resource, e.g. fulfillment
  action          text,                    -- e.g. create, stock_level_update
  object_id       bigint,
  event_at        timestamptz,             -- payload timestamp
  resource_url    text,
  body            text NOT NULL,           -- raw body as received
  state           text NOT NULL CHECK (state IN ('queued', 'processed', 'unhandled', 'rejected', 'failed')),
  error           text,
  job_id          text,
  received_at     timestamptz NOT NULL DEFAULT now(),
  processed_at    timestamptz,
  UNIQUE (connection_id, delivery_id)
);
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (connection_id, received_at DESC);
CREATE INDEX webhook_deliveries_state ON webhook_deliveries (state, received_at DESC);

-- Mirror. Every table: connection_id, id, status, created_at, updated_at (the service's), raw, synced_at (ours).
CREATE TABLE locations (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  name text,
  status text,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);

CREATE TABLE products (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  name text, brand text,
  status text,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);

CREATE TABLE variants (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  product_id bigint,
  sku text,
  name text,
  status text,
  composite boolean NOT NULL DEFAULT false,
  manage_stock boolean NOT NULL DEFAULT true,
  keep_selling boolean NOT NULL DEFAULT false,
  max_online numeric,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);
CREATE INDEX variants_sku ON variants (connection_id, sku);

CREATE TABLE stock_levels (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  variant_id bigint NOT NULL,
  location_id bigint NOT NULL,
  on_hand numeric NOT NULL DEFAULT 0,
  committed numeric NOT NULL DEFAULT 0,
  incoming numeric NOT NULL DEFAULT 0,
  bin_location text,
  reorder_point numeric,
  raw jsonb NOT NULL,
  updated_at timestamptz,               -- the variant's updated_at this row came from
  synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, variant_id, location_id)
);
CREATE INDEX stock_levels_location ON stock_levels (connection_id, location_id);

CREATE TABLE compositions (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  bundle_id bigint NOT NULL,
  component_id bigint NOT NULL,
  bundle_sku text, component_sku text,
  quantity numeric NOT NULL,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, bundle_id, component_id)
);
CREATE INDEX compositions_component ON compositions (connection_id, component_id);

CREATE TABLE companies (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  name text, company_type text, company_code text, email text,
  status text,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);

CREATE TABLE addresses (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  company_id bigint,
  label text, address1 text, city text, country_code text,
  status text,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);

CREATE TABLE contacts (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  company_id bigint,
  first_name text, last_name text, email text,
  status text,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);

CREATE TABLE currencies (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  iso text, name text, rate numeric,
  status text,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);

CREATE TABLE orders (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  order_number text,
  company_id bigint, contact_id bigint,
  stock_location_id bigint,
  currency_iso text,
  issued_at text,
  total numeric,
  status text,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);

CREATE TABLE order_line_items (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  order_id bigint NOT NULL,
  variant_id bigint,
  quantity numeric,
  price numeric,
  freeform boolean NOT NULL DEFAULT false,
  status text,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);
CREATE INDEX order_line_items_order ON order_line_items (connection_id, order_id);

CREATE TABLE fulfillments (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  order_id bigint,
  stock_location_id bigint,
  packed_at timestamptz,
  tracking_company text, tracking_number text, tracking_url text,
  status text,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);
CREATE INDEX fulfillments_order ON fulfillments (connection_id, order_id);

CREATE TABLE fulfillment_line_items (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  fulfillment_id bigint NOT NULL,
  order_line_item_id bigint,
  variant_id bigint, variant_sku text,
  quantity numeric,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);
CREATE INDEX fulfillment_line_items_fulfillment ON fulfillment_line_items (connection_id, fulfillment_id);

CREATE TABLE fulfillment_returns (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  order_id bigint,
  location_id bigint,
  credit_note_number text,
  status text,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);

CREATE TABLE fulfillment_return_line_items (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  fulfillment_return_id bigint NOT NULL,
  order_line_item_id bigint,
  quantity numeric,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);

CREATE TABLE purchase_orders (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  company_id bigint,
  stock_location_id bigint,
  status text,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);

CREATE TABLE purchase_order_line_items (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  purchase_order_id bigint NOT NULL,
  variant_id bigint,
  quantity numeric,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, id)
);
CREATE INDEX purchase_order_line_items_po ON purchase_order_line_items (connection_id, purchase_order_id);

-- Reconciliation cursors: the newest updated_at a sweep has seen, per connection and resource.
CREATE TABLE sync_cursors (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  resource text NOT NULL,
  cursor timestamptz,
  last_sweep_at timestamptz,
  last_full_sweep_at timestamptz,
  last_drift integer NOT NULL DEFAULT 0,
  PRIMARY KEY (connection_id, resource)
);

-- What happened, for operators: one row per delivery, fetch, change, sweep, push or error.
CREATE TABLE sync_log (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  connection_id bigint REFERENCES connections (id) ON DELETE CASCADE,
  resource text,
  record_id bigint,
  sku text,
  action text NOT NULL,
  before jsonb,
  after jsonb,
  job_id text,
  delivery_id text,
  request_id text,
  duration_ms integer,
  outcome text NOT NULL DEFAULT 'ok' CHECK (outcome IN ('ok', 'skipped', 'error', 'warning')),
  error text,
  detail jsonb
);
CREATE INDEX sync_log_at ON sync_log (at DESC);
CREATE INDEX sync_log_connection_at ON sync_log (connection_id, at DESC);
CREATE INDEX sync_log_resource_at ON sync_log (resource, at DESC);
CREATE INDEX sync_log_sku_at ON sync_log (sku, at DESC) WHERE sku IS NOT NULL;
CREATE INDEX sync_log_outcome_at ON sync_log (outcome, at DESC);
CREATE INDEX sync_log_record ON sync_log (connection_id, resource, record_id, at DESC);

-- One rate budget per connection, shared by every process (see src/api/budget.ts).
CREATE TABLE api_budgets (
  connection_id bigint PRIMARY KEY REFERENCES connections (id) ON DELETE CASCADE,
  request_limit integer NOT NULL DEFAULT 300,
  remaining integer NOT NULL DEFAULT 300,
  reset_at timestamptz NOT NULL DEFAULT now(),
  in_flight integer NOT NULL DEFAULT 0,
  accounting_errors integer NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now()
);
