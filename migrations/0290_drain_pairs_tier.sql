-- The drainer's claim in index order. It takes stock pairs first, then the pair whose window opened longest ago:
-- ordered by an expression over the resource, it sorted every due pair to take the few it can start (12 ms a claim
-- under the 5,000-account benchmark's backlog, four claims a second). A pair's tier (0: stock, read first; 1: the
-- rest) is written when the pair is made (src/db/pending.ts, from the catalogue's freshness), and the index walks
-- due pairs in claim order, so a claim reads about as many entries as it takes.
ALTER TABLE drain_pairs ADD COLUMN tier smallint NOT NULL DEFAULT 1;
-- The stock resources when this migration was written (src/catalog/index.ts STOCK_RESOURCES).
UPDATE drain_pairs SET tier = 0 WHERE resource IN ('variant', 'fulfillment', 'composition', 'channel_order');
CREATE INDEX drain_pairs_claim ON drain_pairs (tier, next_at) WHERE marked_seq > drained_seq;
DROP INDEX drain_pairs_due;
