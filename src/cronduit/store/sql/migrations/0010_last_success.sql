-- The metrics' job_last_success gauge reads each job's newest success every few seconds:
-- an index of successes by job and end, so that is one look-up per job, however many runs
-- its history holds. A new index only: no row changes.
CREATE INDEX runs_last_success ON runs (job, finished_at)
    WHERE outcome = 'success' AND finished_at IS NOT NULL;
