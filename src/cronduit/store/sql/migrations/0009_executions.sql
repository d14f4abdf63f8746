-- Durable multi-step executions (SPEC §8): each execution, its steps' states and saved
-- outputs, and the append-only history of every step attempt; and on each run, the execution
-- it is an activation of. New tables and a new column only: no row of an older state changes.
-- ORs rather than IN lists in the CHECKs: see 0006_state_checks.sql.
ALTER TABLE runs ADD COLUMN execution_id TEXT;
CREATE INDEX runs_by_execution ON runs (execution_id) WHERE execution_id IS NOT NULL;

-- Durable multi-step executions (SPEC §8): one walk of a job's steps over one or more
-- activations (runs), resumable where it failed: running while an activation walks its
-- steps, then succeeded, failed (resumable) or abandoned (ExecutionState). Deleted by
-- retention only, once expires_at has passed and it is not running, with its steps and
-- step attempts.
CREATE TABLE executions (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    job          TEXT NOT NULL,
    -- the stable hash of the job's steps when it began: a resume is refused once it differs
    definition   TEXT NOT NULL,
    inputs       TEXT NOT NULL DEFAULT '{}',
    state        TEXT NOT NULL
                 CHECK (state = 'running' OR state = 'succeeded' OR state = 'failed'
                        OR state = 'abandoned'),
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    activations  INTEGER NOT NULL DEFAULT 1 CHECK (activations >= 1),
    -- the newest activation's run, and the step whose failure ended it
    run_id       TEXT,
    failed_step  TEXT
);
CREATE INDEX executions_by_job ON executions (job, seq);
-- What retention may delete, soonest expired first; a running execution never.
CREATE INDEX executions_expiring ON executions (expires_at) WHERE state <> 'running';

-- Each execution's steps, keyed by the step's declared id (its saved outputs stay with the
-- id, wherever the step moves); position is its place in the job's steps, 0 for the first.
-- state pending -> running -> done, or failed (a resume runs it again) (StepState).
CREATE TABLE execution_steps (
    execution_id TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    step_id      TEXT NOT NULL,
    position     INTEGER NOT NULL,
    state        TEXT NOT NULL DEFAULT 'pending'
                 CHECK (state = 'pending' OR state = 'running' OR state = 'done'
                        OR state = 'failed'),
    -- the validated outputs as a JSON object's text, saved with the step's success
    outputs      TEXT,
    attempts     INTEGER NOT NULL DEFAULT 0,
    done_at      TEXT,
    run_id       TEXT,
    PRIMARY KEY (execution_id, step_id),
    UNIQUE (execution_id, position)
);

-- Every attempt of every step, append-only: attempt `attempt` of run run_id (its log and
-- files are that attempt's), inserted as it starts and ended once. outcome is null until then.
CREATE TABLE step_attempts (
    seq          INTEGER PRIMARY KEY,
    execution_id TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    step_id      TEXT NOT NULL,
    -- CRONDUIT_ATTEMPT_ID: fresh for every attempt
    attempt_id   TEXT NOT NULL UNIQUE,
    run_id       TEXT NOT NULL,
    attempt      INTEGER NOT NULL,
    started_at   TEXT NOT NULL,
    ended_at     TEXT,
    exit_status  INTEGER,
    outcome      TEXT
                 CHECK (outcome IS NULL OR outcome = 'success' OR outcome = 'failure'
                        OR outcome = 'timeout' OR outcome = 'cancelled'),
    reason       TEXT NOT NULL DEFAULT '',
    UNIQUE (run_id, attempt)
);
CREATE INDEX step_attempts_by_execution ON step_attempts (execution_id, seq);
