-- Alerts (src/alerts/, docs/alerts.md): conditions a person must act on, opened and resolved by the worker's
-- evaluator, shown by the console and `status`, and sent once on opening and once on resolving to ALERT_WEBHOOK_URL.
-- Statements: src/db/alerts.ts.

-- One row per alert. key = condition + subject (`signature:shop`, `dead-letters:fetch-dead`); at most one open
-- alert per key. A key that comes back within ALERT_QUIET_SECONDS of resolving reopens its row (resolved_at back to
-- NULL) rather than opening a new one, so a flapping condition sends nothing more.
CREATE TABLE alerts (
  id                   bigserial PRIMARY KEY,
  key                  text NOT NULL,
  condition            text NOT NULL,
  connection_id        bigint REFERENCES connections (id) ON DELETE SET NULL,
  severity             text NOT NULL CHECK (severity IN ('critical', 'warning')),
  message              text NOT NULL,
  count                bigint NOT NULL DEFAULT 1,
  opened_at            timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  resolved_at          timestamptz,
  reopened             integer NOT NULL DEFAULT 0,
  -- Notifications: each is claimed (notify_claimed_until) by one process, sent, then marked; a failed send waits
  -- until notify_next_at (backoff) and says why in notify_error.
  notified_open_at     timestamptz,
  notified_resolved_at timestamptz,
  notify_attempts      integer NOT NULL DEFAULT 0,
  notify_next_at       timestamptz,
  notify_claimed_until timestamptz,
  notify_error         text
);
CREATE UNIQUE INDEX alerts_open_key ON alerts (key) WHERE resolved_at IS NULL;
CREATE INDEX alerts_key_resolved ON alerts (key, resolved_at DESC);
CREATE INDEX alerts_unsent ON alerts (opened_at) WHERE notified_open_at IS NULL OR notified_resolved_at IS NULL;

-- Deliveries the receiver refused, counted per connection name (as the URL named it), reason and minute. The
-- receiver refuses before any database work (a forged request must cost nothing there), so each process adds up
-- its refusals in memory and writes them every few seconds: one statement per flush however many were refused.
CREATE TABLE delivery_rejections (
  connection_name text NOT NULL,
  reason          text NOT NULL,
  minute          timestamptz NOT NULL,
  count           bigint NOT NULL,
  last_at         timestamptz NOT NULL,
  PRIMARY KEY (connection_name, reason, minute)
);
CREATE INDEX delivery_rejections_minute ON delivery_rejections (minute);

-- Outbound destinations (today the channel POSTs to CHANNEL_WEBHOOK_URL, name `channel`): the outcome of the latest
-- POST and how many failed in a row, for the `destination` alert, the console and `status`.
CREATE TABLE outbound_destinations (
  name            text PRIMARY KEY,
  host            text NOT NULL,
  failures        integer NOT NULL DEFAULT 0,
  failing_since   timestamptz,
  last_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_status     integer,
  last_error      text,
  last_success_at timestamptz
);

-- The webhook-subscription alert looks for recent repairs; without this the look would scan the sync log.
CREATE INDEX sync_log_webhook_repairs ON sync_log (connection_id, at DESC) WHERE action = 'webhooks.repaired';
