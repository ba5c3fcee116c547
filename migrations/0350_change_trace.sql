-- A channel's change and order event keep the trace context of the work that made them (the drain's mirror write,
-- or the push operation whose outcome it is): the POST that carries them continues that trace, so a delivery, its
-- drain, the drain's API read, the mirror write and the POST are one trace even when one drain coalesced the moves
-- of five deliveries. Until now a change pointed only at the newest delivery behind it, whose trace could hold the
-- receiver's spans alone. Null when not traced, and on rows made before: those fall back to their delivery's.
ALTER TABLE channel_changes_staged ADD COLUMN traceparent text;
ALTER TABLE channel_quantity_changes ADD COLUMN traceparent text;
ALTER TABLE channel_order_events ADD COLUMN traceparent text;

CREATE OR REPLACE FUNCTION cs_publish_channel_changes() RETURNS trigger LANGUAGE plpgsql AS $$
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
      quantity, tracked, backorderable, listed, cause, delivery_id, delivery_row_id, job_id, detail, traceparent)
    SELECT at, connection_id, channel_id, variant_id, sku, before_quantity, before_tracked,
      quantity, tracked, backorderable, listed, cause, delivery_id, delivery_row_id, job_id, detail, traceparent
    FROM moved ORDER BY staged
    RETURNING id, channel_id, variant_id
  )
  UPDATE channel_quantities q SET last_change_id = p.id
  FROM (SELECT channel_id, variant_id, max(id) AS id FROM published GROUP BY channel_id, variant_id) AS p
  WHERE q.channel_id = p.channel_id AND q.variant_id = p.variant_id;
  RETURN NULL;
END $$;
