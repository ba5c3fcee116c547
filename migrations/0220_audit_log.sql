-- Every change a person makes through the console, the API or the CLI (src/console/audit.ts): who (the actor and
-- role the request was let in as), what, on which connection and record, when, from where, and the values before
-- and after. Append-only: nothing updates a row, and only retention (AUDIT_RETENTION_DAYS) deletes.
CREATE TABLE audit_log (
  id            bigserial PRIMARY KEY,
  at            timestamptz NOT NULL DEFAULT now(),
  actor         text NOT NULL,
  role          text NOT NULL,
  action        text NOT NULL,
  connection_id bigint,
  connection    text,
  target        text,
  before        jsonb,
  after         jsonb,
  source        text NOT NULL CHECK (source IN ('console', 'api', 'cli')),
  address       text
);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_actor ON audit_log (actor, id);
