-- A delivery the service sends again under a new delivery id (within its retry window) is the same event: its body
-- is byte for byte the same. The body's SHA-256 is kept per connection and unique among the deliveries that were
-- not refused (a forged copy refused for its signature must not block the genuine one), so the copy is answered like
-- a known delivery id: acknowledged, not stored or processed twice. Rows from before have none.
ALTER TABLE webhook_deliveries ADD COLUMN body_digest text;
CREATE UNIQUE INDEX webhook_deliveries_digest ON webhook_deliveries (connection_id, body_digest) WHERE state <> 'rejected';
