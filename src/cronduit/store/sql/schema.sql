-- The current schema, whole: what the numbered migrations add up to (a test checks it).
-- Instants are TEXT in one fixed-width UTC form (2026-03-29T01:00:00.000000Z). Every state
-- column holds one of its enum's values (cronduit.core.enums): a CHECK refuses any other
-- (ORs rather than IN: see migrations/0006_state_checks.sql).

-- Every accepted trigger. The unique delivery id makes acceptance idempotent: the same slot,
-- webhook retry or GitHub delivery accepted twice is one event.
CREATE TABLE events (
    seq          INTEGER PRIMARY KEY,
    delivery_id  TEXT NOT NULL UNIQUE,
    job          TEXT NOT NULL,
    kind         TEXT NOT NULL,
    label        TEXT NOT NULL,
    slot         TEXT,
    late         INTEGER NOT NULL DEFAULT 0,
    payload      TEXT NOT NULL DEFAULT '{}',
    operator     TEXT,
    accepted_at  TEXT NOT NULL,
    -- new: accepted, not yet routed; waiting: routed to the job's work, not yet consumed;
    -- consumed: linked to run_id; unmatched: no job takes it (EventState).
    state        TEXT NOT NULL DEFAULT 'new'
                 CHECK (state = 'new' OR state = 'waiting' OR state = 'consumed'
                        OR state = 'unmatched'),
    run_id       TEXT,
    -- the code-host delivery this trigger was derived from, if any
    parent       TEXT REFERENCES deliveries (delivery_id)
);
CREATE INDEX events_by_state ON events (state, seq);
CREATE INDEX events_waiting ON events (job, state, seq);
CREATE INDEX events_by_run ON events (run_id);
CREATE INDEX events_by_parent ON events (parent) WHERE parent IS NOT NULL;

-- Code-host deliveries (GitHub), once per delivery id; each the parent of its triggers.
CREATE TABLE deliveries (
    delivery_id  TEXT PRIMARY KEY,
    source       TEXT NOT NULL,
    event        TEXT NOT NULL,
    label        TEXT NOT NULL,
    facts        TEXT NOT NULL,
    received_at  TEXT NOT NULL,
    triggers     INTEGER NOT NULL
);

-- One durable timer per timed job: the slot it is armed for and when it elapses.
CREATE TABLE timers (
    job          TEXT PRIMARY KEY,
    timing_key   TEXT NOT NULL,
    slot         TEXT NOT NULL,
    slot_name    TEXT NOT NULL,
    due_at       TEXT NOT NULL,
    last_name    TEXT,
    version      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX timers_due ON timers (due_at, job);

-- The slot ledger: every slot's fate. A slot fires once: the primary key says so.
-- A counted row (count > 1) stands for the older missed slots of a long outage, slot..until.
CREATE TABLE slots (
    job          TEXT NOT NULL,
    slot         TEXT NOT NULL,
    name         TEXT NOT NULL,
    fate         TEXT NOT NULL CHECK (fate = 'ran' OR fate = 'skipped' OR fate = 'missed'),
    reason       TEXT NOT NULL,
    event_seq    INTEGER,
    recorded_at  TEXT NOT NULL,
    count        INTEGER NOT NULL DEFAULT 1,
    until_slot   TEXT,
    PRIMARY KEY (job, slot)
);

-- Runs: a job's history. state running (-> backoff -> running)* -> ended (RunState).
CREATE TABLE runs (
    seq              INTEGER PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    job              TEXT NOT NULL,
    trigger_seq      INTEGER,
    kind             TEXT NOT NULL,
    label            TEXT NOT NULL,
    state            TEXT NOT NULL
                     CHECK (state = 'running' OR state = 'backoff' OR state = 'ended'),
    exclusive        INTEGER NOT NULL DEFAULT 1,
    outcome          TEXT,
    reason           TEXT NOT NULL DEFAULT '',
    created_at       TEXT NOT NULL,
    started_at       TEXT,
    finished_at      TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    exit_status      INTEGER,
    inputs           TEXT NOT NULL DEFAULT '{}',
    operator         TEXT,
    late             INTEGER NOT NULL DEFAULT 0,
    deadline_at      TEXT,
    next_attempt_at  TEXT,
    pid              INTEGER,
    pid_start        INTEGER,
    attempt_dir      TEXT,
    cancel_reason    TEXT,
    files_pruned     INTEGER NOT NULL DEFAULT 0,
    node             TEXT,
    -- the durable execution this run is an activation of, if any
    execution_id     TEXT
);
-- A job's runs, newest first; with their state and outcome, so which jobs failed last or
-- keep being skipped is read from the index alone (one search per job).
CREATE INDEX runs_by_job ON runs (job, seq, state, outcome);
CREATE INDEX runs_active ON runs (state);
-- A job's runs in progress, without reading its whole history (asked per routed trigger).
CREATE INDEX runs_active_by_job ON runs (job, seq) WHERE state <> 'ended';
CREATE INDEX runs_in_progress ON runs (seq) WHERE state <> 'ended';
CREATE INDEX runs_unpruned ON runs (job, seq) WHERE state = 'ended' AND files_pruned = 0;
-- At most one run in progress per job where the overlap policy says runs exclude each other.
CREATE UNIQUE INDEX runs_one_exclusive ON runs (job) WHERE exclusive = 1 AND state <> 'ended';
CREATE INDEX runs_by_execution ON runs (execution_id) WHERE execution_id IS NOT NULL;
-- Each job's newest success, one look-up per job however long its history (the metrics'
-- job_last_success gauge, read every few seconds for every job).
CREATE INDEX runs_last_success ON runs (job, finished_at)
    WHERE outcome = 'success' AND finished_at IS NOT NULL;

