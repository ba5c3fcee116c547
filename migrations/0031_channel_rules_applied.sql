-- Which channel rules the stored channel quantities were computed with, per connection: when the settings
-- (CHANNEL_LOCATIONS, CHANNEL_SAFETY_BUFFER) or a channel_rules row change, the worker recomputes them all.
CREATE TABLE channel_rules_applied (
  connection_id bigint PRIMARY KEY REFERENCES connections (id) ON DELETE CASCADE,
  fingerprint text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);
