-- A delivery body is {object_id, event, timestamp in seconds, resource_url}: two real changes of one record within
-- one second, sent under two delivery ids, have the same body. Dropping the second as a copy of the first (0240)
-- lost the second change whenever the first had already been read. Now a copy is dropped only while its twin still
-- waits (state 'queued': the read it will cause comes after both changes); a copy of a delivery already handled is
-- stored and processed, and its record read again (src/db/deliveries.ts). The check is the insert's NOT EXISTS on
-- this index of waiting rows, not a unique key: two copies racing through two receivers are both stored, which
-- costs one idempotent read, and a replay that makes a handled row wait again never conflicts with a waiting copy.
DROP INDEX webhook_deliveries_digest;
CREATE INDEX webhook_deliveries_waiting_digest ON webhook_deliveries (connection_id, body_digest) WHERE state = 'queued';
