-- Channel changes get their feed id when their transaction commits, not when they are made (src/db/channel.ts).
-- A feed reader follows ids, so ids must become visible in order: writers serialise on an advisory lock from
-- taking an id to committing. Taken where the change was made, that lock was held through the rest of the drain's
-- transaction (its sync-log entries, pending fetches, commit): at 500 accounts a writer waited 32 ms on average
-- for it, 17 ms per merchant operation, and at 5,000 with one worker it held the stock lag. Now a change is
-- staged in its transaction (no lock), and a deferred trigger moves the transaction's staged changes into
-- channel_quantity_changes at commit, under the lock: it is held for that one move and the commit.
-- Unlogged: a staged row never outlives its transaction (moved before commit, gone with a rollback).
CREATE UNLOGGED TABLE channel_changes_staged (
  staged          bigserial PRIMARY KEY,
  at              timestamptz NOT NULL DEFAULT now(),
  connection_id   bigint NOT NULL,
  channel_id      bigint NOT NULL,
  variant_id      bigint NOT NULL,
  sku             text,
  before_quantity numeric,
  before_tracked  boolean,
  quantity        numeric,
  tracked         boolean NOT NULL,
  backorderable   boolean NOT NULL,
  listed          boolean NOT NULL,
  cause           text NOT NULL,
  delivery_id     text,
  delivery_row_id bigint,
  job_id          text,
  detail          jsonb
);

CREATE FUNCTION cs_publish_channel_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Fired once per staged row, in the order they were made; the first call of a transaction moves them all.
  IF NOT EXISTS (SELECT 1 FROM channel_changes_staged WHERE staged = NEW.staged) THEN
    RETURN NULL;
  END IF;
  PERFORM pg_advisory_xact_lock(727030);
  WITH moved AS (
    DELETE FROM channel_changes_staged WHERE staged >= NEW.staged RETURNING *
  ), published AS (
    INSERT INTO channel_quantity_changes (at, connection_id, channel_id, variant_id, sku, before_quantity, before_tracked,
      quantity, tracked, backorderable, listed, cause, delivery_id, delivery_row_id, job_id, detail)
    SELECT at, connection_id, channel_id, variant_id, sku, before_quantity, before_tracked,
      quantity, tracked, backorderable, listed, cause, delivery_id, delivery_row_id, job_id, detail
    FROM moved ORDER BY staged
    RETURNING id, channel_id, variant_id
  )
  UPDATE channel_quantities q SET last_change_id = p.id
  FROM (SELECT channel_id, variant_id, max(id) AS id FROM published GROUP BY channel_id, variant_id) AS p
  WHERE q.channel_id = p.channel_id AND q.variant_id = p.variant_id;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER channel_changes_publish AFTER INSERT ON channel_changes_staged
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION cs_publish_channel_changes();
