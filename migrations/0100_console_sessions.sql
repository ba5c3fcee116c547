-- Operator sessions of the console's login form (decided in src/console/auth.ts, stored by src/db/sessions.ts).
-- The cookie holds a random secret; only its SHA-256 is kept here, so a copy of this table opens no session.
-- token_mac ties a session to the OPERATOR_TOKEN it was opened with (an HMAC keyed by the token): a new token
-- ends every session. Logout deletes the row; expired rows are deleted at the next login.
CREATE TABLE console_sessions (
  id         text PRIMARY KEY,
  token_mac  text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX console_sessions_expires_at ON console_sessions (expires_at);
