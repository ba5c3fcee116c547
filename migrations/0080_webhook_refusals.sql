-- Webhook subscriptions a connection's service refused (a service that knows only the spec's eight events
-- answers 422 for the documented others). Kept per connection in the database, not per process, so a new worker
-- or receiver process does not ask the service again for every refused event at its first check. A refusal is
-- asked again once it is a day old, when the operator runs `webhooks sync`, or when the connection's service URL
-- changed (base_url is the URL that refused).
CREATE TABLE webhook_refusals (
  connection_id bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  event         text NOT NULL,
  base_url      text NOT NULL,
  reason        text,
  refused_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, event)
);
