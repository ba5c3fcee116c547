-- Retention (src/sync/retention.ts): the tables that grow with traffic lose their old rows in small batches.

-- The newest channel_quantity_changes id retention has deleted. Retention deletes the oldest ids first, so every
-- change up to it is gone and none after it: the channel feed answers a cursor below it with 410 (changes the
-- caller never saw are gone) instead of silently skipping them.
CREATE TABLE channel_changes_pruned (
  one        boolean PRIMARY KEY DEFAULT true CHECK (one),
  through_id bigint NOT NULL,
  pruned_at  timestamptz NOT NULL DEFAULT now()
);

-- Deleting a push operation sets channel_orders.operation_id to NULL (the mapping stays: it is what keeps an
-- imported order from being imported twice). Without this index that foreign key scans channel_orders per row.
CREATE INDEX channel_orders_operation ON channel_orders (operation_id) WHERE operation_id IS NOT NULL;
