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
-- The audit log: append-only (the store has no statement that changes or deletes a row).
CREATE TABLE audit (
    seq          INTEGER PRIMARY KEY,
    at           TEXT NOT NULL,
    operator     TEXT NOT NULL,
    action       TEXT NOT NULL,
    job          TEXT,
    detail       TEXT NOT NULL DEFAULT '{}'
);
