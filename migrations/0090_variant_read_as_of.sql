-- When a drain last read each variant, on the service's clock: the answer's Date header less the round trip
-- (src/api/transport.ts, Raw.asOf), so never later than the service read it. A late delivery whose event is
-- older than that by a second is already shown and needs no read, even where the variant's updated_at does not
-- move with stock (the documented service). Not a mirror column: a read that changed nothing still sets it.
ALTER TABLE variants ADD COLUMN read_as_of timestamptz;
