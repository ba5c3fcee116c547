-- A deliveries job that has not started yet, per connection (src/db/deliveries.ts): while one waits, the receiver
-- attaches new rows to it (webhook_deliveries.job_id) instead of inserting another pg-boss job. The handler deletes the
-- row before it reads the job's rows (under a lock the receiver's transactions share), so nothing attaches to a job
-- that has started. A row the handler never got to (a job failed by the supervisor) is no longer attached to once it
-- is WAIT_SECONDS old, and retention deletes it.
CREATE TABLE delivery_waits (
  job_id        text PRIMARY KEY,
  connection_id bigint NOT NULL,
  since         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX delivery_waits_connection ON delivery_waits (connection_id, since DESC);

-- A job's rows are now found by its id (the job no longer lists them: rows are attached after it was made).
CREATE INDEX webhook_deliveries_job ON webhook_deliveries (job_id) WHERE job_id IS NOT NULL;
