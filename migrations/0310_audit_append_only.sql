-- The audit log (0220) is append-only by rule of the database now, not only by convention: a bug or an SQL
-- injection elsewhere cannot rewrite who did what.
--   UPDATE and TRUNCATE are refused, always.
--   DELETE is refused unless the entry is older than the cut-off retention names for its own transaction
--   (set_config('commerce_sync.audit_cutoff', ..., true) in pruneAudit, src/db/audit.ts), and older than a day
--   whatever that says (AUDIT_RETENTION_DAYS is at least 1).
-- What this does not stop, honestly:
--   - Anything that can run statements of its own as our role. The role owns the table (it ran this migration), so
--     it can drop or disable the trigger, and a superuser (the embedded PostgreSQL's role) can skip triggers with
--     session_replication_role = replica. Revoking UPDATE and DELETE would not help either: an owner grants them
--     back to itself. Stopping that takes two roles: the table owned by one, the application connecting as
--     another that may only INSERT and SELECT it, with retention a SECURITY DEFINER function of the owner.
--   - An injection into an expression of one of our statements: it can call set_config itself, and then delete
--     the entries older than a day. The last day's entries it cannot touch, nor change any entry.
CREATE FUNCTION cs_audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF OLD.at < nullif(current_setting('commerce_sync.audit_cutoff', true), '')::timestamptz
       AND OLD.at < now() - interval '1 day' THEN
      RETURN OLD;
    END IF;
  END IF;
  RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP
    USING ERRCODE = 'insufficient_privilege',
          HINT = 'Entries are never changed; only retention (AUDIT_RETENTION_DAYS) deletes, and only old ones.';
END $$;

CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION cs_audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION cs_audit_log_append_only();
