-- Which jobs failed last, or keep being skipped, kept per job by triggers on runs, as
-- SQLite's migration 0012 does (what each column is: cronduit/store/sql/schema.sql).
-- Daemons write runs of one job at once, each batch in its own order: a row per job that
-- every writer updated made them wait for each other and deadlock (two batches, two jobs,
-- each holding one). So a writer never waits for another here: each change of a run is
-- added to job_run_facts_changes (an insert, which nothing waits for), and folded into the
-- job's row by whichever writer holds the job's advisory lock, taken only when it is free.
-- A change no writer folded yet waits in job_run_facts_changes for the job's next writer;
-- the reads fold it in themselves (job_run_facts_now). Folding is the same in any order:
-- the three newest of all the seqs, the greatest seq not skipped and last counted. Only a
-- change that takes a fact back (a run that held one and no longer qualifies, or is
-- deleted or moved: cronduit never does either) waits for the job's lock, to count the
-- job's facts again from its runs.
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

-- The same columns, several rows a job (no key): changes not folded into its row yet.
CREATE TABLE job_run_facts_changes (LIKE job_run_facts INCLUDING DEFAULTS);
CREATE INDEX job_run_facts_changes_by_job ON job_run_facts_changes (job);

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

-- Each job's facts with the changes not folded yet folded in.
CREATE VIEW job_run_facts_now AS
WITH kept AS NOT MATERIALIZED (
    SELECT * FROM job_run_facts UNION ALL SELECT * FROM job_run_facts_changes)
SELECT j.job,
    COALESCE(newest.seqs[1], 0) AS newest_seq,
    COALESCE(newest.seqs[2], 0) AS second_seq,
    COALESCE(newest.seqs[3], 0) AS third_seq,
    most.unskipped_seq, most.last_seq, most.last_outcome
FROM (SELECT DISTINCT job FROM kept) AS j
CROSS JOIN LATERAL (
    SELECT array_agg(v.seq ORDER BY v.seq DESC) AS seqs
    FROM kept AS k, LATERAL (VALUES (k.newest_seq), (k.second_seq), (k.third_seq)) AS v(seq)
    WHERE k.job = j.job AND v.seq > 0) AS newest
CROSS JOIN LATERAL (
    SELECT max(k.unskipped_seq) AS unskipped_seq, max(k.last_seq) AS last_seq,
           (array_agg(k.last_outcome ORDER BY k.last_seq DESC))[1] AS last_outcome
    FROM kept AS k WHERE k.job = j.job) AS most;

-- The job's row made anew, its changes deleted in the same statement (so those it deletes
-- are those it read): from its row and changes folded, or counted again ``from_runs``.
CREATE FUNCTION job_run_facts_put(of_job text, from_runs boolean) RETURNS void
LANGUAGE sql AS $$
    WITH folded AS (DELETE FROM job_run_facts_changes WHERE job = of_job)
    INSERT INTO job_run_facts
    SELECT * FROM job_run_facts_now WHERE NOT from_runs AND job = of_job
    UNION ALL
    SELECT * FROM job_run_facts_counted WHERE from_runs AND job = of_job
    ON CONFLICT (job) DO UPDATE SET
        newest_seq = EXCLUDED.newest_seq, second_seq = EXCLUDED.second_seq,
        third_seq = EXCLUDED.third_seq, unskipped_seq = EXCLUDED.unskipped_seq,
        last_seq = EXCLUDED.last_seq, last_outcome = EXCLUDED.last_outcome;
$$;

