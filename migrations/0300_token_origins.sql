-- A token can't outlive the right it was made with (src/console/auth.ts). Each token now says where that right
-- came from, and is checked against it at every use:
--   person       made by a person signed in (or by a token of theirs): acts in the lower of its role and the
--                person's role now; a person refused at their latest sign-in (disabled_at) or removed: none.
--   break-glass  made with OPERATOR_TOKEN: lives while that token does (operator_mac, as the console sessions).
--   cli          made at this machine's shell, by someone who holds the database.
--   unknown      made before this migration where the origin cannot be told: never admitted again.
-- A token made by a token (parent_id) inherits its origin, expires no later than its parent and is revoked with it.
-- The open demo console makes no tokens: the ones it made before are revoked here.
ALTER TABLE people ADD COLUMN disabled_at timestamptz;

ALTER TABLE api_tokens
  ADD COLUMN made_by text NOT NULL DEFAULT 'unknown' CHECK (made_by IN ('person', 'break-glass', 'cli', 'unknown')),
  ADD COLUMN person_id bigint REFERENCES people (id) ON DELETE CASCADE,
  ADD COLUMN operator_mac text,
  ADD COLUMN parent_id bigint REFERENCES api_tokens (id) ON DELETE CASCADE;
CREATE INDEX api_tokens_parent ON api_tokens (parent_id) WHERE parent_id IS NOT NULL;

-- Tokens a person made (named by their e-mail) and tokens made at the shell keep working; every other token
-- (the demo's, the break-glass token's, a token's child) had no recorded origin to check, so it ends now.
UPDATE api_tokens t SET made_by = 'person', person_id = p.id FROM people p WHERE t.person = p.email;
UPDATE api_tokens SET made_by = 'cli' WHERE made_by = 'unknown' AND person LIKE 'cli:%';
UPDATE api_tokens SET revoked_at = now() WHERE made_by = 'unknown' AND revoked_at IS NULL;
ALTER TABLE api_tokens ALTER COLUMN made_by DROP DEFAULT;
