-- Console: one sample per connection and minute of what the charts draw over time but no table keeps
-- (API budget left, sync lag, deliveries waiting). Written by every console process; the primary key
-- makes the minute's first writer win. Kept 7 days (the sampler prunes).
CREATE TABLE console_samples (
  connection_id     bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  at                timestamptz NOT NULL,
  budget_remaining  integer,
  budget_limit      integer,
  lag_seconds       integer NOT NULL DEFAULT 0,
  queued_deliveries integer NOT NULL DEFAULT 0,
  PRIMARY KEY (connection_id, at)
);
CREATE INDEX console_samples_at ON console_samples (at);
