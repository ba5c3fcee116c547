-- A product's quantity sums its variants' stock, which moves without moving the product's updated_at: at the same
-- updated_at, a drain's read and a sweep's page can only be told apart by when each was answered (Raw.asOf, the
-- service's clock). Each write keeps its read's time, and an earlier read never replaces a later one
-- (src/db/mirror.ts, ResourceSpec.readTimes). Rows from before have none: their first read wins.
ALTER TABLE products ADD COLUMN read_as_of timestamptz;
