-- A connection's webhook subscriptions as the service listed them at its latest subscription sync or check
-- (src/receiver/subscriptions.ts): the console shows these instead of asking the service at each page view, which
-- spent the merchant's rate budget on every look.
ALTER TABLE connections
  ADD COLUMN webhooks jsonb,
  ADD COLUMN webhooks_read_at timestamptz;
