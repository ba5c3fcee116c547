-- Deliveries to channels (issue 26): a channel may have a destination URL to which its quantity changes are
-- POSTed, signed per Standard Webhooks, in order, several per POST, driven by a cursor over the channel's changes
-- (src/jobs/channel-delivery.ts). One row per channel with a destination.
--   secrets        `whsec_` secrets, current first, encrypted like tokens (TOKEN_ENCRYPTION_KEY); several while
--                  a secret rotates (every one signs)
--   cursor         the last change id the destination has acknowledged (2xx): nothing at or before it is sent again
--   batch_through  the last change id of the POST in flight or being retried: a retry sends the same changes under
--                  the same webhook-id, so the receiver can deduplicate; NULL when none is in flight
--   claimed_until  one sender at a time per channel, whichever worker: a lease
--   paused_at      paused (by an operator, or after failing CHANNEL_DELIVERY_PAUSE_MINUTES in a row) with a reason;
--                  nothing is sent until resumed, and nothing is lost: the cursor stays
-- How each POST went (failing since, last answer) is in outbound_destinations under `channel:<id>`.
CREATE TABLE channel_destinations (
  channel_id     bigint PRIMARY KEY REFERENCES channels (id) ON DELETE CASCADE,
  url            text NOT NULL,
  secrets        text NOT NULL,
  cursor         bigint NOT NULL DEFAULT 0,
  batch_through  bigint,
  claimed_until  timestamptz,
  next_attempt_at timestamptz,
  paused_at      timestamptz,
  paused_reason  text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);

-- The recent POSTs of each destination, for the console (kept as long as the sync log).
CREATE TABLE channel_posts (
  id             bigserial PRIMARY KEY,
  channel_id     bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
  webhook_id     text NOT NULL,
  first_change   bigint NOT NULL,
  last_change    bigint NOT NULL,
  changes        integer NOT NULL,
  ok             boolean NOT NULL,
  status         integer,
  error          text,
  attempts       integer NOT NULL,
  ms             integer NOT NULL,
  at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX channel_posts_channel ON channel_posts (channel_id, id);
CREATE INDEX channel_posts_at ON channel_posts (at);
