-- With read_as_of (0250, the service's clock no later than the read), the clock no earlier than it: the answer's
-- Date plus the second it rounds away (Raw.readBy). A read is provably earlier than the row's only when its read_by
-- is before the row's read_as_of; reads whose intervals overlap (within a second or so) are not ordered by time, and
-- the caller's rule decides (src/db/mirror.ts).
ALTER TABLE products ADD COLUMN read_by timestamptz;
