-- The address a connection's webhooks were last subscribed at, so the scheduled check (the service deletes a
-- subscription after 3 days of failed deliveries) repairs them at the same place from a worker process, which
-- does not know the receiver's public URL.
ALTER TABLE connections ADD COLUMN webhook_address text;
