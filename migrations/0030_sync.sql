-- Sync engine (src/sync/) and stock availability (src/stock/). See docs/sync.md.

-- Lenient casts for values read out of the service's JSON: a value that is not what the column expects
-- (an empty string, a word where a number belongs) becomes NULL instead of failing the whole batch.
-- The record itself is always kept whole in `raw`.
CREATE FUNCTION cs_numeric(v text) RETURNS numeric LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF v IS NULL OR btrim(v) = '' THEN RETURN NULL; END IF;
  RETURN v::numeric;
EXCEPTION WHEN others THEN RETURN NULL;
END $$;

CREATE FUNCTION cs_bigint(v text) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF v IS NULL OR btrim(v) = '' THEN RETURN NULL; END IF;
  RETURN v::numeric::bigint;
EXCEPTION WHEN others THEN RETURN NULL;
END $$;

CREATE FUNCTION cs_timestamptz(v text) RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF v IS NULL OR btrim(v) = '' THEN RETURN NULL; END IF;
  RETURN v::timestamptz;
EXCEPTION WHEN others THEN RETURN NULL;
END $$;

CREATE FUNCTION cs_bool(v jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN v IS NULL OR jsonb_typeof(v) = 'null' THEN NULL
    WHEN jsonb_typeof(v) = 'boolean' THEN v::text::boolean
    WHEN lower(v #>> '{}') IN ('true', 't', '1', 'yes') THEN true
    WHEN lower(v #>> '{}') IN ('false', 'f', '0', 'no', '') THEN false
    ELSE NULL END
$$;

-- Records to read from the service: one row per (connection, resource, id), however many deliveries
-- named it. `seq` moves on every new mark, so a drain clears only rows nobody re-marked while it read.
-- A drain claims rows (claimed_until) so concurrent drains read disjoint sets.
CREATE TABLE pending_fetches (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  resource text NOT NULL,
  id bigint NOT NULL,
  seq bigint NOT NULL DEFAULT 1,
  marks integer NOT NULL DEFAULT 1,
  delivery_row_ids bigint[] NOT NULL DEFAULT '{}',  -- webhook_deliveries.id of the latest marks (at most 20)
  reason text,                                    -- e.g. delivery, follow-up of order 12, composition of bundle
  first_marked_at timestamptz NOT NULL DEFAULT now(),
  marked_at timestamptz NOT NULL DEFAULT now(),
  claimed_until timestamptz,
  attempts integer NOT NULL DEFAULT 0,
  PRIMARY KEY (connection_id, resource, id)
);
CREATE INDEX pending_fetches_queue ON pending_fetches (connection_id, resource, marked_at);

-- Per-connection channel rules; a missing row or a NULL column means the setting
-- (CHANNEL_LOCATIONS, CHANNEL_SAFETY_BUFFER) applies.
CREATE TABLE channel_rules (
  connection_id bigint PRIMARY KEY REFERENCES connections (id) ON DELETE CASCADE,
  location_ids bigint[],
  safety_buffer numeric,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- The quantity each variant currently shows on the sales channel. quantity NULL: stock not tracked
-- (manage_stock false). stock: the per-location figures it was computed from.
CREATE TABLE channel_quantities (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  variant_id bigint NOT NULL,
  sku text,
  status text,
  quantity numeric,
  tracked boolean NOT NULL,
  backorderable boolean NOT NULL,
  bundle boolean NOT NULL DEFAULT false,
  stock jsonb NOT NULL,
  last_change_id bigint,
  computed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, variant_id)
);
CREATE INDEX channel_quantities_sku ON channel_quantities (connection_id, sku);

-- Every change of a channel quantity, with its cause. `id` is the channel feed's cursor: writers take a
-- transaction lock before inserting, so ids become visible in order and a reader never skips one.
CREATE TABLE channel_quantity_changes (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  variant_id bigint NOT NULL,
  sku text,
  before_quantity numeric,       -- NULL with before_tracked false: untracked; both NULL: first computation
  before_tracked boolean,
  quantity numeric,
  tracked boolean NOT NULL,
  backorderable boolean NOT NULL,
  cause text NOT NULL,           -- delivery | sweep | full-sweep | fetch | cli | rules
  delivery_id text,              -- X-Service-Delivery of the latest delivery behind it, when any
  delivery_row_id bigint,        -- webhook_deliveries.id of that delivery
  job_id text,                   -- pg-boss job that made the change
  detail jsonb                   -- all deliveries, the stock before/after, components of a bundle
);
CREATE INDEX channel_quantity_changes_variant ON channel_quantity_changes (connection_id, variant_id, id DESC);
CREATE INDEX channel_quantity_changes_sku ON channel_quantity_changes (connection_id, sku, id DESC);

-- Records of resources the service has that we do not mirror in typed tables (invoices, notes, users...):
-- kept whole so a full sweep loses nothing.
CREATE TABLE other_records (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  resource text NOT NULL,
  id bigint NOT NULL,
  status text,
  created_at timestamptz, updated_at timestamptz,
  raw jsonb NOT NULL, synced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, resource, id)
);

-- Locations from the recorded service carry no timestamps but have a label and holds_stock.
ALTER TABLE locations ADD COLUMN holds_stock boolean;
