-- A connection whose service answers for another account than the one its mirror was made from (same id, another
-- creation time: an account restored or reset, a sandbox started anew) stops as 'mismatched' (src/sync/account.ts)
-- until `commerce-sync reset-mirror` starts its mirror afresh. The expand step of the migration rule: the previous
-- release never writes the new value, and reads it as it reads any status but 'active': its requests stop.
ALTER TABLE connections DROP CONSTRAINT connections_status_check;
-- compatible: the previous release writes only the four values that this allows too
ALTER TABLE connections ADD CONSTRAINT connections_status_check
  CHECK (status IN ('active', 'unauthorized', 'lapsed', 'disabled', 'mismatched'));
