-- Outbound operations (src/push/): what an operator or a channel asked to change on the service, its state,
-- the service's answer, and the idempotency key every attempt reuses.
CREATE TABLE push_operations (
  id              bigserial PRIMARY KEY,
  connection_id   bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  kind            text NOT NULL CHECK (kind IN ('import-order', 'ship', 'invoice', 'pay', 'void', 'return',
                    'receive-purchase-order', 'stock-count')),
  input           jsonb NOT NULL,
  state           text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'sent', 'confirmed', 'failed')),
  reason          text,                   -- why it failed (or the last retryable error while still sent)
  field_errors    jsonb,                  -- the service's per-field messages of a 422
  status_code     integer,                -- HTTP status of the failing answer, when there was one
  request_id      text,                   -- X-Request-ID of the last answer that mattered
  idempotency_key text NOT NULL,          -- base key; each request of the operation derives its own from it
  plan            jsonb,                  -- requests computed once (resolved SKUs, stock differences), resent as-is
  result          jsonb,                  -- created ids, what changed; partial progress while sent
  order_key       text NOT NULL,          -- operations sharing it run one at a time, in id order
  attempts        integer NOT NULL DEFAULT 0,
  locked_until    timestamptz,            -- a worker holds the operation until then
  job_id          text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  sent_at         timestamptz,
  finished_at     timestamptz
);
CREATE INDEX push_operations_created ON push_operations (created_at DESC);
CREATE INDEX push_operations_state ON push_operations (state, created_at DESC);
CREATE INDEX push_operations_unfinished ON push_operations (connection_id, order_key, id)
  WHERE state IN ('queued', 'sent');

-- A channel order imported once: (connection, channel, channel order id) -> the service's order id.
CREATE TABLE channel_orders (
  connection_id    bigint NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  channel          text NOT NULL,
  channel_order_id text NOT NULL,
  order_id         bigint NOT NULL,
  operation_id     bigint REFERENCES push_operations (id) ON DELETE SET NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, channel, channel_order_id)
);
CREATE INDEX channel_orders_order ON channel_orders (connection_id, order_id);