-- Each job's facts that divergence rests on, kept as its runs change by the triggers below
-- (whatever writes a run), so that which of 10,000 jobs failed last or keep being skipped is
-- read from these rows, not from every job's newest runs. Seqs of runs, 0 for none: the
-- job's three newest runs (SKIPS_IN_A_ROW of them; it keeps being skipped when
-- third_seq > unskipped_seq), its newest run that was not skipped (ended or not), and its
-- last counted run, the newest that ended and was not skipped, with that run's outcome.
-- Seqs rather than a count of skips, so that a run applies alike whatever order runs come
-- in. job_run_facts_counted counts the same facts from runs: what a migration fills the
-- rows from, what a job's row is counted again from when a run that held a fact changes,
-- and what the tests hold the rows to.
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

-- Run-ended events on each job: what `cronduit job wait` and on.after chaining read.
CREATE TABLE run_ends (
    seq          INTEGER PRIMARY KEY,
    job          TEXT NOT NULL,
    run_id       TEXT NOT NULL UNIQUE,
    event        TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    ended_at     TEXT NOT NULL,
    chained      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX run_ends_by_job ON run_ends (job, seq);
-- The chaining step reads only the ends it has not handled: keep that read small forever.
CREATE INDEX run_ends_unchained ON run_ends (seq) WHERE chained = 0;

-- Small facts about the installation: the daemon's heartbeat, the applied config's digest.
CREATE TABLE meta (
    key          TEXT PRIMARY KEY,
    value        TEXT NOT NULL
);

-- Notifications of run outcomes, written in the transaction that ends the run (so a crash
-- loses none) and delivered after it: pending until sent, or failed with the last reason.
CREATE TABLE notifications (
    seq          INTEGER PRIMARY KEY,
    run_id       TEXT NOT NULL,
    notifier     TEXT NOT NULL,
    body         TEXT NOT NULL,
    state        TEXT NOT NULL DEFAULT 'pending'
                 CHECK (state = 'pending' OR state = 'sent' OR state = 'failed'),
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_at      TEXT NOT NULL,
    error        TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX notifications_due ON notifications (next_at) WHERE state = 'pending';
CREATE INDEX notifications_by_run ON notifications (run_id);
CREATE INDEX notifications_failed ON notifications (updated_at) WHERE state = 'failed';

-- Pauses (cronduit job pause / resume), kept as history: a row is active until resumed_at is
-- set. The engine reads a resume's instant so that slots held by the pause are never made up,
-- even when the daemon was down across the resume.
CREATE TABLE pauses (
    seq          INTEGER PRIMARY KEY,
    job          TEXT NOT NULL,
    reason       TEXT NOT NULL,
    operator     TEXT NOT NULL,
    paused_at    TEXT NOT NULL,
    until        TEXT,
    resumed_at   TEXT,
    resumed_by   TEXT
);
-- At most one active pause per job: pausing a paused job is refused by the database too.
CREATE UNIQUE INDEX pauses_one_active ON pauses (job) WHERE resumed_at IS NULL;
CREATE INDEX pauses_by_resume ON pauses (resumed_at);

-- The audit log, newest last: pauses, resumes, manual runs, applies. Append-only: the store
-- has no statement that changes or deletes a row. detail is JSON, never a secret's value.
CREATE TABLE audit (
    seq          INTEGER PRIMARY KEY,
    at           TEXT NOT NULL,
    operator     TEXT NOT NULL,
    action       TEXT NOT NULL,
    job          TEXT,
    detail       TEXT NOT NULL DEFAULT '{}'
);

-- Log tails kept with their runs (a state shared by many hosts: cronduit.core.log_tails): the
-- last bytes of each run's log, one row per run, replaced at each attempt's end, deleted when
-- retention prunes the run's files. tail is raw bytes; size is how many bytes the log held,
-- cut how many max_log had cut out of it. A daemon on SQLite writes no rows here: its logs
-- are on its own host.
CREATE TABLE run_logs (
    run_id       TEXT PRIMARY KEY,
    attempt      INTEGER NOT NULL,
    tail         BLOB NOT NULL,
    size         INTEGER NOT NULL,
    cut          INTEGER NOT NULL DEFAULT 0,
    stored_at    TEXT NOT NULL
);

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
