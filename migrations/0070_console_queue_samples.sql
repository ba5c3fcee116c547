-- Console: the minute samples also keep how many jobs wait in the work queues (all queues, dead letters
-- excluded), so the overview can chart queue depth over time and not only its value now.
ALTER TABLE console_samples ADD COLUMN queued_jobs integer NOT NULL DEFAULT 0;
