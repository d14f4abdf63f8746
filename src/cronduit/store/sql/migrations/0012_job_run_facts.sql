-- Which of 10,000 jobs failed last, or keep being skipped (the dashboard's state filters, the
-- API's healthy), was read from every job's newest runs at each request: 15 ms for 10,000
-- jobs and a million runs. Those facts are now kept in a row per job, as runs are inserted,
-- end, or (by hand: cronduit never does) are deleted or moved, by triggers on runs, so that
-- whatever writes a run keeps them; a filter reads the rows that qualify from an index.
-- A row holds seqs rather than a count of skips, so that applying a run is the same whatever
-- order runs arrive in (PostgreSQL's daemons commit runs out of seq order): the job's three
-- newest runs (cronduit.core.status.SKIPS_IN_A_ROW), its newest run that was not skipped,
-- and its last counted run (the newest that ended and was not skipped) with its outcome;
-- 0 where there is none. Its newest three runs were all skipped when third_seq >
-- unskipped_seq. job_run_facts_counted is the same facts counted from runs: the definition
-- the rows are filled from here, counted again from when a run that held a fact no longer
-- qualifies for it, and held to by the tests.
CREATE TABLE job_run_facts (
    job            TEXT PRIMARY KEY,
    newest_seq     INTEGER NOT NULL DEFAULT 0,
    second_seq     INTEGER NOT NULL DEFAULT 0,
    third_seq      INTEGER NOT NULL DEFAULT 0,
    unskipped_seq  INTEGER NOT NULL DEFAULT 0,
    last_seq       INTEGER NOT NULL DEFAULT 0,
    last_outcome   TEXT
);
CREATE INDEX job_run_facts_by_last_outcome ON job_run_facts (last_outcome, job);
CREATE INDEX job_run_facts_skipping ON job_run_facts (job) WHERE newest_seq > unskipped_seq;

CREATE VIEW job_run_facts_counted AS
SELECT j.job AS job,
    COALESCE((SELECT r.seq FROM runs AS r INDEXED BY runs_by_job WHERE r.job = j.job
              ORDER BY r.seq DESC LIMIT 1), 0) AS newest_seq,
    COALESCE((SELECT r.seq FROM runs AS r INDEXED BY runs_by_job WHERE r.job = j.job
              ORDER BY r.seq DESC LIMIT 1 OFFSET 1), 0) AS second_seq,
    COALESCE((SELECT r.seq FROM runs AS r INDEXED BY runs_by_job WHERE r.job = j.job
              ORDER BY r.seq DESC LIMIT 1 OFFSET 2), 0) AS third_seq,
    COALESCE((SELECT r.seq FROM runs AS r INDEXED BY runs_by_job WHERE r.job = j.job
              AND r.outcome IS NOT 'skipped' ORDER BY r.seq DESC LIMIT 1), 0) AS unskipped_seq,
    COALESCE((SELECT r.seq FROM runs AS r INDEXED BY runs_by_job WHERE r.job = j.job
              AND r.state = 'ended' AND r.outcome IS NOT 'skipped'
              ORDER BY r.seq DESC LIMIT 1), 0) AS last_seq,
    (SELECT r.outcome FROM runs AS r INDEXED BY runs_by_job WHERE r.job = j.job
     AND r.state = 'ended' AND r.outcome IS NOT 'skipped'
     ORDER BY r.seq DESC LIMIT 1) AS last_outcome
FROM (SELECT DISTINCT job FROM runs) AS j;

INSERT INTO job_run_facts SELECT * FROM job_run_facts_counted;

-- A new run: among the three newest if it is newer than the third, the newest not skipped
-- or the last counted if it is one and newer than the one held. (An upsert costs half as
-- much again as these two statements.)
CREATE TRIGGER job_run_facts_inserted AFTER INSERT ON runs
BEGIN
    INSERT OR IGNORE INTO job_run_facts (job) VALUES (NEW.job);
    UPDATE job_run_facts SET
        newest_seq = max(newest_seq, NEW.seq),
        second_seq = CASE WHEN NEW.seq > newest_seq THEN newest_seq
                          WHEN NEW.seq > second_seq THEN NEW.seq ELSE second_seq END,
        third_seq = CASE WHEN NEW.seq > second_seq THEN second_seq
                         WHEN NEW.seq > third_seq THEN NEW.seq ELSE third_seq END,
        unskipped_seq = CASE WHEN NEW.outcome IS NOT 'skipped'
                             THEN max(unskipped_seq, NEW.seq) ELSE unskipped_seq END,
        last_outcome = CASE WHEN NEW.state = 'ended' AND NEW.outcome IS NOT 'skipped'
                                 AND NEW.seq > last_seq THEN NEW.outcome ELSE last_outcome END,
        last_seq = CASE WHEN NEW.state = 'ended' AND NEW.outcome IS NOT 'skipped'
                        THEN max(last_seq, NEW.seq) ELSE last_seq END
    WHERE job = NEW.job;
END;

-- A run ended (or changed state or outcome) and may now be the newest not skipped or the
-- last counted: as a new run would be, without a place among the newest.
CREATE TRIGGER job_run_facts_ended AFTER UPDATE OF state, outcome ON runs
WHEN OLD.job = NEW.job AND (OLD.state IS NOT NEW.state OR OLD.outcome IS NOT NEW.outcome)
    AND NOT (OLD.outcome IS NOT 'skipped' AND NEW.outcome IS 'skipped')
    AND NOT (OLD.state = 'ended' AND OLD.outcome IS NOT 'skipped'
             AND NOT (NEW.state = 'ended' AND NEW.outcome IS OLD.outcome))
BEGIN
    UPDATE job_run_facts SET
        unskipped_seq = CASE WHEN NEW.outcome IS NOT 'skipped'
                             THEN max(unskipped_seq, NEW.seq) ELSE unskipped_seq END,
        last_outcome = CASE WHEN NEW.state = 'ended' AND NEW.outcome IS NOT 'skipped'
                                 AND NEW.seq >= last_seq THEN NEW.outcome ELSE last_outcome END,
        last_seq = CASE WHEN NEW.state = 'ended' AND NEW.outcome IS NOT 'skipped'
                        THEN max(last_seq, NEW.seq) ELSE last_seq END
    WHERE job = NEW.job;
END;

-- A run that may have held a fact it no longer qualifies for (it is skipped now, or was
-- counted and is not, or not with that outcome; cronduit never does either): its job's
-- facts counted again from runs.
CREATE TRIGGER job_run_facts_uncounted AFTER UPDATE OF state, outcome ON runs
WHEN OLD.job = NEW.job
    AND ((OLD.outcome IS NOT 'skipped' AND NEW.outcome IS 'skipped')
         OR (OLD.state = 'ended' AND OLD.outcome IS NOT 'skipped'
             AND NOT (NEW.state = 'ended' AND NEW.outcome IS OLD.outcome)))
BEGIN
    DELETE FROM job_run_facts WHERE job = NEW.job;
    INSERT INTO job_run_facts SELECT * FROM job_run_facts_counted WHERE job = NEW.job;
END;

-- A run moved to another job: both jobs' facts counted again from runs.
CREATE TRIGGER job_run_facts_moved AFTER UPDATE OF job ON runs
WHEN OLD.job IS NOT NEW.job
BEGIN
    DELETE FROM job_run_facts WHERE job = OLD.job OR job = NEW.job;
    INSERT INTO job_run_facts SELECT * FROM job_run_facts_counted
        WHERE job = OLD.job OR job = NEW.job;
END;

-- A run deleted: its job's facts counted again from runs if it held one of them.
CREATE TRIGGER job_run_facts_deleted AFTER DELETE ON runs
BEGIN
    DELETE FROM job_run_facts WHERE job = OLD.job
        AND OLD.seq IN (newest_seq, second_seq, third_seq, unskipped_seq, last_seq);
    INSERT INTO job_run_facts SELECT * FROM job_run_facts_counted WHERE job = OLD.job
        AND NOT EXISTS (SELECT 1 FROM job_run_facts AS f WHERE f.job = OLD.job);
END;
