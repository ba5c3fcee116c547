-- Channels (issue 26): an account sells in several places, each with its own rules, overrides and quantities;
-- stock is held for channel orders until the service's committed stock shows them. docs/channels.md.

-- One row per sales channel of a connection. location_ids NULL: every location counts. The safety buffer is
-- buffer_units, or with buffer_percent the larger of buffer_units and that percentage of what is available,
-- rounded up to a whole unit (src/stock/rules.ts). applied_rules: the fingerprint of the rules the stored
-- quantities follow (a change recomputes them; the worker finishes a recomputation a crash cut short).
-- adopt_settings: what migration 0130 could not know (the settings CHANNEL_LOCATIONS, CHANNEL_SAFETY_BUFFER
-- are not visible to SQL): the first process with settings fills those in ('locations', 'buffer').
CREATE TABLE channels (
  id              bigserial PRIMARY KEY,
  connection_id   bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  name            text NOT NULL,
  location_ids    bigint[],
  buffer_units    numeric NOT NULL DEFAULT 0 CHECK (buffer_units >= 0),
  buffer_percent  numeric CHECK (buffer_percent >= 0 AND buffer_percent <= 100),
  cap_max_online  boolean NOT NULL DEFAULT true,
  adopt_settings  text[] NOT NULL DEFAULT '{}',
  applied_rules   text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (connection_id, name)
);

-- Today's rules become each connection's channel `default`: the channel_rules row where there is one, the
-- settings (adopted at first use) where it had NULL or there was none.
INSERT INTO channels (connection_id, name, location_ids, buffer_units, adopt_settings)
SELECT n.id, 'default', r.location_ids, coalesce(r.safety_buffer, 0),
       array_remove(ARRAY[CASE WHEN r.location_ids IS NULL THEN 'locations' END,
                          CASE WHEN r.safety_buffer IS NULL THEN 'buffer' END], NULL)
  FROM connections n LEFT JOIN channel_rules r ON r.connection_id = n.id;

DROP TABLE channel_rules;
DROP TABLE channel_rules_applied;

-- Per-SKU exceptions of a channel: exclude (the channel does not list it), zero (held at 0), fixed (quantity),
-- buffer (its own buffer_units / buffer_percent instead of the channel's).
CREATE TABLE channel_overrides (
  channel_id      bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
  sku             text NOT NULL,
  mode            text NOT NULL CHECK (mode IN ('exclude', 'zero', 'fixed', 'buffer')),
  quantity        numeric CHECK (quantity >= 0),
  buffer_units    numeric CHECK (buffer_units >= 0),
  buffer_percent  numeric CHECK (buffer_percent >= 0 AND buffer_percent <= 100),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (channel_id, sku),
  CHECK ((mode = 'fixed') = (quantity IS NOT NULL)),
  CHECK ((mode = 'buffer') = (buffer_units IS NOT NULL)),
  CHECK (mode = 'buffer' OR buffer_percent IS NULL)
);

-- Quantities and their changes belong to a channel; the existing rows to the default channel (ids kept, so a
-- feed cursor goes on without a gap). listed false: the channel does not list the variant (override exclude).
ALTER TABLE channel_quantities ADD COLUMN channel_id bigint REFERENCES channels (id) ON DELETE CASCADE,
  ADD COLUMN listed boolean NOT NULL DEFAULT true;
UPDATE channel_quantities q SET channel_id = c.id FROM channels c WHERE c.connection_id = q.connection_id AND c.name = 'default';
ALTER TABLE channel_quantities ALTER COLUMN channel_id SET NOT NULL,
  DROP CONSTRAINT channel_quantities_pkey, ADD PRIMARY KEY (channel_id, variant_id);
CREATE INDEX channel_quantities_variant ON channel_quantities (connection_id, variant_id);

ALTER TABLE channel_quantity_changes ADD COLUMN channel_id bigint REFERENCES channels (id) ON DELETE CASCADE,
  ADD COLUMN listed boolean NOT NULL DEFAULT true;
UPDATE channel_quantity_changes q SET channel_id = c.id FROM channels c WHERE c.connection_id = q.connection_id AND c.name = 'default';
ALTER TABLE channel_quantity_changes ALTER COLUMN channel_id SET NOT NULL;
-- A channel's changes after a cursor, in id order (its feed, and a sender reading "after id X for channel C").
CREATE INDEX channel_quantity_changes_channel ON channel_quantity_changes (channel_id, id);

-- Stock held for a channel order the service has not committed yet (src/stock/holds.ts). Keyed by the channel
-- order, like channel_orders. order_id: the service's order once imported; order_at: a service-clock time at
-- or after which its committed stock includes the order (a read of a variant at least a second and
-- clock_margin_ms later shows it). ended_at / end_cause: committed, cancelled or expired.
CREATE TABLE channel_holds (
  id               bigserial PRIMARY KEY,
  connection_id    bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  channel          text NOT NULL,
  channel_order_id text NOT NULL,
  source           text NOT NULL,           -- api | cli | import
  lines            jsonb NOT NULL,          -- as asked: [{sku, quantity}]
  order_id         bigint,
  order_at         timestamptz,
  clock_margin_ms  integer NOT NULL DEFAULT 0,
  created_at       timestamptz NOT NULL DEFAULT now(),
  expires_at       timestamptz NOT NULL,
  ended_at         timestamptz,
  end_cause        text CHECK (end_cause IN ('committed', 'cancelled', 'expired')),
  UNIQUE (connection_id, channel, channel_order_id)
);
CREATE INDEX channel_holds_active ON channel_holds (expires_at) WHERE ended_at IS NULL;
CREATE INDEX channel_holds_ended ON channel_holds (ended_at) WHERE ended_at IS NOT NULL;

-- What a hold holds, per variant: an ordered SKU's variant, or a bundle's components times the quantity. Each
-- line ends on its own (committed when a read of its variant shows the order).
CREATE TABLE channel_hold_lines (
  id            bigserial PRIMARY KEY,
  hold_id       bigint NOT NULL REFERENCES channel_holds (id) ON DELETE CASCADE,
  connection_id bigint NOT NULL,
  variant_id    bigint NOT NULL,
  sku           text,
  ordered_sku   text NOT NULL,
  quantity      numeric NOT NULL CHECK (quantity > 0),
  ended_at      timestamptz,
  end_cause     text CHECK (end_cause IN ('committed', 'cancelled', 'expired'))
);
CREATE INDEX channel_hold_lines_active ON channel_hold_lines (connection_id, variant_id) WHERE ended_at IS NULL;
CREATE INDEX channel_hold_lines_hold ON channel_hold_lines (hold_id);
