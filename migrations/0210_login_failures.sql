-- Wrong operator tokens per client address (src/console/auth.ts), shared by every process serving the console or
-- /api, so a guesser cannot spread its tries over the processes behind a load balancer. Rows older than the
-- 15-minute window are deleted as new ones come.
CREATE UNLOGGED TABLE login_failures (
  address text NOT NULL,
  at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX login_failures_address ON login_failures (address, at);
CREATE INDEX login_failures_at ON login_failures (at);
