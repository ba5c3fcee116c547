-- How a channel destination's POSTs go (POSTs failed in a row, failing since, the last attempt and its answer, the
-- host it went to) moves onto its row in channel_destinations: one table and one store (src/db/channel-destinations.ts)
-- instead of outbound_destinations (0120) joined on the name `channel:<id>`. Nothing else ever wrote there: since 0140
-- CHANNEL_WEBHOOK_URL is the `default` channel's destination, and ALERT_WEBHOOK_URL's sends are kept on the alerts
-- themselves. A row whose channel has no destination now (removed with its channel, or `channel`, the setting's row
-- before 0140) is not copied: it describes nothing that is still sent to.
ALTER TABLE channel_destinations
  ADD COLUMN host            text,
  ADD COLUMN failures        integer NOT NULL DEFAULT 0,
  ADD COLUMN failing_since   timestamptz,
  ADD COLUMN last_attempt_at timestamptz,
  ADD COLUMN last_status     integer,
  ADD COLUMN last_error      text,
  ADD COLUMN last_success_at timestamptz;

UPDATE channel_destinations d
   SET host = o.host, failures = o.failures, failing_since = o.failing_since, last_attempt_at = o.last_attempt_at,
       last_status = o.last_status, last_error = o.last_error, last_success_at = o.last_success_at
  FROM outbound_destinations o
 WHERE o.name = 'channel:' || d.channel_id;

DROP TABLE outbound_destinations;