-- A change of the job's facts (a new run's seq as newest, 0 for none): applied to its row
-- if no other writer holds the job (with any changes others left folded in), else added to
-- the changes. Applying is the fold of one change: the three newest of the row's and the
-- new run's seqs, the greater seq not skipped, the greater last counted.
CREATE FUNCTION job_run_facts_add(of_job text, newest bigint, unskipped bigint,
                                  counted bigint, counted_outcome text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('job_run_facts'), hashtext(of_job)) THEN
        INSERT INTO job_run_facts_changes
            (job, newest_seq, unskipped_seq, last_seq, last_outcome)
        VALUES (of_job, newest, unskipped, counted, counted_outcome);
        RETURN;
    END IF;
    INSERT INTO job_run_facts AS f (job, newest_seq, unskipped_seq, last_seq, last_outcome)
    VALUES (of_job, newest, unskipped, counted, counted_outcome)
    ON CONFLICT (job) DO UPDATE SET
        newest_seq = GREATEST(f.newest_seq, newest),
        second_seq = CASE WHEN newest > f.newest_seq THEN f.newest_seq
                          WHEN newest > f.second_seq THEN newest ELSE f.second_seq END,
        third_seq = CASE WHEN newest > f.second_seq THEN f.second_seq
                         WHEN newest > f.third_seq THEN newest ELSE f.third_seq END,
        unskipped_seq = GREATEST(f.unskipped_seq, unskipped),
        last_outcome = CASE WHEN counted > f.last_seq THEN counted_outcome
                            ELSE f.last_outcome END,
        last_seq = GREATEST(f.last_seq, counted);
    IF EXISTS (SELECT 1 FROM job_run_facts_changes AS c WHERE c.job = of_job) THEN
        PERFORM job_run_facts_put(of_job, false);
    END IF;
END
$$;

-- The job's facts counted again from its runs, once no other writer holds the job.
CREATE FUNCTION job_run_facts_recount(of_job text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('job_run_facts'), hashtext(of_job));
    PERFORM job_run_facts_put(of_job, true);
    DELETE FROM job_run_facts AS f WHERE f.job = of_job
        AND NOT EXISTS (SELECT 1 FROM runs AS r WHERE r.job = of_job);
END
$$;

-- A new run: one of the newest, and the newest not skipped or the last counted if it is
-- one. A run ended (or changed state or outcome): the newest not skipped or the last counted
-- if it is one now; counted again from runs if it may have held one it no longer qualifies
-- for (it is skipped now, or was counted and is not, or not with that outcome).
CREATE FUNCTION job_run_facts_written() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    counted boolean := NEW.state = 'ended' AND NEW.outcome IS DISTINCT FROM 'skipped';
BEGIN
    IF TG_OP = 'UPDATE' AND (
        (OLD.outcome IS DISTINCT FROM 'skipped' AND NEW.outcome IS NOT DISTINCT FROM 'skipped')
        OR (OLD.state = 'ended' AND OLD.outcome IS DISTINCT FROM 'skipped'
            AND (NOT counted OR OLD.outcome IS DISTINCT FROM NEW.outcome))) THEN
        PERFORM job_run_facts_recount(NEW.job);
    ELSE
        PERFORM job_run_facts_add(
            NEW.job, CASE WHEN TG_OP = 'INSERT' THEN NEW.seq ELSE 0 END,
            CASE WHEN NEW.outcome IS DISTINCT FROM 'skipped' THEN NEW.seq ELSE 0 END,
            CASE WHEN counted THEN NEW.seq ELSE 0 END, CASE WHEN counted THEN NEW.outcome END);
    END IF;
    RETURN NULL;
END
$$;

-- A run moved to another job, or deleted: the jobs' facts counted again from runs.
CREATE FUNCTION job_run_facts_taken() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM job_run_facts_recount(OLD.job);
    IF TG_OP = 'UPDATE' THEN
        PERFORM job_run_facts_recount(NEW.job);
    END IF;
    RETURN NULL;
END
$$;

INSERT INTO job_run_facts SELECT * FROM job_run_facts_counted;

CREATE TRIGGER job_run_facts_inserted AFTER INSERT ON runs
    FOR EACH ROW EXECUTE FUNCTION job_run_facts_written();
CREATE TRIGGER job_run_facts_ended AFTER UPDATE OF state, outcome ON runs
    FOR EACH ROW WHEN (OLD.job = NEW.job AND (OLD.state IS DISTINCT FROM NEW.state
                                              OR OLD.outcome IS DISTINCT FROM NEW.outcome))
    EXECUTE FUNCTION job_run_facts_written();
CREATE TRIGGER job_run_facts_moved AFTER UPDATE OF job ON runs
    FOR EACH ROW WHEN (OLD.job IS DISTINCT FROM NEW.job)
    EXECUTE FUNCTION job_run_facts_taken();
CREATE TRIGGER job_run_facts_deleted AFTER DELETE ON runs
    FOR EACH ROW EXECUTE FUNCTION job_run_facts_taken();
