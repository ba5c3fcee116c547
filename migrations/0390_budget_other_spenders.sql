-- The rate at which other clients of the same application spend the connection's quota (real-service-notes section
-- 7), measured from the service's own counts (src/api/budget.ts, applyAnswer): the drop of X-Rate-Limit-Remaining
-- between two of our answers, less our own requests counted in between, over the time between them. The budget
-- plans with it how much of what is left a count that has grown old is still worth (expectedRemaining).
--   others_rate: requests a second the others spent at the last measurement (NULL: not measured yet);
--   sample_remaining, sample_at: the count the current measurement runs from, and when it was heard (NULL: none);
--   sample_own: our answers counted below sample_remaining since.
-- The expand step of the migration rule: the previous release neither reads nor writes them. Its answers during an
-- upgrade are not in sample_own, so the others' rate measured then is at most a few requests too high.
ALTER TABLE api_budgets
  ADD COLUMN others_rate double precision,
  ADD COLUMN sample_remaining integer,
  ADD COLUMN sample_at timestamptz,
  ADD COLUMN sample_own integer NOT NULL DEFAULT 0;
