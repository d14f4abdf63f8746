-- Which jobs failed last, or keep being skipped, kept in a row per job by triggers on runs,
-- as SQLite's migration 0012 does (what each column is: cronduit/store/sql/schema.sql).
-- Applying a run reads only the job's row, so two daemons writing runs of one job at once
-- (each commits its runs whatever their seqs) both land: the second waits for the first's
-- row and applies its run to that row as the first left it. Counting a job's facts again
-- from runs (a run that held one of them changed or was deleted: cronduit never does
-- either) deletes the row first, so it waits for any other writer of it, and then reads the
-- runs anew.
CREATE TABLE job_run_facts (
    job            text PRIMARY KEY,
    newest_seq     bigint NOT NULL DEFAULT 0,
    second_seq     bigint NOT NULL DEFAULT 0,
    third_seq      bigint NOT NULL DEFAULT 0,
    unskipped_seq  bigint NOT NULL DEFAULT 0,
    last_seq       bigint NOT NULL DEFAULT 0,
    last_outcome   text
);
CREATE INDEX job_run_facts_by_last_outcome ON job_run_facts (last_outcome, job);
CREATE INDEX job_run_facts_skipping ON job_run_facts (job) WHERE newest_seq > unskipped_seq;

CREATE VIEW job_run_facts_counted AS
SELECT j.job,
    COALESCE((SELECT r.seq FROM runs AS r WHERE r.job = j.job
              ORDER BY r.seq DESC LIMIT 1), 0) AS newest_seq,
    COALESCE((SELECT r.seq FROM runs AS r WHERE r.job = j.job
              ORDER BY r.seq DESC LIMIT 1 OFFSET 1), 0) AS second_seq,
    COALESCE((SELECT r.seq FROM runs AS r WHERE r.job = j.job
              ORDER BY r.seq DESC LIMIT 1 OFFSET 2), 0) AS third_seq,
    COALESCE((SELECT r.seq FROM runs AS r WHERE r.job = j.job
              AND r.outcome IS DISTINCT FROM 'skipped'
              ORDER BY r.seq DESC LIMIT 1), 0) AS unskipped_seq,
    COALESCE(last.seq, 0) AS last_seq,
    last.outcome AS last_outcome
FROM (SELECT DISTINCT job FROM runs) AS j
LEFT JOIN LATERAL (SELECT r.seq, r.outcome FROM runs AS r WHERE r.job = j.job
                   AND r.state = 'ended' AND r.outcome IS DISTINCT FROM 'skipped'
                   ORDER BY r.seq DESC LIMIT 1) AS last ON true;

INSERT INTO job_run_facts SELECT * FROM job_run_facts_counted;

CREATE FUNCTION job_run_facts_recount(of_job text) RETURNS void LANGUAGE sql AS $$
    DELETE FROM job_run_facts WHERE job = of_job;
    INSERT INTO job_run_facts SELECT * FROM job_run_facts_counted WHERE job = of_job;
$$;

-- A new run: among the three newest if it is newer than the third, the newest not skipped
-- or the last counted if it is one and newer than the one held.
CREATE FUNCTION job_run_facts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_run_facts AS f (job, newest_seq, unskipped_seq, last_seq, last_outcome)
    VALUES (NEW.job, NEW.seq,
            CASE WHEN NEW.outcome IS DISTINCT FROM 'skipped' THEN NEW.seq ELSE 0 END,
            CASE WHEN NEW.state = 'ended' AND NEW.outcome IS DISTINCT FROM 'skipped'
                 THEN NEW.seq ELSE 0 END,
            CASE WHEN NEW.state = 'ended' AND NEW.outcome IS DISTINCT FROM 'skipped'
                 THEN NEW.outcome END)
    ON CONFLICT (job) DO UPDATE SET
        newest_seq = GREATEST(f.newest_seq, NEW.seq),
        second_seq = CASE WHEN NEW.seq > f.newest_seq THEN f.newest_seq
                          WHEN NEW.seq > f.second_seq THEN NEW.seq ELSE f.second_seq END,
        third_seq = CASE WHEN NEW.seq > f.second_seq THEN f.second_seq
                         WHEN NEW.seq > f.third_seq THEN NEW.seq ELSE f.third_seq END,
        unskipped_seq = GREATEST(f.unskipped_seq, EXCLUDED.unskipped_seq),
        last_outcome = CASE WHEN EXCLUDED.last_seq > f.last_seq THEN EXCLUDED.last_outcome
                            ELSE f.last_outcome END,
        last_seq = GREATEST(f.last_seq, EXCLUDED.last_seq);
    RETURN NULL;
END
$$;

-- A run ended (or changed state or outcome): the newest not skipped or the last counted if
-- it is one now; counted again from runs if it held one of those and no longer is one.
CREATE FUNCTION job_run_facts_ended() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    counted boolean := NEW.state = 'ended' AND NEW.outcome IS DISTINCT FROM 'skipped';
    stale boolean;
BEGIN
    UPDATE job_run_facts AS f SET
        unskipped_seq = CASE WHEN NEW.outcome IS DISTINCT FROM 'skipped'
                             THEN GREATEST(f.unskipped_seq, NEW.seq) ELSE f.unskipped_seq END,
        last_outcome = CASE WHEN counted AND NEW.seq >= f.last_seq THEN NEW.outcome
                            ELSE f.last_outcome END,
        last_seq = CASE WHEN counted THEN GREATEST(f.last_seq, NEW.seq) ELSE f.last_seq END
    WHERE f.job = NEW.job
    RETURNING (f.unskipped_seq = NEW.seq AND NEW.outcome IS NOT DISTINCT FROM 'skipped')
              OR (f.last_seq = NEW.seq AND NOT counted) INTO stale;
    IF stale OR NOT FOUND THEN
        PERFORM job_run_facts_recount(NEW.job);
    END IF;
    RETURN NULL;
END
$$;

-- A run moved to another job: both jobs' facts counted again from runs.
CREATE FUNCTION job_run_facts_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM job_run_facts_recount(OLD.job);
    PERFORM job_run_facts_recount(NEW.job);
    RETURN NULL;
END
$$;

-- A run deleted: its job's facts counted again from runs if it held one of them (read from
-- the row locked, as another writer left it).
CREATE FUNCTION job_run_facts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    held boolean;
BEGIN
    SELECT OLD.seq IN (f.newest_seq, f.second_seq, f.third_seq, f.unskipped_seq, f.last_seq)
    INTO held FROM job_run_facts AS f WHERE f.job = OLD.job FOR UPDATE;
    IF held OR NOT FOUND THEN
        PERFORM job_run_facts_recount(OLD.job);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER job_run_facts_inserted AFTER INSERT ON runs
    FOR EACH ROW EXECUTE FUNCTION job_run_facts_inserted();
CREATE TRIGGER job_run_facts_ended AFTER UPDATE OF state, outcome ON runs
    FOR EACH ROW WHEN (OLD.job = NEW.job AND (OLD.state IS DISTINCT FROM NEW.state
                                              OR OLD.outcome IS DISTINCT FROM NEW.outcome))
    EXECUTE FUNCTION job_run_facts_ended();
CREATE TRIGGER job_run_facts_moved AFTER UPDATE OF job ON runs
    FOR EACH ROW WHEN (OLD.job IS DISTINCT FROM NEW.job)
    EXECUTE FUNCTION job_run_facts_moved();
CREATE TRIGGER job_run_facts_deleted AFTER DELETE ON runs
    FOR EACH ROW EXECUTE FUNCTION job_run_facts_deleted();
