-- Operators by name (src/console/auth.ts): people who sign in through the company's OpenID provider, with the
-- role their group claim maps to, and personal API tokens for scripts and the CLI. A token is shown once; only its
-- SHA-256 is kept (a copy of this table opens nothing); it names the person it acts for and its role, expires, and
-- can be revoked. OPERATOR_TOKEN stays as the break-glass administrator.
CREATE TABLE people (
  id           bigserial PRIMARY KEY,
  subject      text NOT NULL UNIQUE,
  email        text NOT NULL,
  name         text,
  role         text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz
);

CREATE TABLE api_tokens (
  id           bigserial PRIMARY KEY,
  name         text NOT NULL,
  person       text NOT NULL,
  role         text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
  digest       text NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  revoked_at   timestamptz,
  last_used_at timestamptz
);

-- A console session is the break-glass token's (token_mac) or a person's (person_id and the role of the sign-in).
ALTER TABLE console_sessions
  ALTER COLUMN token_mac DROP NOT NULL,
  ADD COLUMN person_id bigint REFERENCES people (id) ON DELETE CASCADE,
  ADD COLUMN role text;
