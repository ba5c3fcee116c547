-- API client (src/api/): token lifetime for refresh-ahead, and the shared rate budget's bookkeeping.

-- When the current access token was issued: with token_expires_at it gives the lifetime, so a short-lived
-- token is refreshed a proportionate time ahead of expiry.
ALTER TABLE connections ADD COLUMN token_refreshed_at timestamptz;

-- remaining: the lowest X-Rate-Limit-Remaining the service reported in the current window (or the limit
-- after a reset); reset_known: reset_at came from the service and has not passed yet.
ALTER TABLE api_budgets
  ADD COLUMN reset_known boolean NOT NULL DEFAULT false,
  ADD COLUMN requests_total bigint NOT NULL DEFAULT 0;

-- One row per request sent and not yet answered, by any process. A lease of a crashed process expires
-- instead of shrinking the budget for good. api_budgets.in_flight mirrors the live count.
CREATE TABLE api_budget_leases (
  id            bigserial PRIMARY KEY,
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  rank          smallint NOT NULL,
  expires_at    timestamptz NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_budget_leases_connection ON api_budget_leases (connection_id, expires_at);

-- Processes waiting for a slot, with the best priority rank each waits with (0 interactive/outbound,
-- 1 webhook, 2 reconcile). A slot goes to a lower rank only while no live waiter of a better rank exists.
CREATE TABLE api_budget_waiters (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  waiter        text NOT NULL,
  rank          smallint NOT NULL,
  expires_at    timestamptz NOT NULL,
  PRIMARY KEY (connection_id, waiter)
);
