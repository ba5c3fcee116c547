-- The body's SHA-256 as its 32 bytes (body_sha256) instead of 64 hex characters (body_digest, 0240): the unique
-- index of waiting rows the receiver's every insert checks holds half the bytes per entry. The expand step of the
-- migration rule (docs/upgrades.md): the new code writes and reads only body_sha256; body_digest stays for the
-- previous release's code during a rolling upgrade and for the rows written before, and goes in the next release's
-- contract migration.
ALTER TABLE webhook_deliveries ADD COLUMN body_sha256 bytea;
-- Only the rows that still wait need the bytes now: the unique index below covers them alone. A handled row gets
-- its bytes when a replay makes it wait again (requeueDelivery); the console shows body_digest where it has none.
-- A few rows, whatever the table's size: no long UPDATE, no bloat.
UPDATE webhook_deliveries SET body_sha256 = decode(body_digest, 'hex') WHERE state = 'queued' AND body_digest IS NOT NULL;
-- compatible: the previous release's code never writes body_sha256, and NULLs never conflict.
CREATE UNIQUE INDEX webhook_deliveries_waiting_sha256 ON webhook_deliveries (connection_id, body_sha256) WHERE state = 'queued';
-- During the upgrade the previous release's receivers fill only body_digest and the new ones only body_sha256, so
-- a copy that reaches one of each while its twin waits is stored twice and read twice: a request, no change lost
-- (0330). The old index would only make every insert pay for a second one.
DROP INDEX webhook_deliveries_waiting_digest;
