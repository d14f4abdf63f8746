-- Due timers are read in (due_at, job) order; an index in that order reads a batch without
-- sorting every due timer first.
DROP INDEX timers_due;
CREATE INDEX timers_due ON timers (due_at, job);
