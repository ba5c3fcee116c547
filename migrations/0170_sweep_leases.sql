-- Who is sweeping a connection, and until when (src/db/locks.ts withSweepLock). One sweep per connection at a time
-- across every process, as the session advisory lock it replaces gave, but a sweep waiting on the API now holds no
-- database connection: the reconcile queue's slots are no longer capped by the pool (issue 29: the first sweeps of
-- 5,000 accounts took 42 minutes with four). A holder renews its lease while it sweeps; one that died leaves a lease
-- that runs out within `until`, and the next sweep takes it over.
CREATE TABLE sweep_leases (
  connection_id bigint PRIMARY KEY REFERENCES connections (id) ON DELETE CASCADE,
  holder        text NOT NULL,
  until         timestamptz NOT NULL
);
