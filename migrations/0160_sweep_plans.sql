-- When each connection's next incremental sweep is due (issue 29). One maintenance task a minute asks for the sweeps
-- that are due, where every connection had two pg-boss schedules (5,000 accounts: 10,000 crons evaluated every
-- half minute). interval_minutes starts at RECONCILE_INTERVAL_MINUTES and doubles after each sweep that found no
-- drift while the connection's webhooks are in place, up to RECONCILE_MAX_INTERVAL_MINUTES; drift sets it back.
-- requested_at: when its last sweep was asked for (deliveries received after it, then none for a while, make the
-- next sweep due at once: the webhooks may have stopped). swept_at: when its last sweep ended; a connection whose
-- sweep was asked for and has not run yet is not asked again (until an hour has passed: a lost job), so the queue
-- never holds more than one incremental sweep per connection however far behind the workers are.
-- webhooks_checked_at: its last subscription check.
CREATE TABLE sweep_plans (
  connection_id       bigint PRIMARY KEY REFERENCES connections (id) ON DELETE CASCADE,
  interval_minutes    integer NOT NULL,
  due_at              timestamptz NOT NULL,
  requested_at        timestamptz NOT NULL DEFAULT now(),
  swept_at            timestamptz NOT NULL DEFAULT now(),
  quiet_sweeps        integer NOT NULL DEFAULT 0,
  webhooks_checked_at timestamptz
);
