-- What happens to a channel's orders at the service, told to the channel (src/channels/order-events.ts): imported,
-- import_failed, packed, shipped, tracking_updated, invoiced, paid, voided, returned. `key` names an event within
-- its order (packed:<fulfilment id>, shipped:<fulfilment id>, ...). Writers of a channel's events serialise on an
-- advisory lock until they commit, so ids become visible in order per channel and a reader following ids (the
-- feed, the destination's cursor) never skips one.
CREATE TABLE channel_order_events (
  id               bigserial PRIMARY KEY,
  connection_id    bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  channel_id       bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
  channel_order_id text NOT NULL,
  order_id         bigint,
  order_number     text,
  type             text NOT NULL,
  key              text NOT NULL,
  at               timestamptz NOT NULL,
  data             jsonb NOT NULL DEFAULT '{}',
  recorded_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (channel_id, channel_order_id, key)
);
CREATE INDEX channel_order_events_channel ON channel_order_events (channel_id, id);
CREATE INDEX channel_order_events_order ON channel_order_events (connection_id, channel_order_id);

-- Like channel_changes_pruned: every event id up to through_id is gone (feed cursors below it get 410).
CREATE TABLE channel_order_events_pruned (
  one        boolean PRIMARY KEY DEFAULT true CHECK (one),
  through_id bigint NOT NULL,
  pruned_at  timestamptz NOT NULL DEFAULT now()
);

-- Per imported channel order: the keys of the events told (kept when the events themselves are pruned, so a later
-- read of an old order tells nothing twice), and when it is read back next (voids, tracking added later and
-- returns received later are announced by no webhook); NULL: no longer watched.
ALTER TABLE channel_orders
  ADD COLUMN announced text[] NOT NULL DEFAULT '{}',
  ADD COLUMN watch_at timestamptz;
CREATE INDEX channel_orders_watch ON channel_orders (watch_at) WHERE watch_at IS NOT NULL;

-- A destination says which kinds it wants; order events have a cursor and a range in flight of their own.
-- Destinations set before order events keep what they had: stock only.
ALTER TABLE channel_destinations
  ADD COLUMN kinds text[] NOT NULL DEFAULT '{stock}',
  ADD COLUMN order_cursor bigint NOT NULL DEFAULT 0,
  ADD COLUMN order_batch_through bigint;
ALTER TABLE channel_destinations ALTER COLUMN kinds SET DEFAULT '{stock,orders}';
ALTER TABLE channel_posts ADD COLUMN kind text NOT NULL DEFAULT 'stock';
