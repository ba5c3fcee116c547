-- A delivery body is {object_id, event, timestamp in seconds, resource_url}: two real changes of one record within
-- one second, sent under two delivery ids, have the same body. Dropping the second as a copy of the first (0240)
-- lost the second change whenever the first had already been read. Now a body is unique only among the rows that
-- still wait (state 'queued'): a copy is dropped only while its twin waits (the read that one causes comes after
-- both changes), and a copy of a delivery already handled is stored and processed, its record read again
-- (src/db/deliveries.ts). A handler that moves the twin on while a copy is being inserted makes the insert wait for
-- its commit and then go in. The index holds only waiting rows, so it stays small however large the table grows.
DROP INDEX webhook_deliveries_digest;
CREATE UNIQUE INDEX webhook_deliveries_waiting_digest ON webhook_deliveries (connection_id, body_digest) WHERE state = 'queued';
