-- States are enums (cronduit.core.enums): the database itself now refuses any other value,
-- so a typo in code or a hand-edited row cannot leave an event, a run, a slot or a
-- notification in a state nothing reads. SQLite adds a CHECK constraint only by rebuilding
-- the table: create it anew, copy every row, drop the old one, rename, and create its
-- indexes again. The whole migration commits with its version, or not at all.
-- Each CHECK is a chain of ORs, not an IN list: SQLite builds a temporary table for an IN list
-- of more than two values every time it checks a row (1.5 us a row: the event and ledger
-- inserts of a firing took 60 % longer); the ORs cost nothing measurable.

-- events.state: EventState
CREATE TABLE events_checked (
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
    state        TEXT NOT NULL DEFAULT 'new'
                 CHECK (state = 'new' OR state = 'waiting' OR state = 'consumed'
                        OR state = 'unmatched'),
    run_id       TEXT,
    parent       TEXT REFERENCES deliveries (delivery_id)
);
INSERT INTO events_checked (seq, delivery_id, job, kind, label, slot, late, payload, operator,
                            accepted_at, state, run_id, parent)
SELECT seq, delivery_id, job, kind, label, slot, late, payload, operator, accepted_at, state,
       run_id, parent
FROM events;
DROP TABLE events;
ALTER TABLE events_checked RENAME TO events;
CREATE INDEX events_by_state ON events (state, seq);
CREATE INDEX events_waiting ON events (job, state, seq);
CREATE INDEX events_by_run ON events (run_id);
CREATE INDEX events_by_parent ON events (parent) WHERE parent IS NOT NULL;

-- slots.fate: SlotFate
CREATE TABLE slots_checked (
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
INSERT INTO slots_checked (job, slot, name, fate, reason, event_seq, recorded_at, count,
                           until_slot)
SELECT job, slot, name, fate, reason, event_seq, recorded_at, count, until_slot
FROM slots;
DROP TABLE slots;
ALTER TABLE slots_checked RENAME TO slots;

-- runs.state: RunState
CREATE TABLE runs_checked (
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
    files_pruned     INTEGER NOT NULL DEFAULT 0
);
INSERT INTO runs_checked (seq, id, job, trigger_seq, kind, label, state, exclusive, outcome,
    reason, created_at, started_at, finished_at, attempts, exit_status, inputs, operator, late,
    deadline_at, next_attempt_at, pid, pid_start, attempt_dir, cancel_reason, files_pruned)
SELECT seq, id, job, trigger_seq, kind, label, state, exclusive, outcome, reason, created_at,
    started_at, finished_at, attempts, exit_status, inputs, operator, late, deadline_at,
    next_attempt_at, pid, pid_start, attempt_dir, cancel_reason, files_pruned
FROM runs;
DROP TABLE runs;
ALTER TABLE runs_checked RENAME TO runs;
CREATE INDEX runs_by_job ON runs (job, seq);
CREATE INDEX runs_active ON runs (state);
CREATE INDEX runs_active_by_job ON runs (job, seq) WHERE state <> 'ended';
CREATE INDEX runs_in_progress ON runs (seq) WHERE state <> 'ended';
CREATE INDEX runs_unpruned ON runs (job, seq) WHERE state = 'ended' AND files_pruned = 0;
CREATE UNIQUE INDEX runs_one_exclusive ON runs (job) WHERE exclusive = 1 AND state <> 'ended';

-- notifications.state: NotificationState
CREATE TABLE notifications_checked (
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
INSERT INTO notifications_checked (seq, run_id, notifier, body, state, attempts, next_at,
                                   error, created_at, updated_at)
SELECT seq, run_id, notifier, body, state, attempts, next_at, error, created_at, updated_at
FROM notifications;
DROP TABLE notifications;
ALTER TABLE notifications_checked RENAME TO notifications;
CREATE INDEX notifications_due ON notifications (next_at) WHERE state = 'pending';
CREATE INDEX notifications_by_run ON notifications (run_id);
CREATE INDEX notifications_failed ON notifications (updated_at) WHERE state = 'failed';
