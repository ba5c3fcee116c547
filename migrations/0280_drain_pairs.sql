-- The drains' queue: one row per (connection, resource) that has had pending fetches. Workers claim due pairs
-- straight from here (src/db/drain-pairs.ts), in place of one pg-boss job per drain with its insert, fetch and
-- completion. A mark moves marked_seq in the statement that marks (src/db/pending.ts); a drain that read what
-- it claimed moves drained_seq up to the marked_seq it claimed at. So a pair is due while marked_seq > drained_seq
-- and its coalescing window (next_at, src/sync/pacing.ts) has passed, and a mark made while a drain runs leaves
-- it due again. claimed_by/claimed_until make one drain per pair at a time across processes; a killed worker's
-- claim lapses (or a mark frees it after a minute, as it frees the rows' own claims).
CREATE TABLE drain_pairs (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  resource text NOT NULL,
  marked_seq bigint NOT NULL DEFAULT 1,
  drained_seq bigint NOT NULL DEFAULT 0,
  claimed_seq bigint NOT NULL DEFAULT 0,
  next_at timestamptz NOT NULL DEFAULT now(),
  claimed_by text,
  claimed_until timestamptz,
  -- Drains of the pair that failed in a row: the next waits 2^failures seconds (at most five minutes).
  failures integer NOT NULL DEFAULT 0,
  PRIMARY KEY (connection_id, resource)
);
CREATE INDEX drain_pairs_due ON drain_pairs (next_at) WHERE marked_seq > drained_seq;

-- Whatever an earlier version left pending is due now.
INSERT INTO drain_pairs (connection_id, resource)
SELECT DISTINCT connection_id, resource FROM pending_fetches;
